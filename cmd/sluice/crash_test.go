package main

import (
	"bufio"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// startBrokerProcess runs the broker binary on data, with more flags if
// given, and returns its address and the process.
func startBrokerProcess(t *testing.T, bin, data string, flags ...string) (string, *exec.Cmd) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"broker", "--listen", "127.0.0.1:0", "--data", data}, flags...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	addrc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := listeningRE.FindStringSubmatch(sc.Text()); m != nil {
				addrc <- m[1]
			}
		}
	}()
	select {
	case addr := <-addrc:
		return addr, cmd
	case <-time.After(30 * time.Second):
		t.Fatal("the broker never said where it listens")
	}
	return "", nil
}

// A broker killed (SIGKILL) while clients produce and commit offsets loses
// nothing it acknowledged: after a restart every acknowledged record is at
// its acknowledged offset, and every partition's committed offset is at
// least the last commit acknowledged. Three kills in a row.
func TestBrokerKilledKeepsAcknowledged(t *testing.T) {
	bin := buildSluice(t)
	data := filepath.Join(t.TempDir(), "data")
	acked := map[string]int64{}    // value -> offset, partition in the value
	committed := map[int32]int64{} // partition -> last acknowledged commit
	var next int
	for round := range 3 {
		addr, cmd := startBrokerProcess(t, bin, data)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.AllowAutoTopicCreation(),
			kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RecordRetries(1), kgo.RequestRetries(1), kgo.RecordDeliveryTimeout(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		adm := kadm.NewClient(cl)
		if round == 0 {
			if _, err := adm.CreateTopic(ctx, 3, 1, nil, "crash"); err != nil {
				t.Fatal(err)
			}
		}
		// Check what the previous incarnation acknowledged.
		if round > 0 {
			checkAcknowledged(t, ctx, addr, acked, committed)
		}
		var mu sync.Mutex
		var wg sync.WaitGroup
		stop := make(chan struct{})
		enough := make(chan struct{})
		var once sync.Once
		wg.Add(2)
		go func() { // producer
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				mu.Lock()
				v := fmt.Sprintf("r%d-%d", round, next)
				next++
				mu.Unlock()
				p := int32(i % 3)
				r := &kgo.Record{Topic: "crash", Partition: p, Value: []byte(v)}
				if err := cl.ProduceSync(ctx, r).FirstErr(); err == nil {
					mu.Lock()
					acked[v] = r.Offset
					if len(acked) >= 300*(round+1) {
						once.Do(func() { close(enough) })
					}
					mu.Unlock()
				}
			}
		}()
		go func() { // committer
			defer wg.Done()
			for n := int64(1); ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				p := int32(n % 3)
				var os kadm.Offsets
				os.Add(kadm.Offset{Topic: "crash", Partition: p, At: n, LeaderEpoch: -1})
				if r, err := adm.CommitOffsets(ctx, "g", os); err == nil && r.Error() == nil {
					mu.Lock()
					committed[p] = n
					mu.Unlock()
				}
			}
		}()
		select {
		case <-enough:
		case <-ctx.Done():
			t.Fatal("never produced enough")
		}
		cmd.Process.Signal(syscall.SIGKILL) // with requests in flight
		cmd.Wait()
		close(stop)
		cl.Close() // fails what is in flight: not acknowledged
		wg.Wait()
		cancel()
	}
	if len(acked) < 900 || len(committed) != 3 {
		t.Fatalf("only %d records and commits of %d partitions acknowledged: the check below would prove little", len(acked), len(committed))
	}
	addr, _ := startBrokerProcess(t, bin, data)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	checkAcknowledged(t, ctx, addr, acked, committed)
}

func checkAcknowledged(t *testing.T, ctx context.Context, addr string, acked map[string]int64, committed map[int32]int64) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		"crash": {0: kgo.NewOffset().AtStart(), 1: kgo.NewOffset().AtStart(), 2: kgo.NewOffset().AtStart()},
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ends, err := adm.ListEndOffsets(ctx, "crash")
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	ends.Each(func(o kadm.ListedOffset) { total += o.Offset })
	got := map[string]int64{}
	for int64(len(got)) < total {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records", len(got), total)
		}
		fs.EachRecord(func(r *kgo.Record) { got[string(r.Value)] = r.Offset })
	}
	for v, off := range acked {
		if g, ok := got[v]; !ok || g != off {
			t.Errorf("acknowledged record %s at offset %d: after the restart %v (present %v)", v, off, g, ok)
		}
	}
	offs, err := adm.FetchOffsets(ctx, "g")
	if err != nil {
		t.Fatal(err)
	}
	for p, n := range committed {
		if o, ok := offs.Lookup("crash", p); !ok || o.At < n {
			t.Errorf("partition %d: committed offset %+v after the restart, %d was acknowledged", p, o, n)
		}
	}
}
