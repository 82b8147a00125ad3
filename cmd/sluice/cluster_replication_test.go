package main

// Replication between broker processes: replicas byte-identical after a
// large idempotent acks=all run, a killed follower leaving the ISR by the
// lag rule and returning, and a diverged old leader truncating to the new
// leader's epoch boundary. (cluster_failover_test.go has the leader killed
// and both followers down.)

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	zkpath "github.com/sluice-io/sluice/coordinator/zk"
)

// An idempotent acks=all producer writes 200,000 records to an RF 3 topic
// (min.insync.replicas 2) of 3 partitions, so that every broker leads one
// and follows two: every record is acknowledged, a consumer reads each
// exactly once and in order, and the three copies of each partition hold
// the same bytes in their segment files (offsets, epochs, producer ids and
// all).
func TestClusterReplicasByteIdentical(t *testing.T) {
	c := startCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 4*testWait)
	defer cancel()
	const topic, parts, n = "bulk", 3, 200_000
	createReplicated(ctx, t, c, topic, parts)

	prod := c.client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var mu sync.Mutex
	failed, firstErr := 0, error(nil)
	for i := range n {
		r := &kgo.Record{Topic: topic, Partition: int32(i % parts), Value: []byte(strconv.Itoa(i / parts))}
		prod.Produce(ctx, r, func(_ *kgo.Record, err error) {
			if err != nil {
				mu.Lock()
				if failed++; firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}
		})
	}
	if err := prod.Flush(ctx); err != nil { // returns once every callback has
		t.Fatal(err)
	}
	mu.Lock()
	f, ferr := failed, firstErr
	mu.Unlock()
	if f > 0 {
		t.Fatalf("%d of %d records not acknowledged; the first: %v", f, n, ferr)
	}

	cons := c.client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	next := make([]int64, parts) // per partition: the offset, and the value, expected next
	for read := 0; read < n; {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records (next per partition %v): %v", read, n, next, ctx.Err())
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s-%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			want := next[r.Partition]
			if r.Offset != want || string(r.Value) != strconv.FormatInt(want, 10) {
				t.Fatalf("%s-%d: offset %d value %q, want offset %d value %d: not each record once, in order",
					topic, r.Partition, r.Offset, r.Value, want, want)
			}
			next[r.Partition]++
			read++
		})
	}
	ends, err := kadm.NewClient(c.client()).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	for p := range int32(parts) {
		if o, _ := ends.Lookup(topic, p); o.Offset != next[p] {
			t.Errorf("%s-%d: high watermark %d after %d records read: records beyond them", topic, p, o.Offset, next[p])
		}
		l := c.waitLogsEqual(topic, p, c.ids(), wantEnd(next[p]))
		t.Logf("%s-%d: %d records, %d batches, %d bytes in each copy", topic, p, next[p], len(l.batches), len(l.bytes))
	}
}

// A follower SIGKILLed while an acks=all producer runs leaves the ISR by
// the leader's lag rule (replica.lag.time.max.ms, 1 s here), the producer
// goes on, and the follower, restarted, catches up, rejoins the ISR and
// ends with the leader's log, every acknowledged record once.
//
// ZooKeeper's session expiry also takes a dead broker out of every ISR:
// the controller does, when its registration goes. To show that the lag
// rule did it here, the session timeout (4 s, the most ZooKeeper's 200 ms
// tick allows) is above the lag time, and the shrunk ISR must carry two
// marks of the leader's AlterPartition: the leader epoch is unchanged (an
// AlterPartition keeps it; the controller's removal of a dead broker bumps
// it, as Kafka's ZooKeeper controller does), and the killed broker's
// registration still exists when read after the shrunk ISR was. The
// follower killed is not the controller, whose death would leave no one to
// write the shrink until a new controller is elected on its session's
// expiry.
func TestClusterFollowerKilledLeavesAndRejoinsTheISR(t *testing.T) {
	c := startClusterWith(t, 3, "replica.lag.time.max.ms=1000\nzookeeper.session.timeout.ms=4000\n")
	ctx, cancel := context.WithTimeout(context.Background(), 4*testWait)
	defer cancel()
	const topic = "lagging"
	createReplicated(ctx, t, c, topic, 1)
	leader, _ := c.waitISR(topic, 0, c.ids()...)
	ctrl := controllerInZK(t, c)
	victim := int32(-1)
	for _, id := range c.others(leader) {
		if id != ctrl {
			victim = id
			break
		}
	}
	before := c.partitionState(topic, 0)

	prod := startSteadyProducer(ctx, c, topic)
	defer func() { cancel(); prod.halt() }() // on failure
	prod.waitAcked(t, 1000)
	c.kill(victim)
	killed := time.Now()
	poll(t, fmt.Sprintf("broker %d out of the ISR", victim), func() error {
		s := c.partitionState(topic, 0)
		if slices.Contains(s.ISR, victim) {
			return fmt.Errorf("ISR %v", s.ISR)
		}
		if _, st := c.znode(zkpath.BrokerPath(victim)); st == nil {
			t.Fatalf("broker %d's registration expired before the ISR %v was seen without it (%v after the kill): not shown to be the lag rule's doing",
				victim, s.ISR, time.Since(killed))
		}
		if s.LeaderEpoch != before.LeaderEpoch || s.Leader != leader {
			t.Fatalf("the ISR shrank to %v with leader %d epoch %d, before leader %d epoch %d: not the leader's AlterPartition",
				s.ISR, s.Leader, s.LeaderEpoch, leader, before.LeaderEpoch)
		}
		return nil
	})
	t.Logf("broker %d out of the ISR %v after its kill, its registration still there", victim, time.Since(killed))
	prod.waitAcked(t, prod.acked.Load()+1000)

	c.restart(victim)
	c.waitISR(topic, 0, c.ids()...)
	prod.finish(t)
	c.waitLogsEqual(topic, 0, append([]int32{leader}, c.others(leader)...), wantEnd(prod.acked.Load()))
}

// A leader that took records its followers never fetched (acks=1) and then
// died has diverged: the follower elected in its place leads a new epoch
// from its own log end, and the old leader, restarted, truncates its
// unreplicated tail to that epoch's start (the DivergingEpoch of KIP-279's
// fetch), copies the new leader's records and ends byte-identical with the
// others, back in the ISR.
func TestClusterDivergedLeaderTruncatesToTheEpochBoundary(t *testing.T) {
	// The followers, stopped about a second, stay in the ISR and keep their
	// ZooKeeper sessions: the lag time stays at its 30 s default, the
	// session timeout is 4 s. No automatic rebalance: its first check, 5 s
	// after the controller's election, would hand the partition back to the
	// returning old leader (its preferred replica) that the test expects to
	// follow.
	c := startClusterWith(t, 3, "zookeeper.session.timeout.ms=4000\nauto.leader.rebalance.enable=false\n")
	ctx, cancel := context.WithTimeout(context.Background(), 4*testWait)
	defer cancel()
	const topic = "diverge"
	mds := createReplicated(ctx, t, c, topic, 1)
	oldLeader, oldEpoch := c.waitISR(topic, 0, c.ids()...)
	followers := c.others(oldLeader)
	uncompressed := kgo.ProducerBatchCompression(kgo.NoCompression()) // so values can be looked for in the files
	before, diverged, after := valuesOf("before", 100), valuesOf("diverged", 20), valuesOf("after", 100)
	produce := func(cl *kgo.Client, values []string) {
		t.Helper()
		rs := make([]*kgo.Record, len(values))
		for i, v := range values {
			rs[i] = &kgo.Record{Topic: topic, Value: []byte(v)}
		}
		if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatalf("produce %s...: %v", values[0], err)
		}
	}
	produce(c.client(kgo.RequiredAcks(kgo.AllISRAcks()), uncompressed), before)
	c.waitLogsEqual(topic, 0, c.ids(), wantEnd(100))

	for _, id := range followers {
		c.pause(id)
	}
	// A follower's fetch parked at the leader when it stopped (for up to
	// replica.fetch.wait.max.ms) would be answered with the records
	// appended next, and the follower would append them once continued.
	// A consumer's fetch at the high watermark, sent after they stopped
	// and held longer than that, is answered after theirs.
	const followerWait, wait = 500 * time.Millisecond, 750 * time.Millisecond
	sent := time.Now()
	if got := fetchAt(ctx, t, c.brokers[oldLeader].addr, topicIDIn(mds[oldLeader], topic), topic, 0, 100, wait); got != 0 {
		t.Fatalf("a fetch at the high watermark with the followers stopped: %d bytes of records", got)
	}
	if took := time.Since(sent); took < followerWait {
		t.Fatalf("the leader answered a fetch at the high watermark after %v, not holding it for its %v wait", took, wait)
	}
	one := c.client(kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(), uncompressed)
	for i := 0; i < len(diverged); i += 5 {
		produce(one, diverged[i:i+5])
	}
	c.kill(oldLeader)
	for _, id := range followers {
		c.resume(id)
	}
	old, err := c.logOf(oldLeader, topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	if old.end() != 120 || len(old.holding(diverged...)) != len(diverged) {
		t.Fatalf("the killed leader's log ends at %d holding %d of the %d acks=1 records, want 120 and all",
			old.end(), len(old.holding(diverged...)), len(diverged))
	}

	newLeader, newEpoch := c.waitISR(topic, 0, followers...)
	if newEpoch <= oldEpoch {
		t.Fatalf("broker %d leads at epoch %d, not above the old leader's %d", newLeader, newEpoch, oldEpoch)
	}
	produce(c.client(kgo.RequiredAcks(kgo.AllISRAcks()), uncompressed), after)
	c.restart(oldLeader)
	if l, _ := c.waitISR(topic, 0, c.ids()...); l != newLeader {
		t.Fatalf("leader %d after the old leader's return, want %d", l, newLeader)
	}
	final := c.waitLogsEqual(topic, 0, append([]int32{newLeader}, c.others(newLeader)...), wantEnd(200))
	boundary, pos, ok := final.epochStart(oldEpoch)
	if !ok || boundary != 100 {
		t.Fatalf("the first batch of an epoch above %d starts at offset %d (found %v), want 100: the new leader's log end at its election", oldEpoch, boundary, ok)
	}
	if !bytes.Equal(final.bytes[:pos], old.bytes[:pos]) {
		t.Fatalf("the log below the epoch boundary differs from the old leader's before its death")
	}
	if got := final.holding(diverged...); len(got) > 0 {
		t.Errorf("the old leader still holds %d acks=1 records written while it had diverged: %v", len(got), got)
	}
	if got := final.holding(append(before, after...)...); len(got) != len(before)+len(after) {
		t.Errorf("the logs hold %d of the %d acks=all records", len(got), len(before)+len(after))
	}
}

// createReplicated creates topic with partitions partitions, RF 3 and
// min.insync.replicas 2, and waits until every live broker shows each
// partition with all three replicas in its ISR; it returns their Metadata.
func createReplicated(ctx context.Context, t testing.TB, c *testCluster, topic string, partitions int32) map[int32]*kmsg.MetadataResponse {
	t.Helper()
	return createReplicatedRF(ctx, t, c, topic, partitions, 3)
}

// createReplicatedRF is createReplicated with rf replicas a partition.
func createReplicatedRF(ctx context.Context, t testing.TB, c *testCluster, topic string, partitions int32, rf int16) map[int32]*kmsg.MetadataResponse {
	t.Helper()
	two := "2"
	if r, err := kadm.NewClient(c.client()).CreateTopic(ctx, partitions, rf, map[string]*string{"min.insync.replicas": &two}, topic); err != nil || r.Err != nil {
		t.Fatalf("create %s: %v %v", topic, err, r.Err)
	}
	return c.waitAgree(fmt.Sprintf("every replica of %s in sync", topic), func(m *kmsg.MetadataResponse) error {
		if err := c.wantTopic(m, topic, int(partitions), int(rf)); err != nil {
			return err
		}
		for p := range partitions {
			if isr := partitionOf(m, topic, p).ISR; len(isr) != int(rf) {
				return fmt.Errorf("%s-%d: ISR %v", topic, p, isr)
			}
		}
		return nil
	})
}

// waitISR waits until every live broker shows topic-partition with the ISR
// isr (in any order) led by one of them, and returns the leader and its
// epoch.
func (c *testCluster) waitISR(topic string, partition int32, isr ...int32) (leader, epoch int32) {
	c.t.Helper()
	want := slices.Sorted(slices.Values(isr))
	c.waitAgree(fmt.Sprintf("%s-%d has the ISR %v", topic, partition, want), func(m *kmsg.MetadataResponse) error {
		p := partitionOf(m, topic, partition)
		if p == nil {
			return fmt.Errorf("no %s-%d", topic, partition)
		}
		if got := slices.Sorted(slices.Values(p.ISR)); !slices.Equal(got, want) || !slices.Contains(want, p.Leader) {
			return fmt.Errorf("%s-%d: ISR %v, leader %d epoch %d", topic, partition, p.ISR, p.Leader, p.LeaderEpoch)
		}
		if len(m.Brokers) != len(c.live()) {
			return fmt.Errorf("%d brokers, %d live", len(m.Brokers), len(c.live()))
		}
		leader, epoch = p.Leader, p.LeaderEpoch
		return nil
	})
	return leader, epoch
}

// partitionOf finds topic-partition in m, or nil.
func partitionOf(m *kmsg.MetadataResponse, topic string, partition int32) *kmsg.MetadataResponseTopicPartition {
	for i := range m.Topics {
		if tp := &m.Topics[i]; tp.Topic != nil && *tp.Topic == topic {
			for j := range tp.Partitions {
				if tp.Partitions[j].Partition == partition {
					return &tp.Partitions[j]
				}
			}
		}
	}
	return nil
}

// topicIDIn is topic's id in m.
func topicIDIn(m *kmsg.MetadataResponse, topic string) [16]byte {
	for _, tp := range m.Topics {
		if tp.Topic != nil && *tp.Topic == topic {
			return tp.TopicID
		}
	}
	return [16]byte{}
}

// others returns the ids of the brokers other than id, sorted.
func (c *testCluster) others(id int32) []int32 {
	return slices.DeleteFunc(c.ids(), func(o int32) bool { return o == id })
}

// partitionStateZnode is the part of a partition's state znode
// (/brokers/topics/<topic>/partitions/<p>/state, Kafka's JSON) the tests
// read.
type partitionStateZnode struct {
	Leader      int32   `json:"leader"`
	LeaderEpoch int32   `json:"leader_epoch"`
	ISR         []int32 `json:"isr"`
}

// partitionState reads topic-partition's state znode.
func (c *testCluster) partitionState(topic string, partition int32) partitionStateZnode {
	c.t.Helper()
	path := zkpath.PartitionStatePath(topic, partition)
	data, st := c.znode(path)
	if st == nil {
		c.t.Fatalf("%s is missing", path)
	}
	var s partitionStateZnode
	if err := json.Unmarshal(data, &s); err != nil {
		c.t.Fatalf("%s: %v: %s", path, err, data)
	}
	return s
}

// fetchAt sends the broker at addr a consumer's Fetch of topic-partition
// at offset (min bytes 1, max wait wait) and returns the bytes of records
// in its answer.
func fetchAt(ctx context.Context, t *testing.T, addr string, id [16]byte, topic string, partition int32, offset int64, wait time.Duration) int {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = int32(wait.Milliseconds()), 1, 1<<20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, id // by name to v12, by id from v13
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = partition, offset, 1<<20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := cl.SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		t.Fatalf("fetch %s-%d at %d from %s: %v", topic, partition, offset, addr, err)
	}
	fr := resp.(*kmsg.FetchResponse)
	if fr.ErrorCode != 0 || len(fr.Topics) != 1 || len(fr.Topics[0].Partitions) != 1 || fr.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("fetch %s-%d at %d from %s: %+v", topic, partition, offset, addr, fr)
	}
	return len(fr.Topics[0].Partitions[0].RecordBatches)
}

// steadyProducer is an idempotent acks=all producer of one topic, writing
// 50 records a request until finished, counting the records acknowledged.
type steadyProducer struct {
	acked atomic.Int64
	stop  chan struct{}
	done  chan struct{}
	err   error // set before done closes
	once  sync.Once
}

func startSteadyProducer(ctx context.Context, c *testCluster, topic string) *steadyProducer {
	cl := c.client(kgo.RequiredAcks(kgo.AllISRAcks()))
	p := &steadyProducer{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		rs := make([]*kgo.Record, 50)
		for {
			select {
			case <-p.stop:
				return
			default:
			}
			n := p.acked.Load()
			for i := range rs {
				rs[i] = &kgo.Record{Topic: topic, Value: []byte(strconv.FormatInt(n+int64(i), 10))}
			}
			if p.err = cl.ProduceSync(ctx, rs...).FirstErr(); p.err != nil {
				return
			}
			p.acked.Add(int64(len(rs)))
		}
	}()
	return p
}

// waitAcked waits until n records are acknowledged.
func (p *steadyProducer) waitAcked(t *testing.T, n int64) {
	t.Helper()
	poll(t, fmt.Sprintf("%d records acknowledged", n), func() error {
		select {
		case <-p.done:
			t.Fatalf("the producer stopped after %d records: %v", p.acked.Load(), p.err)
		default:
		}
		if got := p.acked.Load(); got < n {
			return fmt.Errorf("%d acknowledged", got)
		}
		return nil
	})
}

// halt stops the producer and waits until it has.
func (p *steadyProducer) halt() {
	p.once.Do(func() { close(p.stop) })
	<-p.done
}

// finish halts the producer and fails the test if a produce failed.
func (p *steadyProducer) finish(t *testing.T) {
	t.Helper()
	p.halt()
	if p.err != nil {
		t.Fatalf("produce after %d records acknowledged: %v", p.acked.Load(), p.err)
	}
}
