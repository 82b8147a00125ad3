package fuzz

// FuzzRequest sends a valid request header (a served API key and version, a
// correlation id, a client id, and the header's tag section for flexible
// versions) followed by arbitrary bytes to a real broker over loopback, then
// an ApiVersions request on the same connection. The broker must answer the
// fuzzed request (with a response that decodes at its version) or close
// the connection, never panic (a recovered panic is logged at Error and
// fails the input) or hang, and keep serving a well-behaved client whose
// acknowledged records stay readable.
//
// Two things the broker rightly spends time on are bounded by the harness,
// since it cannot tell them from a hang: a Fetch's MaxWaitMillis is capped
// at 100 ms (the bytes are rewritten in place), and an input that would
// create more than 64 partitions (CreateTopics, Metadata auto-creation) is
// skipped; each partition costs the broker milliseconds of fsyncs and file
// descriptors for good. So is an AlterConfigs or IncrementalAlterConfigs
// that would change the broker's configuration or the health topic's for
// real (not validate_only): a retention.ms or max.message.bytes there would
// fail the health check by design, not by a bug.
//
// The broker is started once per process (each fuzzing worker has its
// own) and stopped in TestMain.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/broker"
	"github.com/sluice-io/sluice/config"
	"github.com/sluice-io/sluice/engine"
)

const (
	hangTimeout = 10 * time.Second // no answer and no close: the broker hangs
	rebalanceMs = 2000             // JoinGroup rebalance timeouts are capped to this
	fetchWaitMs = 100              // fuzzed fetches wait at most this long
	seedTopic   = "fuzz"
	seedTxnID   = "fuzz-txn" // the transactional id of the transaction requests' seeds

	maxCreates          = 64    // partitions a fuzzed request may create
	maxCreatePerRequest = 10000 // Kafka's limit per CreateTopics request
)

// errorLog keeps the broker's Error-level log records: a recovered panic,
// a failed append or read.
type errorLog struct {
	mu   sync.Mutex
	msgs []string
}

func (e *errorLog) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelError }
func (e *errorLog) WithAttrs([]slog.Attr) slog.Handler           { return e }
func (e *errorLog) WithGroup(string) slog.Handler                { return e }
func (e *errorLog) Handle(_ context.Context, r slog.Record) error {
	var sb strings.Builder
	sb.WriteString(r.Message)
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&sb, " %s=%v", a.Key, a.Value)
		return true
	})
	e.mu.Lock()
	e.msgs = append(e.msgs, sb.String())
	e.mu.Unlock()
	return nil
}

func (e *errorLog) take() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	m := e.msgs
	e.msgs = nil
	return m
}

// harness is the broker under test and a well-behaved client of it.
type harness struct {
	b      *broker.Broker
	addr   string
	dir    string
	log    *errorLog
	served chan error // Serve's result

	keys    []kmsg.ApiVersionsResponseApiKey // served, by key
	seedID  [16]byte                         // the seed topic's ID
	health  string                           // the well-behaved client's topic
	mu      sync.Mutex
	steady  net.Conn
	corr    int32
	acked   int64 // records acknowledged on the health topic
	healthN int
}

var (
	setupOnce sync.Once
	h         *harness
	setupErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if h != nil {
		h.b.Close()
		os.RemoveAll(h.dir)
	}
	os.Exit(code)
}

func getHarness(t testing.TB) *harness {
	setupOnce.Do(func() { h, setupErr = newHarness() })
	if setupErr != nil {
		t.Fatal(setupErr)
	}
	return h
}

func newHarness() (*harness, error) {
	removeStaleDirs()
	dir, err := os.MkdirTemp("", fmt.Sprintf("sluice-fuzz-%d-", os.Getpid()))
	if err != nil {
		return nil, err
	}
	hs := &harness{dir: dir, log: &errorLog{}, served: make(chan error, 1), health: fmt.Sprintf("health-%d", os.Getpid())}
	zero := time.Duration(0)
	b, err := broker.New(config.Config{DataDir: dir, Listen: "127.0.0.1:0", Logger: slog.New(hs.log),
		Groups: config.GroupConfig{InitialRebalanceDelay: &zero, MinSessionTimeout: time.Millisecond, MaxSessionTimeout: rebalanceMs * time.Millisecond}})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	hs.b, hs.addr = b, ln.Addr().String()
	go func() { hs.served <- b.Serve(ln) }()
	if hs.steady, err = net.Dial("tcp", hs.addr); err != nil {
		return nil, err
	}

	// The served keys, from the broker's own ApiVersions answer.
	av := kmsg.NewPtrApiVersionsRequest()
	av.ClientSoftwareName, av.ClientSoftwareVersion = "sluice-fuzz", "1"
	resp, err := hs.steadyRoundTrip(av, 3)
	if err != nil {
		return nil, err
	}
	hs.keys = resp.(*kmsg.ApiVersionsResponse).ApiKeys
	if len(hs.keys) == 0 {
		return nil, errors.New("ApiVersions lists no keys")
	}
	// The seed topic and the health topic.
	cr := kmsg.NewPtrCreateTopicsRequest()
	for _, name := range []string{seedTopic, hs.health} {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, 2, 1
		cr.Topics = append(cr.Topics, rt)
	}
	resp, err = hs.steadyRoundTrip(cr, 7)
	if err != nil {
		return nil, err
	}
	for _, st := range resp.(*kmsg.CreateTopicsResponse).Topics {
		if st.ErrorCode != 0 && st.ErrorCode != kerr.TopicAlreadyExists.Code {
			return nil, fmt.Errorf("create %s: %v", st.Topic, kerr.ErrorForCode(st.ErrorCode))
		}
		if st.Topic == seedTopic {
			hs.seedID = st.TopicID
		}
	}
	return hs, nil
}

// removeStaleDirs removes the data directories of fuzzing processes that
// have ended: the fuzzing engine stops its workers without letting
// TestMain clean up.
func removeStaleDirs() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "sluice-fuzz-*-*"))
	for _, d := range dirs {
		var pid int
		if _, err := fmt.Sscanf(filepath.Base(d), "sluice-fuzz-%d-", &pid); err != nil || pid <= 0 {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			os.RemoveAll(d)
		}
	}
}

// steadyRoundTrip sends req at version v on the well-behaved connection.
func (hs *harness) steadyRoundTrip(req kmsg.Request, v int16) (kmsg.Response, error) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	hs.corr++
	req.SetVersion(v)
	hs.steady.SetDeadline(time.Now().Add(hangTimeout))
	if _, err := hs.steady.Write(kmsg.NewRequestFormatter(kmsg.FormatterClientID("steady")).AppendRequest(nil, req, hs.corr)); err != nil {
		return nil, fmt.Errorf("well-behaved client: write %s: %w", kmsg.NameForKey(req.Key()), err)
	}
	frame, err := readFrame(hs.steady)
	if err != nil {
		return nil, fmt.Errorf("well-behaved client: read %s response: %w", kmsg.NameForKey(req.Key()), err)
	}
	resp := req.ResponseKind()
	resp.SetVersion(v)
	if err := decode(frame, hs.corr, resp); err != nil {
		return nil, fmt.Errorf("well-behaved client: %w", err)
	}
	return resp, nil
}

func readFrame(nc net.Conn) ([]byte, error) {
	var sz [4]byte
	if _, err := io.ReadFull(nc, sz[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(sz[:])
	if n > 128<<20 {
		return nil, fmt.Errorf("response frame of %d bytes", n)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(nc, b); err != nil {
		return nil, fmt.Errorf("response frame cut short: %w", err)
	}
	return b, nil
}

// decode checks a response frame's correlation id and decodes its body.
func decode(frame []byte, corr int32, resp kmsg.Response) error {
	if len(frame) < 4 {
		return fmt.Errorf("%d-byte response frame", len(frame))
	}
	if got := int32(binary.BigEndian.Uint32(frame)); got != corr {
		return fmt.Errorf("response correlation id %d, want %d", got, corr)
	}
	body := frame[4:]
	if resp.IsFlexible() && resp.Key() != 18 {
		if len(body) == 0 || body[0] != 0 {
			return fmt.Errorf("%s v%d response header has no empty tag section", kmsg.NameForKey(resp.Key()), resp.GetVersion())
		}
		body = body[1:]
	}
	if err := resp.ReadFrom(body); err != nil {
		return fmt.Errorf("%s v%d response does not decode: %w", kmsg.NameForKey(resp.Key()), resp.GetVersion(), err)
	}
	return nil
}

// normalize maps any key and version onto a served pair; served pairs map
// to themselves.
func (hs *harness) normalize(key, version int16) (int16, int16) {
	i := slices.IndexFunc(hs.keys, func(k kmsg.ApiVersionsResponseApiKey) bool { return k.ApiKey == key })
	if i < 0 {
		i = int(uint16(key)) % len(hs.keys)
	}
	k := hs.keys[i]
	if version < k.MinVersion || version > k.MaxVersion {
		version = k.MinVersion + int16(int(uint16(version))%int(k.MaxVersion-k.MinVersion+1))
	}
	return k.ApiKey, version
}

// requestFrame is a whole request frame: size, header, body.
func requestFrame(key, version int16, corr int32, body []byte) []byte {
	req := kmsg.RequestForKey(key)
	req.SetVersion(version)
	b := make([]byte, 4, 4+14+len(body))
	b = binary.BigEndian.AppendUint16(b, uint16(key))
	b = binary.BigEndian.AppendUint16(b, uint16(version))
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	b = binary.BigEndian.AppendUint16(b, 4)
	b = append(b, "fuzz"...)
	if req.IsFlexible() {
		b = append(b, 0) // no header tags
	}
	b = append(b, body...)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// boundFetchWait caps a Fetch's MaxWaitMillis: the broker rightly parks a
// fetch that long, which a harness cannot tell from a hang.
func boundFetchWait(key, version int16, body []byte) []byte {
	if key != 1 {
		return body
	}
	at := 4 // after ReplicaID (v0-14)
	if version >= 15 {
		at = 0
	}
	if len(body) < at+4 || int32(binary.BigEndian.Uint32(body[at:])) <= fetchWaitMs {
		return body
	}
	body = slices.Clone(body)
	binary.BigEndian.PutUint32(body[at:], fetchWaitMs)
	return body
}

// boundRebalance caps a JoinGroup's rebalance timeout: the broker rightly
// parks a join (and the group's syncs) until every member rejoined or that
// timeout passed, and members of earlier inputs never rejoin.
func boundRebalance(key, version int16, body []byte) []byte {
	if key != 11 {
		return body
	}
	req := kmsg.NewPtrJoinGroupRequest()
	req.SetVersion(version)
	if req.ReadFrom(body) != nil || req.RebalanceTimeoutMillis <= rebalanceMs && version > 0 {
		return body
	}
	req.RebalanceTimeoutMillis = min(req.RebalanceTimeoutMillis, rebalanceMs)
	if version == 0 { // the session timeout is the rebalance timeout
		req.SessionTimeoutMillis = min(req.SessionTimeoutMillis, rebalanceMs)
	}
	return req.AppendTo(nil)
}

func isClosed(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// creates is how many partitions a request may create. Creating one
// rightly takes the broker a few milliseconds (a directory, files, fsyncs)
// and holds file descriptors for good, so a fuzzed request that creates
// many is skipped: it tests resources, not decoding.
func creates(key, version int16, body []byte) int64 {
	switch key {
	case 3: // Metadata, auto-creating with num.partitions (1)
		req := kmsg.NewPtrMetadataRequest()
		req.SetVersion(version)
		if req.ReadFrom(body) != nil || (version >= 4 && !req.AllowAutoTopicCreation) {
			return 0
		}
		return int64(len(req.Topics))
	case 19: // CreateTopics
		req := kmsg.NewPtrCreateTopicsRequest()
		req.SetVersion(version)
		if req.ReadFrom(body) != nil || req.ValidateOnly {
			return 0
		}
		var n int64
		for _, rt := range req.Topics {
			switch {
			case len(rt.ReplicaAssignment) > 0:
				n += int64(len(rt.ReplicaAssignment))
			case rt.NumPartitions == -1:
				n++
			case rt.NumPartitions > 0:
				n += int64(rt.NumPartitions)
			}
		}
		if n > maxCreatePerRequest {
			return 0 // refused whole (POLICY_VIOLATION)
		}
		return n
	}
	return 0
}

// changesHealth reports a config alter that decodes, is not validate_only,
// and names a broker resource or the health topic, or any client quota
// alter that is not validate_only.
func changesHealth(key, version int16, body []byte, health string) bool {
	touches := func(kind kmsg.ConfigResourceType, name string) bool {
		return kind == kmsg.ConfigResourceTypeBroker || kind == kmsg.ConfigResourceTypeTopic && name == health
	}
	switch key {
	case 33:
		req := kmsg.NewPtrAlterConfigsRequest()
		req.SetVersion(version)
		if req.ReadFrom(body) != nil || req.ValidateOnly {
			return false
		}
		return slices.ContainsFunc(req.Resources, func(r kmsg.AlterConfigsRequestResource) bool { return touches(r.ResourceType, r.ResourceName) })
	case 49:
		// A client quota may throttle the health checks' client for as
		// long as it likes.
		req := kmsg.NewPtrAlterClientQuotasRequest()
		req.SetVersion(version)
		return req.ReadFrom(body) == nil && !req.ValidateOnly && len(req.Entries) > 0
	case 44:
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		req.SetVersion(version)
		if req.ReadFrom(body) != nil || req.ValidateOnly {
			return false
		}
		return slices.ContainsFunc(req.Resources, func(r kmsg.IncrementalAlterConfigsRequestResource) bool {
			return touches(r.ResourceType, r.ResourceName)
		})
	}
	return false
}

// try sends one fuzzed request and checks the broker's behaviour.
func (hs *harness) try(t *testing.T, key, version int16, body []byte) {
	key, version = hs.normalize(key, version)
	body = boundFetchWait(key, version, body)
	body = boundRebalance(key, version, body)
	what := fmt.Sprintf("%s v%d with a %d-byte body", kmsg.NameForKey(key), version, len(body))
	n := creates(key, version, body)
	if n > maxCreates {
		t.Skipf("%s may create %d partitions", what, n)
	}
	if changesHealth(key, version, body, hs.health) {
		t.Skipf("%s changes the broker's or the health topic's configuration", what)
	}
	timeout := hangTimeout + time.Duration(n)*100*time.Millisecond

	nc, err := net.Dial("tcp", hs.addr)
	if err != nil {
		t.Fatalf("%s: dial: %v", what, err)
	}
	defer nc.Close()
	const fuzzCorr, followCorr = 7, 8
	// The fuzzed request, then an ApiVersions v0 (no body) on the same
	// connection: its answer shows the fuzzed one was handled.
	out := append(requestFrame(key, version, fuzzCorr, body), requestFrame(18, 0, followCorr, nil)...)
	nc.SetDeadline(time.Now().Add(timeout))
	if _, err := nc.Write(out); err != nil && !isClosed(err) {
		t.Fatalf("%s: write: %v", what, err)
	}
	answered, followed := false, false
	for !followed {
		frame, err := readFrame(nc)
		if isClosed(err) {
			break // closed: allowed, for a request that does not decode
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("%s: the broker neither answered nor closed the connection within %v", what, timeout)
		}
		if err != nil {
			t.Fatalf("%s: read: %v", what, err)
		}
		if len(frame) < 4 {
			t.Fatalf("%s: %d-byte response frame", what, len(frame))
		}
		switch corr := int32(binary.BigEndian.Uint32(frame)); corr {
		case fuzzCorr:
			if answered {
				t.Fatalf("%s: answered twice", what)
			}
			answered = true
			resp := kmsg.ResponseForKey(key)
			resp.SetVersion(version)
			if err := decode(frame, fuzzCorr, resp); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
		case followCorr:
			followed = true
			resp := kmsg.NewPtrApiVersionsResponse()
			if err := decode(frame, followCorr, resp); err != nil || resp.ErrorCode != 0 {
				t.Fatalf("%s: the ApiVersions after it: %v %v", what, err, kerr.ErrorForCode(resp.ErrorCode))
			}
		default:
			t.Fatalf("%s: response with correlation id %d", what, corr)
		}
	}
	switch {
	case answered:
		t.Logf("%s: answered", what)
	case followed:
		t.Logf("%s: not answered (acks=0)", what)
	default:
		t.Logf("%s: connection closed", what)
	}
	if followed && !answered {
		// Only a Produce with acks=0 goes unanswered.
		req := kmsg.NewPtrProduceRequest()
		req.SetVersion(version)
		if key != 0 || req.ReadFrom(body) != nil || req.Acks != 0 {
			t.Fatalf("%s: not answered, yet the connection went on", what)
		}
	}
	hs.check(t, what)
}

// check makes sure the broker still serves a well-behaved client, logged
// no error, and lost no acknowledged record.
func (hs *harness) check(t *testing.T, what string) {
	select {
	case err := <-hs.served:
		hs.served <- err
		t.Fatalf("after %s: the broker stopped serving: %v", what, err)
	default:
	}
	if errs := hs.log.take(); len(errs) > 0 {
		t.Fatalf("after %s: the broker logged errors:\n%s", what, strings.Join(errs, "\n"))
	}
	hs.healthN++
	value := fmt.Sprintf("health-%d", hs.acked+1) // the record at offset o is health-(o+1)
	var bb engine.BatchBuilder
	bb.Add(engine.Record{Timestamp: time.Now().UnixMilli(), Value: []byte(value)})
	preq := kmsg.NewPtrProduceRequest()
	preq.Acks, preq.TimeoutMillis = -1, 5000
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic = hs.health
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Records = bb.Build()
	pt.Partitions = append(pt.Partitions, pp)
	preq.Topics = append(preq.Topics, pt)
	resp, err := hs.steadyRoundTrip(preq, 11)
	if err != nil {
		t.Fatalf("after %s: %v", what, err)
	}
	p := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	if p.ErrorCode != 0 || p.BaseOffset != hs.acked {
		t.Fatalf("after %s: well-behaved produce: %v at offset %d, want %d", what, kerr.ErrorForCode(p.ErrorCode), p.BaseOffset, hs.acked)
	}
	hs.acked++
	// Read it back; every so often, read back everything acknowledged.
	from := hs.acked - 1
	if hs.healthN%128 == 0 {
		from = 0
	}
	freq := kmsg.NewPtrFetchRequest()
	freq.ReplicaID, freq.MaxBytes, freq.SessionEpoch = -1, 64<<20, -1
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = hs.health
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.FetchOffset, fp.PartitionMaxBytes, fp.CurrentLeaderEpoch, fp.LogStartOffset = from, 64<<20, -1, -1
	ft.Partitions = append(ft.Partitions, fp)
	freq.Topics = append(freq.Topics, ft)
	fresp, err := hs.steadyRoundTrip(freq, 12)
	if err != nil {
		t.Fatalf("after %s: %v", what, err)
	}
	fpart := fresp.(*kmsg.FetchResponse).Topics[0].Partitions[0]
	it := engine.NewRecordIterator(fpart.RecordBatches)
	next := from
	for it.Next() {
		r := it.Record()
		if r.Offset != next || string(r.Value) != fmt.Sprintf("health-%d", next+1) {
			t.Fatalf("after %s: acknowledged record at offset %d is %q at %d", what, next, r.Value, r.Offset)
		}
		next++
	}
	if it.Err() != nil || fpart.ErrorCode != 0 || next != hs.acked {
		t.Fatalf("after %s: read back offsets %d to %d of %d (%v, %v)", what, from, next, hs.acked, kerr.ErrorForCode(fpart.ErrorCode), it.Err())
	}
}

// seeds are a valid request for each served key and version, and a few
// mutations of each key's newest.
func (hs *harness) seeds() (out [][3]any) {
	add := func(k, v int16, body []byte) { out = append(out, [3]any{k, v, body}) }
	var bb engine.BatchBuilder
	bb.Add(engine.Record{Timestamp: 1700000000000, Key: []byte("k"), Value: []byte("seed")})
	records := bb.Build()
	for _, k := range hs.keys {
		var newest []byte
		for v := k.MinVersion; v <= k.MaxVersion; v++ {
			req := hs.seedRequest(k.ApiKey, records)
			req.SetVersion(v)
			newest = req.AppendTo(nil)
			add(k.ApiKey, v, newest)
		}
		v := k.MaxVersion
		add(k.ApiKey, v, nil)
		add(k.ApiKey, v, newest[:len(newest)/2])
		flipped := slices.Clone(newest)
		flipped[len(flipped)/2] ^= 0xff
		add(k.ApiKey, v, flipped)
		add(k.ApiKey, v, append(slices.Clone(newest), 0xff, 0xff, 0xff, 0xff))
		big := slices.Clone(newest)
		for i := range min(8, len(big)) {
			big[i] = 0x7f
		}
		add(k.ApiKey, v, big)
	}
	// Requests that change state: an acks=0 produce, a creation, an
	// auto-creation.
	p := hs.seedRequest(0, records).(*kmsg.ProduceRequest)
	p.Acks = 0
	p.SetVersion(11)
	add(0, 11, p.AppendTo(nil))
	c := hs.seedRequest(19, records).(*kmsg.CreateTopicsRequest)
	c.ValidateOnly = false
	c.Topics[0].Topic = "fuzz-made"
	c.SetVersion(7)
	add(19, 7, c.AppendTo(nil))
	// A transactional InitProducerId (its coordinator's topic is made by
	// the FindCoordinator seeds, key type 1).
	ip := hs.seedRequest(22, records).(*kmsg.InitProducerIDRequest)
	ip.TransactionalID = kmsg.StringPtr(seedTxnID)
	ip.SetVersion(5)
	add(22, 5, ip.AppendTo(nil))
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorType, fc.CoordinatorKeys = 1, []string{seedTxnID}
	fc.SetVersion(5)
	add(10, 5, fc.AppendTo(nil))
	m := hs.seedRequest(3, records).(*kmsg.MetadataRequest)
	m.Topics[0].Topic = kmsg.StringPtr("fuzz-auto")
	m.AllowAutoTopicCreation = true
	m.SetVersion(12)
	add(3, 12, m.AppendTo(nil))
	return out
}

func (hs *harness) seedRequest(key int16, records []byte) kmsg.Request {
	switch key {
	case 0:
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = 1, 1000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = seedTopic
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = slices.Clone(records)
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return req
	case 1:
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.SessionEpoch = -1, 50, 1, 1<<20, -1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = seedTopic, hs.seedID
		for p := range int32(2) {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LogStartOffset = p, 1<<20, -1, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		return req
	case 2:
		req := kmsg.NewPtrListOffsetsRequest()
		req.ReplicaID = -1
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = seedTopic
		for _, ts := range []int64{-2, -1} {
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Timestamp, rp.MaxNumOffsets, rp.CurrentLeaderEpoch = ts, 1, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		return req
	case 3:
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(seedTopic)
		req.Topics = append(req.Topics, rt)
		return req
	case 18:
		req := kmsg.NewPtrApiVersionsRequest()
		req.ClientSoftwareName, req.ClientSoftwareVersion = "sluice-fuzz", "1.0"
		return req
	case 19:
		req := kmsg.NewPtrCreateTopicsRequest()
		req.TimeoutMillis, req.ValidateOnly = 1000, true
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "fuzz-created", 2, 1
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = "retention.ms", kmsg.StringPtr("60000")
		rt.Configs = append(rt.Configs, c)
		req.Topics = append(req.Topics, rt)
		return req
	case 22:
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionTimeoutMillis = 60000
		return req
	case 24:
		req := kmsg.NewPtrAddPartitionsToTxnRequest()
		req.TransactionalID = seedTxnID
		rt := kmsg.NewAddPartitionsToTxnRequestTopic()
		rt.Topic, rt.Partitions = seedTopic, []int32{0, 1}
		req.Topics = append(req.Topics, rt)
		tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
		tx.TransactionalID, tx.VerifyOnly = seedTxnID, true
		tt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
		tt.Topic, tt.Partitions = seedTopic, []int32{0}
		tx.Topics = append(tx.Topics, tt)
		req.Transactions = append(req.Transactions, tx)
		return req
	case 25:
		req := kmsg.NewPtrAddOffsetsToTxnRequest()
		req.TransactionalID, req.Group = seedTxnID, "fuzz-group"
		return req
	case 26:
		req := kmsg.NewPtrEndTxnRequest()
		req.TransactionalID, req.Commit = seedTxnID, true
		return req
	case 65:
		req := kmsg.NewPtrDescribeTransactionsRequest()
		req.TransactionalIDs = []string{seedTxnID, "fuzz-unknown"}
		return req
	case 50:
		req := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
		for _, n := range []string{"fuzz-user", "", "fuzz-user"} {
			u := kmsg.NewDescribeUserSCRAMCredentialsRequestUser()
			u.Name = n
			req.Users = append(req.Users, u)
		}
		return req
	case 51:
		req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
		u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
		u.Name, u.Mechanism, u.Iterations, u.Salt, u.SaltedPassword = "fuzz-user", 2, 4096, []byte("salt"), make([]byte, 64)
		req.Upsertions = append(req.Upsertions, u)
		d := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
		d.Name, d.Mechanism = "fuzz-other", 1
		req.Deletions = append(req.Deletions, d)
		return req
	case 66:
		req := kmsg.NewPtrListTransactionsRequest()
		req.StateFilters = []string{"Ongoing", "NoSuchState"}
		return req
	case 32:
		req := kmsg.NewPtrDescribeConfigsRequest()
		req.IncludeSynonyms, req.IncludeDocumentation = true, true
		for _, kind := range []kmsg.ConfigResourceType{kmsg.ConfigResourceTypeTopic, kmsg.ConfigResourceTypeBroker} {
			rr := kmsg.NewDescribeConfigsRequestResource()
			rr.ResourceType, rr.ResourceName = kind, seedTopic
			if kind == kmsg.ConfigResourceTypeBroker {
				rr.ResourceName = "0"
			}
			req.Resources = append(req.Resources, rr)
		}
		return req
	case 33:
		req := kmsg.NewPtrAlterConfigsRequest()
		rr := kmsg.NewAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, seedTopic
		c := kmsg.NewAlterConfigsRequestResourceConfig()
		c.Name, c.Value = "retention.ms", kmsg.StringPtr("3600000")
		rr.Configs = append(rr.Configs, c)
		req.Resources = append(req.Resources, rr)
		return req
	case 48:
		req := kmsg.NewPtrDescribeClientQuotasRequest()
		c := kmsg.NewDescribeClientQuotasRequestComponent()
		c.EntityType, c.MatchType = "user", 2
		req.Components = append(req.Components, c)
		return req
	case 49:
		req := kmsg.NewPtrAlterClientQuotasRequest()
		req.ValidateOnly = true
		e := kmsg.NewAlterClientQuotasRequestEntry()
		ent := kmsg.NewAlterClientQuotasRequestEntryEntity()
		ent.Type, ent.Name = "client-id", kmsg.StringPtr("fuzz")
		e.Entity = append(e.Entity, ent)
		op := kmsg.NewAlterClientQuotasRequestEntryOp()
		op.Key, op.Value = "producer_byte_rate", 1048576
		e.Ops = append(e.Ops, op)
		req.Entries = append(req.Entries, e)
		return req
	case 44:
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		rr := kmsg.NewIncrementalAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, seedTopic
		for i, name := range []string{"segment.bytes", "cleanup.policy"} {
			c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			c.Op, c.Name, c.Value = kmsg.IncrementalAlterConfigOp(2*i), name, kmsg.StringPtr("1048576")
			if i == 1 {
				c.Value = kmsg.StringPtr("delete")
			}
			rr.Configs = append(rr.Configs, c)
		}
		req.Resources = append(req.Resources, rr)
		return req
	}
	return kmsg.RequestForKey(key) // a key served later: its zero request
}

func FuzzRequest(f *testing.F) {
	hs := getHarness(f)
	for _, s := range hs.seeds() {
		f.Add(s[0].(int16), s[1].(int16), s[2].([]byte))
	}
	f.Fuzz(func(t *testing.T, key, version int16, body []byte) {
		hs.try(t, key, version, body)
	})
}

// TestServedKeys: the harness fuzzes what the broker serves.
func TestServedKeys(t *testing.T) {
	hs := getHarness(t)
	var got []string
	for _, k := range hs.keys {
		got = append(got, fmt.Sprintf("%d:%d-%d", k.ApiKey, k.MinVersion, k.MaxVersion))
	}
	if want := []string{"0:3-11", "1:4-17", "2:0-9", "3:0-12", "4:0-7", "5:0-4", "6:0-8", "7:1-3", "8:0-9", "9:0-9", "10:0-5", "11:0-9", "12:0-4", "13:0-5", "14:0-5", "15:0-5", "16:0-5", "17:0-1", "18:0-4", "19:0-7", "20:0-6", "21:0-2", "22:0-5", "23:0-4", "24:0-5", "25:0-4", "26:0-4", "27:0-1", "28:0-3", "29:0-3", "30:0-3", "31:0-3", "32:0-4", "33:0-2", "35:0-4", "36:0-2", "37:0-3", "42:0-2", "43:0-2", "44:0-1", "45:0-0", "46:0-0", "47:0-0", "48:0-1", "49:0-1", "50:0-0", "51:0-0", "56:0-3", "60:0-1", "61:0-0", "65:0-0", "66:0-1"}; !slices.Equal(got, want) {
		t.Errorf("served %v, want %v", got, want)
	}
}
