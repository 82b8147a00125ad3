package main

// Exactly-once consume-transform-produce through franz-go's
// GroupTransactSession, as its users run it: members of one group read
// etl-in read_committed, copy each record to etl-out and commit their
// input offsets in the same transaction. Whatever is killed meanwhile (a
// member, the single node, the transaction coordinator's broker), etl-out
// read read_committed holds every input record exactly once.
//
// A member runs in this test binary: in-process (runETLMember) or, to be
// SIGKILLed, as a child process of it (TestMain runs runETLMemberChild
// when etlMemberEnv is set).

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

const (
	etlIn        = "etl-in"
	etlOut       = "etl-out"
	etlGroup     = "etl"
	etlMemberEnv = "SLUICE_TEST_ETL_MEMBER" // "brokers,transactional id" for a child member
)

// runETLMember copies etl-in to etl-out in transactions until ctx ends.
// Each record keeps its key and value; a poll's records are one
// transaction. copied counts the records of committed transactions.
//
// A session whose producer was fenced is closed and a new one started
// with the same transactional id, as franz-go's users must (a fenced
// producer is fatal to its client). This happens, as with Kafka, when an
// EndTxn never reached a coordinator that then died: franz-go heals the
// unconfirmed end with InitProducerId at its epoch (KIP-360), the new
// coordinator fences that epoch to abort the transaction still ongoing
// and answers CONCURRENT_TRANSACTIONS, and the retry at the fenced epoch
// is PRODUCER_FENCED (Kafka's prepareFenceProducerEpoch keeps no last
// epoch). It happens too when franz-go (v1.22.3) stores a transient
// error as its producer id's, fatal to its client: InitProducerId sent to
// a coordinator that died and left the metadata ("unknown broker") is
// neither a broker code nor a dial error to it. Exactly-once holds across
// the restart: the input offsets are committed only inside transactions.
func runETLMember(ctx context.Context, brokers []string, txnID string, copied func(int), logf func(string, ...any)) error {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	for restarts := 0; ; restarts++ {
		err := runETLSession(ctx, brokers, txnID, copied, logf)
		if !errors.Is(err, kerr.ProducerFenced) && !errors.Is(err, errProducerIDFatal) || restarts == 5 {
			return err
		}
		logf("%s: a new session after: %v", txnID, err)
	}
}

// errProducerIDFatal marks an error of Begin: franz-go's producer id has
// an error it calls fatal to the client.
var errProducerIDFatal = errors.New("the producer id's error is fatal to the client")

// runETLSession is one session of runETLMember.
func runETLSession(ctx context.Context, brokers []string, txnID string, copied func(int), logf func(string, ...any)) error {
	s, err := kgo.NewGroupTransactSession(
		kgo.SeedBrokers(brokers...),
		kgo.TransactionalID(txnID),
		kgo.TransactionTimeout(10*time.Second),
		kgo.ConsumerGroup(etlGroup),
		kgo.ConsumeTopics(etlIn),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.SessionTimeout(6*time.Second),
		kgo.HeartbeatInterval(500*time.Millisecond),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(0),
	)
	if err != nil {
		return err
	}
	defer s.Close()
	for ctx.Err() == nil {
		fs := s.PollRecords(ctx, 2000)
		if fs.IsClientClosed() {
			return nil
		}
		fs.EachError(func(topic string, p int32, err error) { logf("%s: fetch %s-%d: %v", txnID, topic, p, err) })
		if err := s.Begin(); err != nil {
			return fmt.Errorf("begin: %w: %w", errProducerIDFatal, err)
		}
		var out []*kgo.Record
		fs.EachRecord(func(r *kgo.Record) {
			out = append(out, &kgo.Record{Topic: etlOut, Partition: r.Partition, Key: r.Key, Value: r.Value})
		})
		var wg sync.WaitGroup
		for _, r := range out {
			wg.Add(1)
			s.Produce(ctx, r, func(*kgo.Record, error) { wg.Done() }) // a failure aborts the transaction at End
		}
		// A record already sent to a broker that is then killed can wait
		// for it (franz-go keeps a transactional batch in flight until the
		// broker answers or the client closes): once ctx ends, stop
		// waiting; closing the session fails what is left.
		produced := make(chan struct{})
		go func() { wg.Wait(); close(produced) }()
		select {
		case <-produced:
		case <-ctx.Done():
			return nil
		}
		committed, err := s.End(ctx, kgo.TryCommit)
		if err != nil && ctx.Err() == nil {
			logf("%s: end: %v", txnID, err)
			// The transaction did not commit. An End that failed before
			// reaching the coordinator (its broker killed, say) leaves it
			// open in the client: abort it, retrying until the
			// coordinator answers (franz-go backs off between tries;
			// ending a transaction already ended is a no-op), then go on.
			for try := 0; err != nil && ctx.Err() == nil; try++ {
				if try == 20 {
					return fmt.Errorf("abort after a failed end: %w", err)
				}
				if _, err = s.End(ctx, kgo.TryAbort); err != nil {
					logf("%s: abort: %v", txnID, err)
				}
			}
			continue
		}
		if committed && copied != nil {
			copied(len(out))
		}
	}
	return nil
}

// runETLMemberChild is a child member's main: it copies until killed.
func runETLMemberChild(spec string) int {
	brokers, txnID, ok := strings.Cut(spec, ",")
	if !ok {
		fmt.Fprintln(os.Stderr, "bad", etlMemberEnv, spec)
		return 2
	}
	if err := runETLMember(context.Background(), strings.Split(brokers, ";"), txnID, nil,
		func(f string, a ...any) { fmt.Fprintf(os.Stderr, time.Now().Format("15:04:05.000 ")+f+"\n", a...) }); err != nil {
		fmt.Fprintln(os.Stderr, "member:", err)
		return 1
	}
	return 0
}

// startETLChild starts a member as a child process.
func startETLChild(t *testing.T, brokers []string, txnID, logPath string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), etlMemberEnv+"="+strings.Join(brokers, ";")+","+txnID)
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait(); f.Close() })
	return cmd
}

// fillETLInput creates etl-in and etl-out (partitions each, replicas
// copies) and writes n records to etl-in, values "r0000000" on, keys the
// same, round robin over the partitions.
func fillETLInput(t *testing.T, ctx context.Context, brokers []string, partitions int32, replicas int16, n int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
		kgo.ProducerBatchMaxBytes(1<<20), kgo.MaxBufferedRecords(20000))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	for _, topic := range []string{etlIn, etlOut} {
		if _, err := adm.CreateTopic(ctx, partitions, replicas, nil, topic); err != nil {
			t.Fatalf("create %s: %v", topic, err)
		}
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for i := range n {
		v := []byte(fmt.Sprintf("r%07d", i))
		wg.Add(1)
		cl.Produce(ctx, &kgo.Record{Topic: etlIn, Key: v, Value: v}, func(_ *kgo.Record, err error) {
			if err != nil {
				mu.Lock()
				firstErr = errors.Join(firstErr, err)
				mu.Unlock()
			}
			wg.Done()
		})
	}
	wg.Wait()
	if firstErr != nil {
		t.Fatalf("filling %s: %v", etlIn, firstErr)
	}
}

// readCommitted reads topic from the start, read_committed, and returns
// the values with the number of times each was read. It first appends a
// non-transactional end record to each partition and reads until it has
// seen all of them: they are stable once every transaction before them
// has ended, so everything committed before is read by then.
func readCommitted(t *testing.T, ctx context.Context, brokers []string, topic string, partitions int32) map[string]int {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	left := map[string]bool{}
	for p := range partitions {
		v := fmt.Sprintf("end-%d", p)
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: p, Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("end record of %s-%d: %v", topic, p, err)
		}
		left[v] = true
	}
	seen := map[string]int{}
	for len(left) > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading %s read_committed: %v; end records not read: %v", topic, ctx.Err(), left)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Logf("fetch %s-%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if v := string(r.Value); strings.HasPrefix(v, "end-") {
				delete(left, v)
			} else {
				seen[v]++
			}
		})
	}
	return seen
}

// checkExactlyOnce fails unless out holds r0000000 .. r(n-1) once each.
func checkExactlyOnce(t *testing.T, out map[string]int, n int) {
	t.Helper()
	missing, dup := 0, 0
	var examples []string
	for i := range n {
		v := fmt.Sprintf("r%07d", i)
		switch c := out[v]; {
		case c == 0:
			missing++
			if len(examples) < 5 {
				examples = append(examples, v+" missing")
			}
		case c > 1:
			dup++
			if len(examples) < 5 {
				examples = append(examples, fmt.Sprintf("%s %d times", v, c))
			}
		}
	}
	extra := len(out) - (n - missing)
	if missing > 0 || dup > 0 || extra > 0 {
		t.Fatalf("%s read_committed: %d of %d input records missing, %d duplicated, %d unknown values (%v)", etlOut, missing, n, dup, extra, examples)
	}
}

// awaitCopied waits until copied() reaches n.
func awaitCopied(t *testing.T, ctx context.Context, what string, copied func() int, n int) {
	t.Helper()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for copied() < n {
		if t.Failed() {
			t.FailNow()
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: only %d records copied, want %d", what, copied(), n)
		case <-tick.C:
		}
	}
}

// countCommitted is the group's committed progress: the sum of its
// committed offsets of etl-in, which reaches the input's size once every
// record is copied (etl-in has no transactions, so offsets are counts).
func countCommitted(ctx context.Context, brokers []string) (int, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	os, err := adm.FetchOffsets(ctx, etlGroup)
	if err != nil {
		return 0, err
	}
	n := 0
	var errs error
	os.Each(func(o kadm.OffsetResponse) {
		switch {
		case o.Topic != etlIn:
		case o.Err != nil:
			errs = errors.Join(errs, fmt.Errorf("%s-%d: %w", o.Topic, o.Partition, o.Err))
		default:
			n += int(o.At)
		}
	})
	if errs != nil {
		return n, errs
	}
	return n, nil
}

// The test: 100,000 records copied by two members, one of which is
// SIGKILLed mid-run and started again; etl-out holds each exactly once.
func TestTxnExactlyOnceMemberKilled(t *testing.T) {
	const n = 100000
	bin := buildSluice(t)
	dir := t.TempDir()
	addr, _ := startBrokerProcess(t, bin, filepath.Join(dir, "data"))
	brokers := []string{addr}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	fillETLInput(t, ctx, brokers, 4, 1, n)

	victim := startETLChild(t, brokers, "etl-victim", filepath.Join(dir, "victim-1.log"))
	var mu sync.Mutex
	copiedByOther := 0
	mctx, mcancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- runETLMember(mctx, brokers, "etl-survivor", func(k int) { mu.Lock(); copiedByOther += k; mu.Unlock() }, t.Logf)
	}()
	committedOffsets := func() int {
		c, err := countCommitted(ctx, brokers)
		if err != nil {
			return 0
		}
		return c
	}
	awaitCopied(t, ctx, "before the kill", committedOffsets, n/3)
	victim.Process.Signal(syscall.SIGKILL) // mid-transaction, most likely
	victim.Wait()
	startETLChild(t, brokers, "etl-victim", filepath.Join(dir, "victim-2.log"))
	awaitCopied(t, ctx, "after the kill", committedOffsets, n)
	mcancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	t.Logf("the in-process member copied %d records", copiedByOther)
	mu.Unlock()
	checkExactlyOnce(t, readCommitted(t, ctx, brokers, etlOut, 4), n)
}

// runMember runs runETLMember in a goroutine; the returned stop cancels
// it and returns its error. A member that stops by itself fails the test,
// unless doomed was called first (its only broker is about to be killed).
func runMember(t *testing.T, ctx context.Context, brokers []string, txnID string) (stop func() error, doomed func()) {
	mctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	var expectFailure atomic.Bool
	go func() {
		err := runETLMember(mctx, brokers, txnID, nil, t.Logf)
		if err != nil && mctx.Err() == nil && !expectFailure.Load() {
			t.Errorf("member %s stopped: %v", txnID, err) // awaitCopied stops waiting
		}
		done <- err
	}()
	return func() error { cancel(); return <-done }, func() { expectFailure.Store(true) }
}

// progress is countCommitted, 0 while it cannot be read (the error is
// logged when it changes).
func progress(t *testing.T, ctx context.Context, brokers []string) func() int {
	last := ""
	return func() int {
		c, err := countCommitted(ctx, brokers)
		if err != nil {
			if err.Error() != last && ctx.Err() == nil {
				t.Logf("the group's committed offsets: %v", err)
			}
			last = err.Error()
			return 0
		}
		return c
	}
}

// The single node SIGKILLed twice while a member copies: each transaction
// in flight ends committed or aborted with its input offsets, so after the
// restarts etl-out holds every input record exactly once.
func TestTxnBrokerKilledMidTransaction(t *testing.T) {
	const n = 20000
	bin := buildSluice(t)
	data := filepath.Join(t.TempDir(), "data")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for round := range 3 {
		addr, cmd := startBrokerProcess(t, bin, data)
		brokers := []string{addr}
		if round == 0 {
			fillETLInput(t, ctx, brokers, 3, 1, n)
		}
		stop, doomed := runMember(t, ctx, brokers, "etl-crash")
		if round == 2 {
			awaitCopied(t, ctx, "after the restarts", progress(t, ctx, brokers), n)
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			checkExactlyOnce(t, readCommitted(t, ctx, brokers, etlOut, 3), n)
			return
		}
		awaitCopied(t, ctx, fmt.Sprintf("round %d", round), progress(t, ctx, brokers), (round+1)*n/3)
		doomed()
		cmd.Process.Signal(syscall.SIGKILL) // transactions in flight
		cmd.Wait()
		stop()
	}
}

// A cluster of three: the broker coordinating the member's transactions is
// SIGKILLed while it copies. Its __transaction_state partitions move to
// another broker, which loads them and finishes or aborts what was in
// flight; etl-out holds every input record exactly once.
func TestTxnClusterCoordinatorKilled(t *testing.T) {
	const n = 20000
	c := startClusterWith(t, 3, "transaction.state.log.num.partitions=4\n")
	brokers := c.addrs(c.ids()...)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	fillETLInput(t, ctx, brokers, 3, 3, n)
	const txnID = "etl-cluster"
	stop, _ := runMember(t, ctx, brokers, txnID)
	awaitCopied(t, ctx, "before the kill", progress(t, ctx, brokers), n/3)
	coords := kadm.NewClient(c.client()).FindTxnCoordinators(ctx, txnID)
	co, ok := coords[txnID]
	if !ok || co.Err != nil {
		t.Fatalf("the coordinator of %s: %+v", txnID, coords)
	}
	c.kill(co.NodeID) // commits in flight
	live := c.addrs(c.live()...)
	awaitCopied(t, ctx, "after the kill", progress(t, ctx, live), n)
	if now := kadm.NewClient(c.client()).FindTxnCoordinators(ctx, txnID)[txnID]; now.Err != nil || now.NodeID == co.NodeID {
		t.Errorf("the coordinator of %s after broker %d was killed: %+v", txnID, co.NodeID, now)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	c.restart(co.NodeID)
	checkExactlyOnce(t, readCommitted(t, ctx, brokers, etlOut, 3), n)
}
