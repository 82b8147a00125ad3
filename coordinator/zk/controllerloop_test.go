package zk

import (
	"context"
	"errors"
	"math/rand/v2"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/coordinator/controller"
	"github.com/sluice-io/sluice/coordinator/zk/zktest"
	"github.com/sluice-io/sluice/engine"
)

// waitDeadline bounds every wait of these tests.
const waitDeadline = 15 * time.Second

// delivered is a control request as a fake broker received it.
type delivered struct {
	from, to int32
	req      kmsg.Request
}

// fakeBrokers stands for the brokers' listeners: every controller driver
// sends through it, it records what each broker received and answers
// without error, as a broker that applied the request. A broker marked
// down refuses its requests.
type fakeBrokers struct {
	mu      sync.Mutex
	got     []delivered
	down    map[int32]bool
	changed chan struct{}
}

func newFakeBrokers() *fakeBrokers {
	return &fakeBrokers{down: map[int32]bool{}, changed: make(chan struct{})}
}

type fakeSender struct {
	f    *fakeBrokers
	from int32
}

func (f *fakeBrokers) sender(from int32) Sender { return fakeSender{f, from} }

func (f *fakeBrokers) setDown(id int32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down[id] = true
}

var errFakeDown = errors.New("fake broker down")

func (s fakeSender) Send(ctx context.Context, to int32, req kmsg.Request) (kmsg.Response, error) {
	f := s.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down[to] {
		return nil, errFakeDown
	}
	f.got = append(f.got, delivered{s.from, to, req})
	close(f.changed)
	f.changed = make(chan struct{})
	switch m := req.(type) {
	case *kmsg.LeaderAndISRRequest:
		resp := &kmsg.LeaderAndISRResponse{Version: m.Version}
		for _, ts := range m.TopicStates {
			rt := kmsg.LeaderAndISRResponseTopic{TopicID: ts.TopicID}
			for _, ps := range ts.PartitionStates {
				rt.Partitions = append(rt.Partitions, kmsg.LeaderAndISRResponseTopicPartition{Partition: ps.Partition})
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	case *kmsg.StopReplicaRequest:
		resp := &kmsg.StopReplicaResponse{Version: m.Version}
		for _, ts := range m.Topics {
			for _, ps := range ts.PartitionStates {
				resp.Partitions = append(resp.Partitions, kmsg.StopReplicaResponsePartition{Topic: ts.Topic, Partition: ps.Partition})
			}
		}
		return resp, nil
	case *kmsg.UpdateMetadataRequest:
		return &kmsg.UpdateMetadataResponse{Version: m.Version}, nil
	}
	return nil, errors.New("fake broker: unexpected request")
}

// waitFor waits until pred holds of the requests received.
func (f *fakeBrokers) waitFor(t testing.TB, what string, pred func([]delivered) bool) {
	t.Helper()
	deadline := time.NewTimer(waitDeadline)
	defer deadline.Stop()
	for {
		f.mu.Lock()
		ok, ch := pred(f.got), f.changed
		f.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// partitionView is what a broker learnt of one partition from one
// controller epoch's requests.
type partitionView struct {
	leader, leaderEpoch int32
	isr                 []int32
	deleting            bool
}

// views returns, for requests to broker to from the controller of epoch,
// the partition states in the last UpdateMetadata and the LeaderAndIsr
// states, each the latest received.
func views(got []delivered, to, epoch int32) (um, lisr map[engine.Partition]partitionView, live []int32) {
	um, lisr = map[engine.Partition]partitionView{}, map[engine.Partition]partitionView{}
	for _, d := range got {
		if d.to != to {
			continue
		}
		switch m := d.req.(type) {
		case *kmsg.UpdateMetadataRequest:
			if m.ControllerEpoch != epoch {
				continue
			}
			live = live[:0]
			for _, b := range m.LiveBrokers {
				live = append(live, b.ID)
			}
			for _, ts := range m.TopicStates {
				for _, ps := range ts.PartitionStates {
					um[engine.Partition{Topic: ts.Topic, Partition: ps.Partition}] = partitionView{
						ps.Leader, ps.LeaderEpoch, ps.ISR, ps.Leader == controller.LeaderDuringDelete}
				}
			}
		case *kmsg.LeaderAndISRRequest:
			if m.ControllerEpoch != epoch {
				continue
			}
			for _, ts := range m.TopicStates {
				for _, ps := range ts.PartitionStates {
					lisr[engine.Partition{Topic: ts.Topic, Partition: ps.Partition}] = partitionView{ps.Leader, ps.LeaderEpoch, ps.ISR, false}
				}
			}
		}
	}
	slices.Sort(live)
	return um, lisr, live
}

type testBroker struct {
	id     int32
	client *Client
	loop   *ControllerLoop
}

func startTestBroker(t *testing.T, chroot string, id int32, f *fakeBrokers) *testBroker {
	t.Helper()
	return startTestBrokerWith(t, chroot, id, f, LoopOptions{Logger: quietLogger()})
}

// startTestBrokerWith is startTestBroker with the driver's options.
func startTestBrokerWith(t *testing.T, chroot string, id int32, f *fakeBrokers, o LoopOptions) *testBroker {
	t.Helper()
	c := connect(t, chroot)
	if err := c.EnsurePersistentPaths(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitDeadline)
	defer cancel()
	if _, err := c.Register(ctx, registration(id, 9090+id)); err != nil {
		t.Fatal(err)
	}
	l := StartControllerLoop(context.Background(), c, id, f.sender(id), o)
	t.Cleanup(l.Close)
	return &testBroker{id: id, client: c, loop: l}
}

// startTestCluster starts n brokers' drivers on a fresh chroot and waits
// for one to be elected; it returns them and the controller.
func startTestCluster(t *testing.T, n int32, f *fakeBrokers) ([]*testBroker, *testBroker) {
	t.Helper()
	chroot := zktest.Chroot()
	var bs []*testBroker
	for id := int32(1); id <= n; id++ {
		bs = append(bs, startTestBroker(t, chroot, id, f))
	}
	return bs, waitController(t, bs, 0)
}

// waitController waits until exactly one of bs is the controller, at an
// epoch above after, and the others name it; it returns it.
func waitController(t *testing.T, bs []*testBroker, after int32) *testBroker {
	t.Helper()
	deadline := time.After(waitDeadline)
	for {
		cases := []reflect.SelectCase{{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(deadline)}}
		var ctl []*testBroker
		for _, b := range bs {
			cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(b.loop.Changed())})
			if b.loop.IsController() {
				ctl = append(ctl, b)
			}
		}
		if len(ctl) == 1 && ctl[0].loop.Epoch() > after {
			agreed := true
			for _, b := range bs {
				agreed = agreed && b.loop.ActiveController() == ctl[0].id
			}
			if agreed {
				return ctl[0]
			}
		}
		if i, _, _ := reflect.Select(cases); i == 0 {
			t.Fatalf("timed out waiting for one controller above epoch %d: %d controllers", after, len(ctl))
		}
	}
}

// waitGone waits until the znode p does not exist.
func waitGone(t *testing.T, c *Client, p string) {
	t.Helper()
	deadline := time.After(waitDeadline)
	for {
		ok, _, ch, err := c.conn.ExistsW(c.abs(p))
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("timed out waiting for %s to go", p)
		}
	}
}

// readStates reads a topic's state znodes through c.
func readTopicStates(t *testing.T, c *Client, topic string, n int) []PartitionState {
	t.Helper()
	out := make([]PartitionState, n)
	for p := range n {
		data, _, err := c.Get(PartitionStatePath(topic, int32(p)))
		if err != nil {
			t.Fatalf("%s: %v", PartitionStatePath(topic, int32(p)), err)
		}
		if out[p], err = DecodePartitionState(topic, int32(p), data); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// loopGoroutines lists the goroutines running the driver's code.
func loopGoroutines() []string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		for _, fn := range []string{"zk.(*ControllerLoop)", "zk.(*term)", "zk.(*channels)", "zk.parallel"} {
			if strings.Contains(g, fn) {
				out = append(out, g)
				break
			}
		}
	}
	return out
}

// Three brokers, each running the driver: one is elected; a topic of 12
// partitions at RF 3 created from another broker gets its state znodes,
// leaders 4/4/4, and every broker is told with the controller's epoch;
// deleting it removes its znodes once the brokers answered StopReplica; a
// second topic survives the controller's death (the next controller, at a
// higher epoch, loads it and tells the live brokers, the dead one's
// partitions offline) and a broker's deregistration (its partitions
// offline in ZooKeeper). Closing the drivers leaves none of their
// goroutines.
func TestControllerLoopCluster(t *testing.T) {
	requireZK(t)
	f := newFakeBrokers()
	bs, ctl := startTestCluster(t, 3, f)
	epoch := ctl.loop.Epoch()
	all := []int32{1, 2, 3}
	f.waitFor(t, "UpdateMetadata with 3 live brokers to each broker", func(got []delivered) bool {
		for _, b := range all {
			if _, _, live := views(got, b, epoch); !slices.Equal(live, all) {
				return false
			}
		}
		return true
	})

	// A topic created through a broker that is not the controller.
	other := bs[0]
	if other == ctl {
		other = bs[1]
	}
	rng := rand.New(rand.NewPCG(1, 2))
	req := controller.TopicRequest{NumPartitions: 12, ReplicationFactor: 3}
	a, err := other.client.CreateTopic("orders", req, controller.Defaults{}, map[string]string{"retention.ms": "1000"}, rng)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.client.CreateTopic("orders", req, controller.Defaults{}, nil, rng); !errors.Is(err, ErrTopicExists) {
		t.Fatalf("created twice: %v", err)
	}
	told := func(topic string, n int, epoch int32, brokers []int32) func([]delivered) bool {
		return func(got []delivered) bool {
			for _, b := range brokers {
				um, lisr, _ := views(got, b, epoch)
				for p := range n {
					tp := engine.Partition{Topic: topic, Partition: int32(p)}
					if _, ok := um[tp]; !ok {
						return false
					}
					if _, ok := lisr[tp]; !ok {
						return false
					}
				}
			}
			return true
		}
	}
	f.waitFor(t, "LeaderAndIsr and UpdateMetadata of orders to every broker", told("orders", 12, epoch, all))
	states := readTopicStates(t, ctl.client, "orders", 12)
	leads := map[int32]int{}
	for p, s := range states {
		if s.Leader != a.Replicas[p][0] || !slices.Equal(s.ISR, a.Replicas[p]) || s.ControllerEpoch != epoch || s.LeaderEpoch != 0 {
			t.Errorf("orders-%d: state %+v, replicas %v, controller epoch %d", p, s, a.Replicas[p], epoch)
		}
		leads[s.Leader]++
		if len(a.Replicas[p]) != 3 {
			t.Errorf("orders-%d: replicas %v", p, a.Replicas[p])
		}
	}
	if leads[1] != 4 || leads[2] != 4 || leads[3] != 4 {
		t.Errorf("leaders spread %v, want 4 each", leads)
	}
	f.mu.Lock()
	for _, d := range f.got {
		if m, ok := d.req.(*kmsg.LeaderAndISRRequest); ok && (m.ControllerEpoch != epoch || m.ControllerID != ctl.id || d.from != ctl.id) {
			t.Errorf("LeaderAndIsr to %d from %d: controller %d epoch %d, want %d epoch %d", d.to, d.from, m.ControllerID, m.ControllerEpoch, ctl.id, epoch)
		}
	}
	f.mu.Unlock()

	// Deletion: StopReplica to every replica, then the znodes go.
	if err := other.client.DeleteTopic("orders"); err != nil {
		t.Fatal(err)
	}
	if err := other.client.DeleteTopic("nope"); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("deleting an unknown topic: %v", err)
	}
	waitGone(t, other.client, DeleteTopicPath("orders"))
	for _, p := range []string{TopicPath("orders"), ConfigEntityPath(ConfigTopics, "orders")} {
		if ok, _, err := other.client.conn.Exists(other.client.abs(p)); ok || err != nil {
			t.Errorf("%s after the deletion: exists %v, %v", p, ok, err)
		}
	}
	f.mu.Lock()
	stopped := map[int32]int{}
	for _, d := range f.got {
		if m, ok := d.req.(*kmsg.StopReplicaRequest); ok {
			for _, ts := range m.Topics {
				for _, ps := range ts.PartitionStates {
					if ts.Topic == "orders" && ps.Delete {
						stopped[d.to]++
					}
				}
			}
		}
	}
	f.mu.Unlock()
	if stopped[1] != 12 || stopped[2] != 12 || stopped[3] != 12 {
		t.Errorf("StopReplica(delete) per broker %v, want 12 each", stopped)
	}

	// The controller dies with a topic in place.
	a, err = other.client.CreateTopic("events", req, controller.Defaults{}, nil, rng)
	if err != nil {
		t.Fatal(err)
	}
	f.waitFor(t, "LeaderAndIsr and UpdateMetadata of events to every broker", told("events", 12, epoch, all))
	// Partitions added from any broker.
	if a, err = other.client.AddPartitions("events", 15, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := other.client.AddPartitions("events", 15, nil); !errors.Is(err, controller.ErrInvalidPartitions) {
		t.Fatalf("growing to the same count: %v", err)
	}
	n := len(a.Replicas)
	f.waitFor(t, "LeaderAndIsr and UpdateMetadata of the added partitions to every broker", told("events", n, epoch, all))
	for p, s := range readTopicStates(t, ctl.client, "events", n) {
		if s.Leader != a.Replicas[p][0] {
			t.Errorf("events-%d: leader %d, replicas %v", p, s.Leader, a.Replicas[p])
		}
	}
	f.setDown(ctl.id)
	ctl.loop.Close()
	ctl.client.Close()
	rest := slices.DeleteFunc(slices.Clone(bs), func(b *testBroker) bool { return b == ctl })
	next := waitController(t, rest, epoch)
	nextEpoch := next.loop.Epoch()
	var liveIDs []int32
	for _, b := range rest {
		liveIDs = append(liveIDs, b.id)
	}
	slices.Sort(liveIDs)
	// Every replica was in the ISR (a new partition's ISR is all of them):
	// the dead brokers' partitions are led by their next live replica in
	// assignment order, and the dead leave the ISRs.
	wantLeader := func(p int, dead []int32) int32 {
		for _, r := range a.Replicas[p] {
			if !slices.Contains(dead, r) {
				return r
			}
		}
		return NoLeader
	}
	reelected := func(dead ...int32) func([]delivered) bool {
		return func(got []delivered) bool {
			for _, b := range liveIDs {
				um, _, live := views(got, b, nextEpoch)
				if slices.ContainsFunc(dead, func(d int32) bool { return slices.Contains(live, d) }) {
					return false
				}
				for p := range n {
					v, ok := um[engine.Partition{Topic: "events", Partition: int32(p)}]
					if !ok || v.leader != wantLeader(p, dead) || slices.ContainsFunc(dead, func(d int32) bool { return slices.Contains(v.isr, d) }) {
						return false
					}
				}
			}
			return true
		}
	}
	f.waitFor(t, "UpdateMetadata of the next controller with the dead one's partitions led by their next replica", reelected(ctl.id))
	checkLeaders := func(dead ...int32) {
		t.Helper()
		for p, s := range readTopicStates(t, next.client, "events", n) {
			want := wantLeader(p, dead)
			switch {
			case s.Leader != want:
				t.Errorf("events-%d: leader %d, want %d (replicas %v, dead %v)", p, s.Leader, want, a.Replicas[p], dead)
			case slices.Contains(dead, a.Replicas[p][0]) && s.ControllerEpoch != nextEpoch:
				t.Errorf("events-%d, led by dead broker %d: not elected by the next controller: %+v", p, a.Replicas[p][0], s)
			case slices.ContainsFunc(dead, func(d int32) bool { return slices.Contains(s.ISR, d) }):
				t.Errorf("events-%d: a dead broker in the ISR %v", p, s.ISR)
			}
		}
	}
	checkLeaders(ctl.id)

	// A broker other than the controller deregisters.
	gone := rest[0]
	if gone == next {
		gone = rest[1]
	}
	f.setDown(gone.id)
	gone.loop.Close()
	gone.client.Close()
	liveIDs = []int32{next.id}
	f.waitFor(t, "UpdateMetadata with the deregistered broker's partitions led by the last one", reelected(ctl.id, gone.id))
	checkLeaders(ctl.id, gone.id)

	next.loop.Close()
	if g := loopGoroutines(); len(g) > 0 {
		t.Errorf("%d goroutines of the driver left after Close:\n%s", len(g), strings.Join(g, "\n\n"))
	}
}

// State writes are split into multi-ops under ZooKeeper's request limit;
// a new topic's partitions znode is created by its first batch only.
func TestBatchStates(t *testing.T) {
	var ws []controller.Write
	for p := range 10000 {
		ws = append(ws, controller.Write{Op: controller.CreateState, Topic: "t", Partition: int32(p),
			State: controller.PartitionState{Leader: 1, ISR: []int32{1, 2, 3}}})
	}
	bs := batchStates(ws, func(string) bool { return false })
	if len(bs) < 2 {
		t.Fatalf("%d batches for 10,000 creates", len(bs))
	}
	n, parents := 0, 0
	for _, b := range bs {
		size := 0
		for _, op := range b.ops {
			size += opSize(op)
			if c, ok := op.(*gozk.CreateRequest); ok && c.Path == PartitionsPath("t") {
				parents++
			}
		}
		if size > maxMultiBytes {
			t.Errorf("batch of %d bytes", size)
		}
		n += len(b.writes)
	}
	if n != len(ws) || parents != 1 {
		t.Errorf("%d writes batched of %d, partitions znode created %d times", n, len(ws), parents)
	}
}

// A controller whose session expires (its link cut past the session
// timeout) is replaced by the other broker at a higher epoch; once back,
// it learns of the expiry, and names the new controller instead of acting
// as one.
func TestControllerLoopSessionExpiry(t *testing.T) {
	requireZK(t)
	chroot := zktest.Chroot()
	f := newFakeBrokers()
	proxy := startLinkProxy(t, zkServerAddr(t))
	ctx, cancel := context.WithTimeout(context.Background(), waitDeadline)
	defer cancel()
	c, err := Connect(ctx, proxy.Addr()+chroot, Options{SessionTimeout: time.Second, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	if err := c.EnsurePersistentPaths(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Register(ctx, registration(1, 9091)); err != nil {
		t.Fatal(err)
	}
	first := &testBroker{id: 1, client: c, loop: StartControllerLoop(ctx, c, 1, f.sender(1), LoopOptions{Logger: quietLogger()})}
	t.Cleanup(first.loop.Close)
	waitController(t, []*testBroker{first}, 0)
	epoch := first.loop.Epoch()
	second := startTestBroker(t, chroot, 2, f)
	if ctl := waitController(t, []*testBroker{first, second}, 0); ctl != first {
		t.Fatalf("broker %d took over from a live controller", ctl.id)
	}

	proxy.SetCut(true)
	if ctl := waitController(t, []*testBroker{second}, epoch); ctl != second {
		t.Fatal("unreachable")
	}
	next := second.loop.Epoch()
	f.waitFor(t, "UpdateMetadata of the new controller without the expired broker", func(got []delivered) bool {
		_, _, live := views(got, 2, next)
		return slices.Equal(live, []int32{2})
	})
	proxy.SetCut(false)
	if ctl := waitController(t, []*testBroker{first, second}, epoch); ctl != second || second.loop.Epoch() != next {
		t.Fatalf("controller %d at epoch %d after the expired one came back, want 2 at %d", ctl.id, ctl.loop.Epoch(), next)
	}
}

// An operator deleting /controller forces an election: the controller
// resigns, is elected again at a higher epoch, loads the cluster and tells
// the brokers at that epoch.
func TestControllerLoopReelection(t *testing.T) {
	requireZK(t)
	chroot := zktest.Chroot()
	f := newFakeBrokers()
	b := startTestBroker(t, chroot, 1, f)
	waitController(t, []*testBroker{b}, 0)
	epoch := b.loop.Epoch()
	admin := connect(t, chroot)
	if err := admin.conn.Delete(admin.abs(ControllerPath), -1); err != nil {
		t.Fatal(err)
	}
	waitController(t, []*testBroker{b}, epoch)
	next := b.loop.Epoch()
	f.waitFor(t, "UpdateMetadata at the new epoch", func(got []delivered) bool {
		_, _, live := views(got, 1, next)
		return slices.Equal(live, []int32{1})
	})
}

// Writes of a controller deposed by a later election fail as
// ErrControllerMoved, batched or alone, and change nothing.
func TestControllerWritesFenced(t *testing.T) {
	chroot := zktest.Chroot()
	a, b := connect(t, chroot), connect(t, chroot)
	if err := a.EnsurePersistentPaths(); err != nil {
		t.Fatal(err)
	}
	old, err := a.Elect(1)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.conn.Delete(a.abs(ControllerPath), -1); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Elect(2); err != nil {
		t.Fatal(err)
	}
	var ws []controller.Write
	for p := range 3 {
		ws = append(ws, controller.Write{Op: controller.CreateState, Topic: "t", Partition: int32(p),
			State: controller.PartitionState{Leader: 1, ISR: []int32{1}, ControllerEpoch: old.Epoch}})
	}
	for _, batch := range batchStates(ws, func(string) bool { return false }) {
		for _, r := range a.writeStates(old, batch) {
			if !errors.Is(r.Err, controller.ErrControllerMoved) {
				t.Errorf("%s-%d: %v", r.Write.Topic, r.Write.Partition, r.Err)
			}
		}
	}
	r := a.writeTopic(old, controller.Write{Op: controller.RemoveDeleteMarker, Topic: "t"})
	if !errors.Is(r.Err, controller.ErrControllerMoved) {
		t.Errorf("RemoveDeleteMarker: %v", r.Err)
	}
	if ok, _, err := a.conn.Exists(a.abs(PartitionsPath("t"))); ok || err != nil {
		t.Errorf("a deposed controller's write landed: %v %v", ok, err)
	}
}

// A state write that finds the znode not as expected is a conflict with
// the znode read back: a create of one that exists (its batch redone write
// by write, so the others succeed), an update at a stale version, an
// update of one that is gone.
func TestControllerWritesConflict(t *testing.T) {
	chroot := zktest.Chroot()
	c := connect(t, chroot)
	if err := c.EnsurePersistentPaths(); err != nil {
		t.Fatal(err)
	}
	e, err := c.Elect(1)
	if err != nil {
		t.Fatal(err)
	}
	theirs := PartitionState{Leader: 2, LeaderEpoch: 5, ISR: []int32{2}, ControllerEpoch: e.Epoch}
	if err := c.createParents(PartitionPath("t", 1), false); err != nil {
		t.Fatal(err)
	}
	if _, err := c.conn.Create(c.abs(PartitionStatePath("t", 1)), EncodePartitionState(theirs), 0, openACL); err != nil {
		t.Fatal(err)
	}
	create := func(p int32) controller.Write {
		return controller.Write{Op: controller.CreateState, Topic: "t", Partition: p,
			State: controller.PartitionState{Leader: 1, ISR: []int32{1}, ControllerEpoch: e.Epoch}}
	}
	ws := []controller.Write{create(0), create(1), create(2)}
	bs := batchStates(ws, func(string) bool { return false })
	if len(bs) != 1 {
		t.Fatalf("%d batches", len(bs))
	}
	rs := c.writeStates(e, bs[0])
	for i, r := range rs {
		switch {
		case i == 1:
			if !errors.Is(r.Err, controller.ErrConflict) || r.Current == nil || r.Current.Leader != 2 || r.Current.LeaderEpoch != 5 || r.Current.PartitionEpoch != 0 {
				t.Errorf("create over an existing state: %v, current %+v", r.Err, r.Current)
			}
		case r.Err != nil || r.Version != 0:
			t.Errorf("t-%d: %v, version %d", i, r.Err, r.Version)
		}
	}

	update := controller.Write{Op: controller.UpdateState, Topic: "t", Partition: 0,
		State: controller.PartitionState{Leader: 1, LeaderEpoch: 1, ISR: []int32{1}, ControllerEpoch: e.Epoch}}
	if r := c.writeStates(e, batchStates([]controller.Write{update}, nil)[0])[0]; r.Err != nil || r.Version != 1 {
		t.Fatalf("update: %v, version %d", r.Err, r.Version)
	}
	r := c.writeStates(e, batchStates([]controller.Write{update}, nil)[0])[0] // at version 0 again
	if !errors.Is(r.Err, controller.ErrConflict) || r.Current == nil || r.Current.PartitionEpoch != 1 || r.Current.LeaderEpoch != 1 {
		t.Errorf("update at a stale version: %v, current %+v", r.Err, r.Current)
	}
	if err := c.conn.Delete(c.abs(PartitionStatePath("t", 2)), -1); err != nil {
		t.Fatal(err)
	}
	update.Partition = 2
	r = c.writeStates(e, batchStates([]controller.Write{update}, nil)[0])[0]
	if !errors.Is(r.Err, controller.ErrConflict) || r.Current != nil {
		t.Errorf("update of a deleted state: %v, current %+v", r.Err, r.Current)
	}
}
