package broker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sluice-io/sluice/config"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupTimeouts lowers the group timeouts for tests: no initial rebalance
// delay, sessions down to 100 ms.
func groupTimeouts(c *config.Config) {
	zero := time.Duration(0)
	c.Groups.InitialRebalanceDelay = &zero
	c.Groups.MinSessionTimeout = 100 * time.Millisecond
}

// tracked is a group member's view of its assignment, updated by kgo's
// callbacks; changed is signalled at every change.
type tracked struct {
	mu       sync.Mutex
	owned    map[int32]bool
	changed  chan struct{}
	consumed []string // "partition/offset"
}

func (m *tracked) onAssigned(_ context.Context, _ *kgo.Client, a map[string][]int32) {
	m.mu.Lock()
	for _, ps := range a {
		for _, p := range ps {
			m.owned[p] = true
		}
	}
	m.mu.Unlock()
	m.signal()
}

func (m *tracked) onRevoked(_ context.Context, _ *kgo.Client, r map[string][]int32) {
	m.mu.Lock()
	for _, ps := range r {
		for _, p := range ps {
			delete(m.owned, p)
		}
	}
	m.mu.Unlock()
	m.signal()
}

func (m *tracked) signal() {
	select {
	case m.changed <- struct{}{}:
	default:
	}
}

func (m *tracked) partitions() []int32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []int32
	for p := range m.owned {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// member starts a group member on topic and polls in the background,
// recording what it consumes.
func (tb *testBroker) member(t testing.TB, group, topic string, opts ...kgo.Opt) (*kgo.Client, *tracked) {
	t.Helper()
	m := &tracked{owned: map[int32]bool{}, changed: make(chan struct{}, 1)}
	base := []kgo.Opt{
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.SessionTimeout(time.Second), kgo.HeartbeatInterval(100 * time.Millisecond),
		kgo.OnPartitionsAssigned(m.onAssigned), kgo.OnPartitionsRevoked(m.onRevoked), kgo.OnPartitionsLost(m.onRevoked),
		kgo.DisableAutoCommit(), kgo.FetchMaxWait(200 * time.Millisecond),
	}
	cl := tb.client(t, append(base, opts...)...)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			fs := cl.PollFetches(context.Background())
			if fs.IsClientClosed() {
				return
			}
			var got []string
			fs.EachRecord(func(r *kgo.Record) { got = append(got, fmt.Sprintf("%d/%d", r.Partition, r.Offset)) })
			m.mu.Lock()
			m.consumed = append(m.consumed, got...)
			m.mu.Unlock()
			if len(got) > 0 {
				m.signal()
			}
		}
	}()
	t.Cleanup(func() { cl.Close(); <-done })
	return cl, m
}

// await waits, woken by the members' changes, until cond holds.
func await(t testing.TB, what string, cond func() bool, members ...*tracked) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for !cond() {
		cases := make(chan struct{}, 1)
		stop := make(chan struct{})
		for _, m := range members {
			go func() {
				select {
				case <-m.changed:
					select {
					case cases <- struct{}{}:
					default:
					}
					m.signal() // leave it for the next wait too
				case <-stop:
				}
			}()
		}
		select {
		case <-cases:
		case <-deadline:
			close(stop)
			t.Fatalf("timed out waiting for %s", what)
		}
		close(stop)
	}
}

// covers reports whether the members own disjoint sets of partitions that
// together are 0..n-1, each member at least one.
func covers(n int32, members ...*tracked) func() bool {
	return func() bool {
		seen := map[int32]bool{}
		for _, m := range members {
			ps := m.partitions()
			if len(ps) == 0 {
				return false
			}
			for _, p := range ps {
				if seen[p] {
					return false
				}
				seen[p] = true
			}
		}
		return len(seen) == int(n)
	}
}

func produceN(t testing.TB, tb *testBroker, topic string, n int) {
	t.Helper()
	cl := tb.client(t, kgo.ProducerLinger(5*time.Millisecond))
	ctx := ctxTimeout(t, 60*time.Second)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for i := range n {
		wg.Add(1)
		cl.Produce(ctx, &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "%d", i)}, func(_ *kgo.Record, err error) {
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
		t.Fatal(firstErr)
	}
}

func consumedTotal(members ...*tracked) int {
	n := 0
	for _, m := range members {
		m.mu.Lock()
		n += len(m.consumed)
		m.mu.Unlock()
	}
	return n
}

// Inside a group each partition goes to one member: of 100,000 records
// none is consumed twice and none is missed, with the range and the
// cooperative-sticky assignors.
func TestGroupQueue(t *testing.T) {
	for _, c := range []struct {
		name     string
		balancer kgo.GroupBalancer
	}{{"range", kgo.RangeBalancer()}, {"cooperative-sticky", kgo.CooperativeStickyBalancer()}} {
		t.Run(c.name, func(t *testing.T) {
			tb := startBroker(t, t.TempDir(), groupTimeouts)
			tb.createTopic(t, "q", 6)
			var ms []*tracked
			for range 3 {
				_, m := tb.member(t, "g", "q", kgo.Balancers(c.balancer))
				ms = append(ms, m)
			}
			await(t, "every partition assigned to one of 3 members", covers(6, ms...), ms...)
			const n = 100_000
			produceN(t, tb, "q", n)
			await(t, fmt.Sprintf("%d records consumed", n), func() bool { return consumedTotal(ms...) >= n }, ms...)
			seen := map[string]bool{}
			for _, m := range ms {
				m.mu.Lock()
				for _, r := range m.consumed {
					if seen[r] {
						t.Errorf("record %s consumed twice", r)
					}
					seen[r] = true
				}
				m.mu.Unlock()
			}
			if len(seen) != n {
				t.Errorf("%d distinct records consumed, want %d", len(seen), n)
			}
		})
	}
}

// Every group gets every record.
func TestGroupsPubSub(t *testing.T) {
	tb := startBroker(t, t.TempDir(), groupTimeouts)
	tb.createTopic(t, "ps", 3)
	_, a := tb.member(t, "ga", "ps")
	_, b := tb.member(t, "gb", "ps")
	await(t, "both groups assigned", func() bool { return covers(3, a)() && covers(3, b)() }, a, b)
	produceN(t, tb, "ps", 1000)
	await(t, "both groups consumed everything", func() bool { return consumedTotal(a) >= 1000 && consumedTotal(b) >= 1000 }, a, b)
	if consumedTotal(a) != 1000 || consumedTotal(b) != 1000 {
		t.Errorf("consumed %d and %d, want 1000 each", consumedTotal(a), consumedTotal(b))
	}
}

// cuttable dials connections that can all be cut at once, after which
// dials fail: a client that dies without a word.
type cuttable struct {
	mu    sync.Mutex
	conns []net.Conn
	cut   bool
}

func (c *cuttable) dial(ctx context.Context, network, host string) (net.Conn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cut {
		return nil, errors.New("cut")
	}
	var d net.Dialer
	nc, err := d.DialContext(ctx, network, host)
	if err == nil {
		c.conns = append(c.conns, nc)
	}
	return nc, err
}

func (c *cuttable) cutAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cut = true
	for _, nc := range c.conns {
		nc.Close()
	}
}

// A member that dies is removed after its session timeout and its
// partitions go to the others; one that leaves cleanly is gone at once
// (the test's sessions are 30 s there, so only LeaveGroup can explain it).
func TestGroupMemberDiesOrLeaves(t *testing.T) {
	tb := startBroker(t, t.TempDir(), groupTimeouts)
	tb.createTopic(t, "d", 4)
	_, a := tb.member(t, "g", "d")
	var cut cuttable
	_, b := tb.member(t, "g", "d", kgo.Dialer(cut.dial))
	await(t, "two members share the partitions", covers(4, a, b), a, b)
	cut.cutAll()
	await(t, "the survivor owns every partition", func() bool { return len(a.partitions()) == 4 }, a)

	tb2 := startBroker(t, t.TempDir(), groupTimeouts)
	tb2.createTopic(t, "d", 4)
	long := kgo.SessionTimeout(30 * time.Second)
	_, x := tb2.member(t, "g", "d", long)
	ycl, y := tb2.member(t, "g", "d", long)
	await(t, "two members share the partitions", covers(4, x, y), x, y)
	ycl.Close()
	await(t, "the remaining member owns every partition", func() bool { return len(x.partitions()) == 4 }, x)
}

// Committed offsets survive a broker restart: a new member resumes there.
func TestGroupOffsetsSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	tb := startBroker(t, dir, groupTimeouts)
	tb.createTopic(t, "r", 1)
	produceN(t, tb, "r", 100)
	cl, m := tb.member(t, "g", "r")
	await(t, "50 records consumed", func() bool { return consumedTotal(m) >= 50 }, m)
	ctx := ctxTimeout(t, 10*time.Second)
	const committed = 50
	var commitErr error
	cl.CommitOffsetsSync(ctx, map[string]map[int32]kgo.EpochOffset{"r": {0: {Epoch: -1, Offset: committed}}},
		func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, _ *kmsg.OffsetCommitResponse, err error) {
			commitErr = err
		})
	if commitErr != nil {
		t.Fatal(commitErr)
	}
	cl.Close()
	tb.stop(t)

	tb = startBroker(t, dir, groupTimeouts)
	offs, err := kadm.NewClient(tb.client(t)).FetchOffsets(ctxTimeout(t, 10*time.Second), "g")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := offs.Lookup("r", 0); !ok || o.At != committed {
		t.Fatalf("committed offset after restart: %+v, want %d", o, committed)
	}
	_, m2 := tb.member(t, "g", "r")
	await(t, "the rest consumed", func() bool { return consumedTotal(m2) >= 100-committed }, m2)
	m2.mu.Lock()
	first := m2.consumed[0]
	m2.mu.Unlock()
	if first != fmt.Sprintf("0/%d", committed) {
		t.Errorf("new member started at %s, want 0/%d", first, committed)
	}
}

// A static member that restarts within its session keeps its partitions,
// and nobody rebalances. The restarted member is a follower: a restarted
// leader running franz-go recomputes the plan itself (KIP-814's
// limitation) and may force a rebalance of its own accord.
func TestGroupStaticMemberRestart(t *testing.T) {
	tb := startBroker(t, t.TempDir(), groupTimeouts)
	tb.createTopic(t, "s", 4)
	long := kgo.SessionTimeout(30 * time.Second)
	_, a := tb.member(t, "g", "s", long, kgo.InstanceID("a"))
	await(t, "the first member (the leader) owns everything", covers(4, a), a)
	bcl, b := tb.member(t, "g", "s", long, kgo.InstanceID("b"))
	await(t, "two static members share the partitions", covers(4, a, b), a, b)
	before := b.partitions()
	aBefore := a.partitions()
	gen := func() int32 {
		t.Helper()
		g, err := tb.groupCoordinator()
		if err != nil {
			t.Fatal(err)
		}
		n, _ := g.Generation("g")
		return n
	}
	genBefore := gen()
	bcl.Close() // a static member does not leave on close
	_, b2 := tb.member(t, "g", "s", long, kgo.InstanceID("b"))
	await(t, "the restarted member gets its partitions", func() bool { return len(b2.partitions()) > 0 }, b2)
	if got := b2.partitions(); !slices.Equal(got, before) {
		t.Errorf("restarted member owns %v, it owned %v", got, before)
	}
	if g := gen(); g != genBefore {
		t.Errorf("generation %d after the restart, %d before: the group rebalanced", g, genBefore)
	}
	if got := a.partitions(); !slices.Equal(got, aBefore) {
		t.Errorf("the other member owns %v after the restart, %v before", got, aBefore)
	}
}

// Group requests with bad input get Kafka's error codes.
func TestGroupBadInput(t *testing.T) {
	tb := startBroker(t, t.TempDir(), groupTimeouts)
	tb.createTopic(t, "b", 1)
	rc := dialRaw(t, tb.addr)
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Group, commit.Generation = "g", -1
	for _, topic := range []string{"b", "nope"} {
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = topic
		for _, p := range []int32{0, 5} {
			rp := kmsg.NewOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset = p, 1
			rt.Partitions = append(rt.Partitions, rp)
		}
		commit.Topics = append(commit.Topics, rt)
	}
	resp := rc.roundTrip(commit, 9).(*kmsg.OffsetCommitResponse)
	wantCode(t, "commit b-0", resp.Topics[0].Partitions[0].ErrorCode, nil)
	wantCode(t, "commit b-5", resp.Topics[0].Partitions[1].ErrorCode, kerr.UnknownTopicOrPartition)
	wantCode(t, "commit nope-0", resp.Topics[1].Partitions[0].ErrorCode, kerr.UnknownTopicOrPartition)

	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.MemberID, hb.Generation = "g", "nobody", 1
	wantCode(t, "heartbeat of an unknown member", rc.roundTrip(hb, 4).(*kmsg.HeartbeatResponse).ErrorCode, kerr.UnknownMemberID)
	hb.Group = ""
	wantCode(t, "heartbeat with an empty group id", rc.roundTrip(hb, 4).(*kmsg.HeartbeatResponse).ErrorCode, kerr.InvalidGroupID)
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis, join.ProtocolType = "g", 1000, 1000, "consumer"
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name = "range"
	join.Protocols = append(join.Protocols, p)
	jr := rc.roundTrip(join, 9).(*kmsg.JoinGroupResponse)
	wantCode(t, "first join", jr.ErrorCode, kerr.MemberIDRequired)
	if jr.MemberID == "" {
		t.Error("MEMBER_ID_REQUIRED without a member id")
	}
	join.SessionTimeoutMillis = 50
	wantCode(t, "join with a session below the minimum", rc.roundTrip(join, 9).(*kmsg.JoinGroupResponse).ErrorCode, kerr.InvalidSessionTimeout)
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group, sync.MemberID, sync.Generation = "g", "nobody", 0
	wantCode(t, "sync of an unknown member", rc.roundTrip(sync, 5).(*kmsg.SyncGroupResponse).ErrorCode, kerr.UnknownMemberID)

	if code, _ := rc.produceCode(11, offsetsTopic, 0, batch("not group state")); code != kerr.InvalidTopicException.Code {
		t.Errorf("produce to %s: %v, want INVALID_TOPIC_EXCEPTION", offsetsTopic, kerr.ErrorForCode(code))
	}
	del := kmsg.NewPtrDeleteTopicsRequest()
	del.TopicNames = []string{offsetsTopic}
	wantCode(t, "delete __consumer_offsets", rc.roundTrip(del, 5).(*kmsg.DeleteTopicsResponse).Topics[0].ErrorCode, kerr.InvalidRequest)
	steady := dialRaw(t, tb.addr)
	steadyOK(t, steady)
}

// Deleting a topic deletes the groups' offsets of it: a topic created again
// under the name starts with none.
func TestGroupOffsetsOfDeletedTopic(t *testing.T) {
	tb := startBroker(t, t.TempDir(), groupTimeouts)
	tb.createTopic(t, "gone", 2)
	adm := tb.admin(t)
	ctx := ctxTimeout(t, 10*time.Second)
	var os kadm.Offsets
	os.Add(kadm.Offset{Topic: "gone", Partition: 1, At: 7, LeaderEpoch: -1})
	if r, err := adm.CommitOffsets(ctx, "g", os); err != nil || r.Error() != nil {
		t.Fatalf("commit: %v %v", err, r.Error())
	}
	if r, err := adm.DeleteTopic(ctx, "gone"); err != nil || r.Err != nil {
		t.Fatalf("delete: %v %v", err, r.Err)
	}
	tb.createTopic(t, "gone", 2)
	offs, err := adm.FetchOffsets(ctx, "g")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := offs.Lookup("gone", 1); ok && o.At >= 0 {
		t.Errorf("offset of the deleted topic survived: %+v", o)
	}
}

// A broker stopping while a JoinGroup is parked (here in the 3 s initial
// rebalance delay) answers it at once (NOT_COORDINATOR, as Kafka does when
// it unloads a group) instead of waiting for the rebalance.
func TestShutdownAnswersParkedJoin(t *testing.T) {
	tb := startBroker(t, t.TempDir(), nil)
	rc := dialRaw(t, tb.addr)
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis, join.ProtocolType = "g", 10000, 60000, "consumer"
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name = "range"
	join.Protocols = append(join.Protocols, p)
	jr := rc.roundTrip(join, 9).(*kmsg.JoinGroupResponse)
	wantCode(t, "first join", jr.ErrorCode, kerr.MemberIDRequired)
	join.MemberID = jr.MemberID
	join.SetVersion(9)
	corr := rc.send(join)
	// Wait for the join to be parked (in the initial delay), then stop the
	// broker.
	g, err := tb.groupCoordinator()
	if err != nil {
		t.Fatal(err)
	}
	d := kmsg.NewPtrDescribeGroupsRequest()
	d.Groups = []string{"g"}
	for deadline := time.Now().Add(5 * time.Second); ; runtime.Gosched() {
		if dg := g.DescribeGroups(d).Groups[0]; dg.State == "PreparingRebalance" && len(dg.Members) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the join was never parked")
		}
	}
	start := time.Now()
	done := make(chan struct{})
	go func() { tb.stop(t); close(done) }()
	resp := kmsg.NewPtrJoinGroupResponse()
	resp.SetVersion(9)
	rc.readResponse(corr, resp, 10*time.Second)
	<-done
	wantCode(t, "parked join at shutdown", resp.ErrorCode, kerr.NotCoordinator)
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("shutdown took %v with a join parked", d)
	}
}

// Members that commit what they consumed when partitions are revoked hand
// over exactly there: while a member joins and another leaves during
// consumption, every record is consumed, and none twice.
func TestGroupCommitOnRevoke(t *testing.T) {
	tb := startBroker(t, t.TempDir(), groupTimeouts)
	tb.createTopic(t, "cr", 6)
	var mu sync.Mutex
	seen := map[string]int{}
	start := func() (*kgo.Client, *tracked) {
		var cl *kgo.Client
		commit := func(ctx context.Context, c *kgo.Client, _ map[string][]int32) {
			if err := c.CommitUncommittedOffsets(ctx); err != nil {
				t.Errorf("commit on revoke: %v", err)
			}
		}
		m := &tracked{owned: map[int32]bool{}, changed: make(chan struct{}, 1)}
		cl = tb.client(t, kgo.ConsumerGroup("g"), kgo.ConsumeTopics("cr"),
			kgo.SessionTimeout(time.Second), kgo.HeartbeatInterval(100*time.Millisecond),
			kgo.DisableAutoCommit(), kgo.BlockRebalanceOnPoll(), kgo.FetchMaxWait(200*time.Millisecond),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.OnPartitionsAssigned(m.onAssigned),
			kgo.OnPartitionsRevoked(func(ctx context.Context, c *kgo.Client, r map[string][]int32) {
				commit(ctx, c, r)
				m.onRevoked(ctx, c, r)
			}),
			kgo.OnPartitionsLost(m.onRevoked))
		done := make(chan struct{})
		go func() {
			defer close(done)
			for {
				fs := cl.PollFetches(context.Background())
				if fs.IsClientClosed() {
					return
				}
				mu.Lock()
				fs.EachRecord(func(r *kgo.Record) { seen[fmt.Sprintf("%d/%d", r.Partition, r.Offset)]++ })
				mu.Unlock()
				cl.AllowRebalance()
				m.signal()
			}
		}()
		t.Cleanup(func() { cl.Close(); <-done })
		return cl, m
	}
	total := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(seen)
	}
	_, a := start()
	bcl, b := start()
	await(t, "two members share the partitions", covers(6, a, b), a, b)
	const n = 30000
	produceN(t, tb, "cr", n/3)
	await(t, "a third consumed", func() bool { return total() >= n/3 }, a, b)
	_, c := start() // a member joins: partitions move
	produceN(t, tb, "cr", n/3)
	await(t, "three members share the partitions", covers(6, a, b, c), a, b, c)
	bcl.Close() // a member leaves: its partitions move
	produceN(t, tb, "cr", n/3)
	await(t, "everything consumed", func() bool { return total() >= n }, a, c)
	mu.Lock()
	defer mu.Unlock()
	for r, k := range seen {
		if k > 1 {
			t.Errorf("record %s consumed %d times", r, k)
		}
	}
	if len(seen) != n {
		t.Errorf("%d distinct records consumed, want %d", len(seen), n)
	}
}

// FindCoordinator names this broker at every version, batched from v4;
// OffsetFetch answers one group (v0-7) or several (v8+) at every version.
func TestGroupAPIVersions(t *testing.T) {
	tb := startBroker(t, t.TempDir(), groupTimeouts)
	tb.createTopic(t, "v", 2)
	rc := dialRaw(t, tb.addr)
	self := tb.self()
	for v := int16(0); v <= 5; v++ {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorKey, req.CoordinatorKeys = "g1", []string{"g1", "g2"}
		resp := rc.roundTrip(req, v).(*kmsg.FindCoordinatorResponse)
		if v < 4 {
			if resp.ErrorCode != 0 || resp.NodeID != self.ID || resp.Port != self.Port || resp.Host != self.Host {
				t.Errorf("v%d: %+v", v, resp)
			}
			continue
		}
		if len(resp.Coordinators) != 2 || resp.Coordinators[1].Key != "g2" || resp.Coordinators[1].NodeID != self.ID || resp.Coordinators[1].ErrorCode != 0 {
			t.Errorf("v%d: %+v", v, resp.Coordinators)
		}
	}
	txn := kmsg.NewPtrFindCoordinatorRequest()
	txn.CoordinatorKey, txn.CoordinatorType = "t", 1
	if resp := rc.roundTrip(txn, 3).(*kmsg.FindCoordinatorResponse); resp.ErrorCode != 0 || resp.NodeID != self.ID || resp.Port != self.Port {
		t.Errorf("transaction coordinator: %+v, want this broker", resp)
	}
	txn.CoordinatorType = 2
	wantCode(t, "coordinator type 2", rc.roundTrip(txn, 3).(*kmsg.FindCoordinatorResponse).ErrorCode, kerr.InvalidRequest)

	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Group, commit.Generation = "g1", -1
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = "v"
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset, rp.LeaderEpoch = 1, 77, 0
	md := "meta"
	rp.Metadata = &md
	rt.Partitions = append(rt.Partitions, rp)
	commit.Topics = append(commit.Topics, rt)
	for v := int16(0); v <= 9; v++ {
		wantCode(t, fmt.Sprintf("commit v%d", v), rc.roundTrip(commit, v).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode, nil)
	}
	for v := int16(1); v <= 9; v++ {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Group = "g1"
		ft := kmsg.NewOffsetFetchRequestTopic()
		ft.Topic, ft.Partitions = "v", []int32{0, 1}
		req.Topics = append(req.Topics, ft)
		for _, g := range []string{"g1", "g2"} {
			rg := kmsg.NewOffsetFetchRequestGroup()
			rg.Group = g
			gt := kmsg.NewOffsetFetchRequestGroupTopic()
			gt.Topic, gt.Partitions = "v", []int32{0, 1}
			rg.Topics = append(rg.Topics, gt)
			req.Groups = append(req.Groups, rg)
		}
		resp := rc.roundTrip(req, v).(*kmsg.OffsetFetchResponse)
		var p0, p1 int64
		var meta string
		if v < 8 {
			p0, p1, meta = resp.Topics[0].Partitions[0].Offset, resp.Topics[0].Partitions[1].Offset, *resp.Topics[0].Partitions[1].Metadata
		} else {
			if len(resp.Groups) != 2 || resp.Groups[1].Topics[0].Partitions[1].Offset != -1 {
				t.Errorf("v%d: groups %+v", v, resp.Groups)
				continue
			}
			p := resp.Groups[0].Topics[0].Partitions
			p0, p1, meta = p[0].Offset, p[1].Offset, *p[1].Metadata
		}
		if p0 != -1 || p1 != 77 || meta != "meta" {
			t.Errorf("v%d: offsets %d %d metadata %q, want -1 77 meta", v, p0, p1, meta)
		}
	}
}

// One member runs the whole classic protocol at every version of each API
// (JoinGroup 0-9, SyncGroup 0-5, Heartbeat 0-4, LeaveGroup 0-5): a join
// (with the KIP-394 round trip from v4), a sync as leader, heartbeats, a
// commit and a leave, each answered without error.
func TestGroupProtocolEveryVersion(t *testing.T) {
	tb := startBroker(t, t.TempDir(), groupTimeouts)
	tb.createTopic(t, "ev", 1)
	rc := dialRaw(t, tb.addr)
	for jv := int16(0); jv <= 9; jv++ {
		sv, hv, lv := min(jv, 5), min(jv, 4), min(jv, 5)
		group := fmt.Sprintf("ev-%d", jv)
		what := fmt.Sprintf("JoinGroup v%d, SyncGroup v%d, Heartbeat v%d, LeaveGroup v%d", jv, sv, hv, lv)
		join := kmsg.NewPtrJoinGroupRequest()
		join.Group, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis, join.ProtocolType = group, 5000, 5000, "consumer"
		p := kmsg.NewJoinGroupRequestProtocol()
		meta := kmsg.NewConsumerMemberMetadata()
		meta.Topics = []string{"ev"}
		p.Name, p.Metadata = "range", meta.AppendTo(nil)
		join.Protocols = append(join.Protocols, p)
		jr := rc.roundTrip(join, jv).(*kmsg.JoinGroupResponse)
		if jv >= 4 {
			wantCode(t, what+": first join", jr.ErrorCode, kerr.MemberIDRequired)
			join.MemberID = jr.MemberID
			jr = rc.roundTrip(join, jv).(*kmsg.JoinGroupResponse)
		}
		if jr.ErrorCode != 0 || jr.MemberID == "" || jr.LeaderID != jr.MemberID || jr.Generation != 1 || len(jr.Members) != 1 {
			t.Errorf("%s: join answered %v %+v", what, kerr.ErrorForCode(jr.ErrorCode), jr)
			continue
		}
		if jr.Protocol == nil || *jr.Protocol != "range" || jv >= 7 && (jr.ProtocolType == nil || *jr.ProtocolType != "consumer") {
			t.Errorf("%s: protocol %v type %v", what, jr.Protocol, jr.ProtocolType)
		}
		sync := kmsg.NewPtrSyncGroupRequest()
		sync.Group, sync.MemberID, sync.Generation = group, jr.MemberID, jr.Generation
		if sv >= 5 {
			pt, pn := "consumer", "range"
			sync.ProtocolType, sync.Protocol = &pt, &pn
		}
		a := kmsg.NewSyncGroupRequestGroupAssignment()
		a.MemberID, a.MemberAssignment = jr.MemberID, []byte("mine")
		sync.GroupAssignment = append(sync.GroupAssignment, a)
		sr := rc.roundTrip(sync, sv).(*kmsg.SyncGroupResponse)
		if sr.ErrorCode != 0 || string(sr.MemberAssignment) != "mine" {
			t.Errorf("%s: sync answered %v %q", what, kerr.ErrorForCode(sr.ErrorCode), sr.MemberAssignment)
		}
		hb := kmsg.NewPtrHeartbeatRequest()
		hb.Group, hb.MemberID, hb.Generation = group, jr.MemberID, jr.Generation
		wantCode(t, what+": heartbeat", rc.roundTrip(hb, hv).(*kmsg.HeartbeatResponse).ErrorCode, nil)
		hb.Generation++
		wantCode(t, what+": heartbeat of a generation to come", rc.roundTrip(hb, hv).(*kmsg.HeartbeatResponse).ErrorCode, kerr.IllegalGeneration)
		commit := kmsg.NewPtrOffsetCommitRequest()
		commit.Group, commit.MemberID, commit.Generation = group, jr.MemberID, jr.Generation
		ct := kmsg.NewOffsetCommitRequestTopic()
		ct.Topic = "ev"
		cp := kmsg.NewOffsetCommitRequestTopicPartition()
		cp.Offset = 3
		ct.Partitions = append(ct.Partitions, cp)
		commit.Topics = append(commit.Topics, ct)
		wantCode(t, what+": member commit", rc.roundTrip(commit, 8).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode, nil)
		leave := kmsg.NewPtrLeaveGroupRequest()
		leave.Group, leave.MemberID = group, jr.MemberID
		lm := kmsg.NewLeaveGroupRequestMember()
		lm.MemberID = jr.MemberID
		leave.Members = append(leave.Members, lm)
		lr := rc.roundTrip(leave, lv).(*kmsg.LeaveGroupResponse)
		wantCode(t, what+": leave", lr.ErrorCode, nil)
		if lv >= 3 && (len(lr.Members) != 1 || lr.Members[0].ErrorCode != 0) {
			t.Errorf("%s: leave members %+v", what, lr.Members)
		}
	}
	lg := rc.roundTrip(kmsg.NewPtrListGroupsRequest(), 4).(*kmsg.ListGroupsResponse)
	if len(lg.Groups) != 10 {
		t.Errorf("%d groups listed, want 10", len(lg.Groups))
	}
	for _, g := range lg.Groups {
		if g.GroupState != "Empty" {
			t.Errorf("group %s is %s after its only member left", g.Group, g.GroupState)
		}
	}
	for v := int16(0); v <= 5; v++ {
		d := kmsg.NewPtrDescribeGroupsRequest()
		d.Groups = []string{"ev-0", "nope"}
		resp := rc.roundTrip(d, v).(*kmsg.DescribeGroupsResponse)
		if len(resp.Groups) != 2 || resp.Groups[0].State != "Empty" || resp.Groups[0].ProtocolType != "consumer" || resp.Groups[1].State != "Dead" {
			t.Errorf("DescribeGroups v%d: %+v", v, resp.Groups)
		}
	}
	od := kmsg.NewPtrOffsetDeleteRequest()
	od.Group = "ev-0"
	ot := kmsg.NewOffsetDeleteRequestTopic()
	ot.Topic = "ev"
	ot.Partitions = append(ot.Partitions, kmsg.NewOffsetDeleteRequestTopicPartition())
	od.Topics = append(od.Topics, ot)
	odr := rc.roundTrip(od, 0).(*kmsg.OffsetDeleteResponse)
	if odr.ErrorCode != 0 || odr.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Errorf("OffsetDelete v0: %+v", odr)
	}
	for v := int16(0); v <= 2; v++ {
		del := kmsg.NewPtrDeleteGroupsRequest()
		del.Groups = []string{fmt.Sprintf("ev-%d", v+1)}
		wantCode(t, fmt.Sprintf("DeleteGroups v%d", v), rc.roundTrip(del, v).(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode, nil)
	}
	if lg := rc.roundTrip(kmsg.NewPtrListGroupsRequest(), 5).(*kmsg.ListGroupsResponse); len(lg.Groups) != 7 {
		t.Errorf("%d groups listed after deleting 3, want 7", len(lg.Groups))
	}
}
