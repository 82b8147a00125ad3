package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/engine"
)

// fullDiskEnv names, in a child test binary's environment, the switch
// file of a broker whose disk fills: while the file exists, reserving
// space (fallocate) in its data directory fails with ENOSPC, as on a full
// file system.
const fullDiskEnv = "SLUICE_TEST_FULL_DISK_SWITCH"

// runFullDiskBroker runs `sluice broker` (os.Args[2:]) over a disk that is
// full while the switch file exists.
func runFullDiskBroker(sw string) int {
	var full atomic.Bool
	go func() {
		for {
			_, err := os.Stat(sw)
			full.Store(err == nil)
			time.Sleep(20 * time.Millisecond)
		}
	}()
	return runBrokerOn(os.Args[2:], os.Stdout, os.Stderr, engine.FullDisk{FS: engine.OSFS, Full: &full})
}

// A follower's disk fills while an idempotent acks=all producer writes to
// an RF 3, min.insync.replicas 2 partition: the follower stops taking the
// leader's records and says so (its failed-partitions gauge; the metadata,
// and `sluice topic describe`, list its replica offline), the leader takes
// it out of the ISR and goes on acknowledging with the other follower; the leader is then SIGKILLed and the other follower takes
// over; once the disk has room the follower catches up and rejoins the
// ISR, and every acknowledged record is read back, once.
func TestClusterFollowerDiskFullLosesNothing(t *testing.T) {
	c := newCluster(t, clusterZK(t), 3, "replica.lag.time.max.ms=3000\n")
	sw := filepath.Join(c.dir, "broker-3.disk-full")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c.addBroker(1)
	c.addBroker(2)
	c.addBrokerAs(3, exe, []string{fullDiskEnv + "=" + sw})
	c.waitAgree("every broker registered with one controller", func(m *kmsg.MetadataResponse) error {
		if err := c.wantBrokers(m, 1, 2, 3); err != nil {
			return err
		}
		return c.wantLiveController(m)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*testWait)
	defer cancel()
	const topic = "full"
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	ra.Partition, ra.Replicas = 0, []int32{1, 2, 3} // led by 1; 3 follows
	rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
	two := "2"
	rt.Configs = append(rt.Configs, kmsg.CreateTopicsRequestTopicConfig{Name: "min.insync.replicas", Value: &two})
	req.Topics = append(req.Topics, rt)
	if resp, err := req.RequestWith(ctx, c.client()); err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create: %v %+v", err, resp)
	}
	isr := func(want ...int32) func(m *kmsg.MetadataResponse) error {
		return func(m *kmsg.MetadataResponse) error {
			for _, tp := range m.Topics {
				if *tp.Topic == topic && len(tp.Partitions) == 1 {
					p := tp.Partitions[0]
					got := slices.Sorted(slices.Values(p.ISR))
					if !slices.Equal(got, want) {
						return fmt.Errorf("leader %d ISR %v, want %v", p.Leader, p.ISR, want)
					}
					return nil
				}
			}
			return fmt.Errorf("no %s", topic)
		}
	}
	c.waitAgree("every replica in sync", isr(1, 2, 3))
	// offline3 says whether the metadata lists broker 3's replica offline
	// (a dead broker's are too).
	offline3 := func(want bool) func(m *kmsg.MetadataResponse) error {
		return func(m *kmsg.MetadataResponse) error {
			for _, tp := range m.Topics {
				if *tp.Topic == topic && len(tp.Partitions) == 1 {
					if got := tp.Partitions[0].OfflineReplicas; slices.Contains(got, 3) != want {
						return fmt.Errorf("offline replicas %v", got)
					}
					return nil
				}
			}
			return fmt.Errorf("no %s", topic)
		}
	}

	// The producer runs throughout: 4 KiB records, so that the follower's
	// reserved space runs out within a second of the disk filling.
	prod := c.client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordRetries(1000), kgo.ProducerLinger(0))
	var (
		mu      sync.Mutex
		acked   = map[string]bool{}
		stop    atomic.Bool
		wg      sync.WaitGroup
		pad     = strings.Repeat("x", 4<<10)
		counter atomic.Int64
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; !stop.Load(); i++ {
			v := strconv.Itoa(i)
			if err := prod.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(v + "-" + pad)}).FirstErr(); err == nil {
				mu.Lock()
				acked[v] = true
				mu.Unlock()
				counter.Add(1)
			}
		}
	}()
	ackedPast := func(what string, n int64) {
		t.Helper()
		from := counter.Load()
		poll(t, what, func() error {
			if got := counter.Load() - from; got < n {
				return fmt.Errorf("%d records acknowledged", got)
			}
			return nil
		})
	}
	ackedPast("records acknowledged with every replica in sync", 200)

	// The disk fills: broker 3 fails the partition and leaves the ISR;
	// the producer goes on.
	if err := os.WriteFile(sw, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	poll(t, "broker 3 reports its partition failed", func() error {
		return wantMetricLine(c.brokers[3].metrics, `kafka_server_replicafetchermanager_failedpartitionscount{clientId="Replica"} 1`)
	})
	c.waitAgree("broker 3 out of the ISR", isr(1, 2))
	c.waitAgree("broker 3's replica offline", offline3(true))
	describe := func() string {
		t.Helper()
		out, err := exec.CommandContext(ctx, c.bin, "topic", "describe", topic, "--brokers", strings.Join(c.addrs(c.live()...), ",")).CombinedOutput()
		if err != nil {
			t.Fatalf("topic describe: %v\n%s", err, out)
		}
		return string(out)
	}
	if out := describe(); !strings.Contains(out, "\tIsr: 1,2\tOffline: 3\t") {
		t.Errorf("topic describe does not show broker 3's replica offline:\n%s", out)
	}
	ackedPast("records acknowledged by the ISR without broker 3", 100)

	// The leader dies: broker 2, the only other ISR member, leads.
	c.kill(1)
	c.waitAgree("broker 2 leads", func(m *kmsg.MetadataResponse) error {
		for _, tp := range m.Topics {
			if *tp.Topic == topic && tp.Partitions[0].Leader == 2 {
				return nil
			}
		}
		return fmt.Errorf("not yet")
	})
	// The disk has room again: broker 3 follows broker 2, rejoins the ISR,
	// and acks=all writes (min.insync.replicas 2) are taken again.
	if err := os.Remove(sw); err != nil {
		t.Fatal(err)
	}
	c.waitAgree("broker 3 back in the ISR", isr(2, 3))
	c.waitAgree("broker 3's replica online", offline3(false))
	poll(t, "broker 3 reports no failed partition", func() error {
		return wantMetricLine(c.brokers[3].metrics, `kafka_server_replicafetchermanager_failedpartitionscount{clientId="Replica"} 0`)
	})
	ackedPast("records acknowledged by brokers 2 and 3", 100)
	stop.Store(true)
	wg.Wait()
	if n := len(acked); n < 400 {
		t.Fatalf("only %d records acknowledged", n)
	}

	// Every acknowledged record is read, from the new leader, and once
	// (idempotent producer: its retries are not written twice).
	end, err := kadm.NewClient(c.client()).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	last, _ := end.Lookup(topic, 0)
	cons := c.client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	seen := map[string]int{}
	for read := int64(0); read < last.Offset; {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records: %v", read, last.Offset, ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) {
			v, _, _ := strings.Cut(string(r.Value), "-")
			seen[v]++
			read = r.Offset + 1
		})
	}
	var lost, twice []string
	for v := range acked {
		if seen[v] == 0 {
			lost = append(lost, v)
		}
	}
	for v, n := range seen {
		if n > 1 {
			twice = append(twice, v)
		}
	}
	t.Logf("%d records acknowledged, %d read", len(acked), len(seen))
	if len(lost) > 0 || len(twice) > 0 {
		t.Fatalf("%d acknowledged records lost (%v), %d read twice (%v)", len(lost), lost[:min(len(lost), 10)], len(twice), twice[:min(len(twice), 10)])
	}
}

// wantMetricLine reports whether addr's /metrics has the line want.
func wantMetricLine(addr, want string) error {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if !slices.Contains(strings.Split(string(body), "\n"), want) {
		return fmt.Errorf("no %q in /metrics", want)
	}
	return nil
}
