package group

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// partitioned opens a NewPartitioned coordinator over f's store (through
// a gatedStore) and clock: a second broker sharing __consumer_offsets
// with f's coordinator.
func (f *fixture) partitioned() (*fixture, *gatedStore) {
	gs := newGatedStore(f.store)
	c := NewPartitioned(f.config(), gs)
	f.t.Cleanup(c.Close)
	return &fixture{t: f.t, clock: f.clock, store: f.store, c: c}, gs
}

// load loads a partition, letting its read finish at once.
func (f *fixture) load(gs *gatedStore, partition, epoch int32) {
	f.t.Helper()
	f.c.Load(partition, epoch)
	close(gs.nextRead(f.t))
	if err := waitLoaded(f.c, partition); err != nil {
		f.t.Fatalf("load of partition %d at epoch %d: %v", partition, epoch, err)
	}
}

func waitLoaded(c *Coordinator, partition int32) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return c.WaitLoaded(ctx, partition)
}

// groupOn is a group id on a partition of the default 50.
func groupOn(partition int32, prefix string) string {
	for i := 0; ; i++ {
		if id := fmt.Sprint(prefix, i); PartitionFor(id, 50) == partition {
			return id
		}
	}
}

func (s *memStore) count(p int32) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.parts[p])
}

func listGroups(c *Coordinator) (int16, []string) {
	req := kmsg.NewPtrListGroupsRequest()
	req.Version = 4
	resp := c.ListGroups(req)
	var ids []string
	for _, g := range resp.Groups {
		ids = append(ids, g.Group)
	}
	return resp.ErrorCode, ids
}

func describe(c *Coordinator, id string) kmsg.DescribeGroupsResponseGroup {
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups = []string{id}
	return c.DescribeGroups(req).Groups[0]
}

// refused checks that every request API answers want for group, in the
// shape Kafka gives each (while loading, Heartbeat answers blindly and
// SyncGroup REBALANCE_IN_PROGRESS, as Kafka's handlers do).
func refused(t *testing.T, c *Coordinator, group, member string, gen int32, want *kerr.Error) {
	t.Helper()
	wantSync, wantHeartbeat := want, want
	if want == kerr.CoordinatorLoadInProgress {
		wantSync, wantHeartbeat = kerr.RebalanceInProgress, nil
	}
	ch, r := c.startJoin(joinReq(group, member, nil), "client", "/127.0.0.1")
	if ch != nil {
		t.Fatal("JoinGroup parked")
	}
	code(t, "JoinGroup", r.err, want)
	ch, r = c.startJoin(joinReq(group, "", nil), "client", "/127.0.0.1")
	if ch != nil || r.memberID != "" {
		t.Fatalf("JoinGroup of a new member: parked %v, %+v", ch != nil, r)
	}
	code(t, "JoinGroup of a new member", r.err, want)
	sch, sr := c.startSync(syncReq(group, member, gen, nil))
	if sch != nil {
		t.Fatal("SyncGroup parked")
	}
	code(t, "SyncGroup", sr.err, wantSync)
	code(t, "Heartbeat", hb(c, group, member, gen), wantHeartbeat)

	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.Version, leave.Group = 4, group
	lm := kmsg.NewLeaveGroupRequestMember()
	lm.MemberID = member
	leave.Members = append(leave.Members, lm)
	if resp := c.LeaveGroup(leave); resp.ErrorCode != want.Code || len(resp.Members) != 0 {
		t.Errorf("LeaveGroup: %v with %d members, want %v and none", kerr.ErrorForCode(resp.ErrorCode), len(resp.Members), want)
	}

	// Partitions of unknown topics are refused before the group is looked at.
	commit := c.OffsetCommit(commitReq(group, member, gen, 99, 0, 6)).Topics[0].Partitions
	code(t, "OffsetCommit", commit[0].ErrorCode, want)
	code(t, "OffsetCommit of an unknown partition", commit[1].ErrorCode, kerr.UnknownTopicOrPartition)

	f8 := kmsg.NewPtrOffsetFetchRequest()
	f8.Version = 8
	rg := kmsg.NewOffsetFetchRequestGroup()
	rg.Group = group
	f8.Groups = append(f8.Groups, rg)
	if g := c.OffsetFetch(f8).Groups[0]; g.ErrorCode != want.Code || len(g.Topics) != 0 {
		t.Errorf("OffsetFetch v8: %v with %d topics, want %v and none", kerr.ErrorForCode(g.ErrorCode), len(g.Topics), want)
	}
	for _, v := range []int16{1, 5} {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version, req.Group = v, group
		rt := kmsg.NewOffsetFetchRequestTopic()
		rt.Topic, rt.Partitions = "t", []int32{0}
		req.Topics = append(req.Topics, rt)
		resp := c.OffsetFetch(req)
		if v >= 2 {
			if resp.ErrorCode != want.Code || len(resp.Topics) != 0 {
				t.Errorf("OffsetFetch v%d: %v with %d topics, want %v and none", v, kerr.ErrorForCode(resp.ErrorCode), len(resp.Topics), want)
			}
			continue
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("OffsetFetch v%d: %+v", v, resp.Topics)
		}
		if p := resp.Topics[0].Partitions[0]; p.ErrorCode != want.Code || p.Offset != -1 {
			t.Errorf("OffsetFetch v%d: partition %+v, want %v and offset -1", v, p, want)
		}
	}

	od := kmsg.NewPtrOffsetDeleteRequest()
	od.Group = group
	ot := kmsg.NewOffsetDeleteRequestTopic()
	ot.Topic = "t"
	op := kmsg.NewOffsetDeleteRequestTopicPartition()
	ot.Partitions = append(ot.Partitions, op)
	od.Topics = append(od.Topics, ot)
	code(t, "OffsetDelete", c.OffsetDelete(od).ErrorCode, want)

	if d := describe(c, group); d.ErrorCode != want.Code || d.State != "" || len(d.Members) != 0 {
		t.Errorf("DescribeGroups: %+v, want %v and no state", d, want)
	}
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Groups = []string{group}
	code(t, "DeleteGroups", c.DeleteGroups(del).Groups[0].ErrorCode, want)
}

// notServed checks that c neither owns nor loads group's partition and
// lists no group.
func notServed(t *testing.T, c *Coordinator, group, member string, gen int32) {
	t.Helper()
	p := PartitionFor(group, 50)
	if c.Loaded(p) {
		t.Errorf("partition %d Loaded", p)
	}
	refused(t, c, group, member, gen, kerr.NotCoordinator)
	if ec, groups := listGroups(c); ec != 0 || len(groups) != 0 {
		t.Errorf("ListGroups: %v, %v, want no error and no group", kerr.ErrorForCode(ec), groups)
	}
	if err := waitLoaded(c, p); !errors.Is(err, ErrNotOwned) {
		t.Errorf("WaitLoaded: %v, want ErrNotOwned", err)
	}
}

// A group committed by one coordinator is served by another only once the
// other has loaded its partition.
func TestLoadServesOnlyAfterLoad(t *testing.T) {
	f := newFixture(t)
	ids, gen := f.stableGroup("g", 1)
	for _, p := range f.c.OffsetCommit(commitReq("g", ids[0], gen, 42, 0, 3)).Topics[0].Partitions {
		code(t, "commit", p.ErrorCode, nil)
	}
	p := PartitionFor("g", 50)
	b, gs := f.partitioned()

	notServed(t, b.c, "g", ids[0], gen)

	b.c.Load(p, 1)
	read := gs.nextRead(t) // the records are read; the load is held here
	refused(t, b.c, "g", ids[0], gen, kerr.CoordinatorLoadInProgress)
	if ec, groups := listGroups(b.c); ec != kerr.CoordinatorLoadInProgress.Code || len(groups) != 0 {
		t.Errorf("ListGroups during a load: %v, %v", kerr.ErrorForCode(ec), groups)
	}
	refused(t, b.c, groupOn(p+1, "other"), "", -1, kerr.NotCoordinator)
	if b.c.Loaded(p) {
		t.Error("Loaded during the load")
	}

	close(read)
	if err := waitLoaded(b.c, p); err != nil {
		t.Fatal(err)
	}
	if !b.c.Loaded(p) {
		t.Error("not Loaded after WaitLoaded")
	}
	if got := fetch(b.c, "g", 0, 3); got[0].Offset != 42 || got[3].Offset != 42 || got[0].ErrorCode != 0 {
		t.Errorf("offsets after the load: %+v", got)
	}
	if d := describe(b.c, "g"); d.ErrorCode != 0 || d.State != "Stable" || len(d.Members) != 1 || d.Members[0].MemberID != ids[0] {
		t.Errorf("group after the load: %+v", d)
	}
	if ec, groups := listGroups(b.c); ec != 0 || !slices.Equal(groups, []string{"g"}) {
		t.Errorf("ListGroups after the load: %v, %v", kerr.ErrorForCode(ec), groups)
	}
	code(t, "heartbeat of the loaded member", hb(b.c, "g", ids[0], gen), nil)
}

// Unload answers parked requests NOT_COORDINATOR, forgets the groups and
// writes nothing; Load again serves what another coordinator committed
// meanwhile.
func TestUnload(t *testing.T) {
	f := newFixture(t)
	b, gs := f.partitioned()
	p := PartitionFor("g", 50)
	b.load(gs, p, 1)

	ids, gen := b.stableGroup("g", 1)
	code(t, "commit", b.c.OffsetCommit(commitReq("g", ids[0], gen, 42, 0)).Topics[0].Partitions[0].ErrorCode, nil)
	syncing := groupOn(p, "sync")
	order, gen2, _ := b.joinedGroup(syncing, 2)
	syncCh, r := b.c.startSync(syncReq(syncing, order[1], gen2, nil))
	if syncCh == nil {
		t.Fatalf("follower's SyncGroup not parked: %+v", r)
	}
	joining := groupOn(p, "join")
	_, joinCh := b.newMember(joining)
	written := f.store.count(p)

	b.c.Unload(p, 1)
	code(t, "parked JoinGroup", result(t, joinCh).err, kerr.NotCoordinator)
	code(t, "parked SyncGroup", result(t, syncCh).err, kerr.NotCoordinator)
	notServed(t, b.c, "g", ids[0], gen)
	refused(t, b.c, syncing, order[0], gen2, kerr.NotCoordinator)
	if n := b.c.DeleteTopicOffsets("t"); n != 0 {
		t.Errorf("DeleteTopicOffsets removed %d offsets of an unloaded partition", n)
	}
	// Every timer of the unloaded groups would have fired by now, and every
	// offset expired.
	f.clock.Advance(8 * 24 * time.Hour)
	if n := b.c.ExpireOffsets(); n != 0 {
		t.Errorf("ExpireOffsets removed %d offsets of an unloaded partition", n)
	}
	if n := f.store.count(p); n != written {
		t.Errorf("%d records written to the partition after Unload", n-written)
	}

	// Another coordinator leads the partition meanwhile and commits.
	code(t, "commit through the other coordinator", f.c.OffsetCommit(commitReq("g", "", -1, 77, 0)).Topics[0].Partitions[0].ErrorCode, nil)
	b.c.Load(p, 0)
	code(t, "fetch after a stale Load", fetchGroupCode(b.c, "g"), kerr.NotCoordinator)
	b.load(gs, p, 2)
	if got := fetch(b.c, "g", 0); got[0].Offset != 77 {
		t.Errorf("offset after loading again: %+v", got[0])
	}
	b.c.Unload(p, 1)
	if !b.c.Loaded(p) {
		t.Error("an Unload older than the Load unloaded the partition")
	}
	b.c.Unload(p, -2) // StopReplica deleting the partition, without an epoch
	if b.c.Loaded(p) {
		t.Error("Loaded after an Unload without an epoch")
	}
	b.load(gs, p, 2) // the recorded epoch is still 2
}

func fetchGroupCode(c *Coordinator, group string) int16 {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = 8
	rg := kmsg.NewOffsetFetchRequestGroup()
	rg.Group = group
	req.Groups = append(req.Groups, rg)
	return c.OffsetFetch(req).Groups[0].ErrorCode
}

// A load that an Unload overtook does not bring its groups back, whether
// it is stopped while reading or completes after the Unload.
func TestStaleLoadIsDiscarded(t *testing.T) {
	for _, tc := range []struct {
		name   string
		before bool
	}{{"completes after the unload", false}, {"reads after the unload", true}} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			ids, gen := f.stableGroup("g", 1)
			f.c.OffsetCommit(commitReq("g", ids[0], gen, 42, 0))
			p := PartitionFor("g", 50)
			b, gs := f.partitioned()
			gs.before = tc.before

			b.c.Load(p, 1)
			read := gs.nextRead(t)
			b.c.Unload(p, 1)
			close(read)
			b.c.loads.Wait()
			notServed(t, b.c, "g", ids[0], gen)
		})
	}
}

// A newer Load during a load restarts it; the older read's result is
// discarded even when it completes last.
func TestNewerLoadSupersedes(t *testing.T) {
	f := newFixture(t)
	ids, gen := f.stableGroup("g", 1)
	f.c.OffsetCommit(commitReq("g", ids[0], gen, 42, 0))
	p := PartitionFor("g", 50)
	b, gs := f.partitioned()

	b.c.Load(p, 1)
	first := gs.nextRead(t) // has read offset 42
	f.c.OffsetCommit(commitReq("g", ids[0], gen, 43, 0))
	b.c.Load(p, 2)
	second := gs.nextRead(t) // has read offset 43
	close(second)
	if err := waitLoaded(b.c, p); err != nil {
		t.Fatal(err)
	}
	close(first)
	b.c.loads.Wait()
	if got := fetch(b.c, "g", 0); got[0].Offset != 43 {
		t.Errorf("offset after the older load completed last: %d, want 43", got[0].Offset)
	}
}

// A failed read leaves the partition unowned, reports the error, and a
// Load at the same epoch tries again.
func TestLoadFailure(t *testing.T) {
	f := newFixture(t)
	b, gs := f.partitioned()
	p := PartitionFor("g", 50)
	gs.readErr, gs.before = errInjected, true
	b.c.Load(p, 1)
	close(gs.nextRead(t))
	if err := waitLoaded(b.c, p); !errors.Is(err, errInjected) {
		t.Fatalf("WaitLoaded after a failed read: %v", err)
	}
	code(t, "fetch after a failed load", fetchGroupCode(b.c, "g"), kerr.NotCoordinator)
	gs.readErr = nil
	b.load(gs, p, 1)
	code(t, "fetch after the retry", fetchGroupCode(b.c, "g"), nil)
}

// An append refused because this broker no longer leads the partition is
// answered NOT_COORDINATOR: the client looks for the new coordinator.
func TestAppendNotLeader(t *testing.T) {
	f := newFixture(t)
	ids, gen := f.stableGroup("g", 1)
	notLeader := fmt.Errorf("broker: append to __consumer_offsets-%d: %w", PartitionFor("g", 50), ErrNotLeader)
	f.store.fail = notLeader
	code(t, "OffsetCommit", f.c.OffsetCommit(commitReq("g", ids[0], gen, 1)).Topics[0].Partitions[0].ErrorCode, kerr.NotCoordinator)
	f.store.fail = errInjected
	code(t, "OffsetCommit, other store error", f.c.OffsetCommit(commitReq("g", ids[0], gen, 1)).Topics[0].Partitions[0].ErrorCode, kerr.CoordinatorNotAvailable)

	// The leader's SyncGroup stores the assignment before handing it out.
	f.store.fail = nil
	order, gen2, assign := f.joinedGroup("h", 2)
	follower, r := f.c.startSync(syncReq("h", order[1], gen2, nil))
	if follower == nil {
		t.Fatalf("follower's SyncGroup not parked: %+v", r)
	}
	f.store.fail = notLeader
	leader, _ := f.c.startSync(syncReq("h", order[0], gen2, assign))
	code(t, "leader's SyncGroup", result(t, leader).err, kerr.NotCoordinator)
	code(t, "follower's SyncGroup", result(t, follower).err, kerr.NotCoordinator)
}

// Loads and unloads racing requests: no commit answered NONE is lost, no
// parked request is left hanging, and go test -race finds nothing.
func TestOwnershipChurn(t *testing.T) {
	f := newFixture(t)
	c := NewPartitioned(f.config(), f.store)
	t.Cleanup(c.Close)
	p := PartitionFor("g", 50)
	joining := groupOn(p, "join")

	stop := make(chan struct{})
	done := make(chan struct{}, 2)
	var lastCommitted int64 = -1
	var commits atomic.Int64 // answered NONE
	// Commits, one at a time, with increasing offsets.
	go func() {
		defer func() { done <- struct{}{} }()
		for n := int64(1); ; n++ {
			select {
			case <-stop:
				return
			default:
			}
			if c.OffsetCommit(commitReq("g", "", -1, n, 0)).Topics[0].Partitions[0].ErrorCode == 0 {
				lastCommitted = n
				commits.Add(1)
			}
			fetchGroupCode(c, "g")
			listGroups(c)
		}
	}()
	// Joins that park until an Unload answers them.
	go func() {
		defer func() { done <- struct{}{} }()
		for {
			select {
			case <-stop:
				return
			default:
			}
			ch, r := c.startJoin(joinReq(joining, "", nil), "client", "/127.0.0.1")
			if ch == nil && r.err == kerr.MemberIDRequired.Code {
				ch, _ = c.startJoin(joinReq(joining, r.memberID, nil), "client", "/127.0.0.1")
			}
			if ch != nil {
				select {
				case <-ch:
				case <-time.After(10 * time.Second):
					t.Error("a parked JoinGroup was never answered")
					return
				}
			}
		}
	}()
	epoch := int32(0)
	deadline := time.Now().Add(10 * time.Second)
	// Until both the churn and the commits that succeed in it are many.
	for i := 0; i < 200 || commits.Load() < 20; i++ {
		if time.Now().After(deadline) {
			t.Fatalf("%d commits answered NONE in %d loads", commits.Load(), i)
		}
		epoch++
		c.Load(p, epoch)
		if i%2 == 0 {
			if err := waitLoaded(c, p); err != nil {
				t.Fatal(err)
			}
			runtime.Gosched()
		}
		c.Unload(p, epoch)
	}
	close(stop)
	for range 2 {
		result(t, done)
	}
	c.loads.Wait()
	c.Load(p, epoch+1)
	if err := waitLoaded(c, p); err != nil {
		t.Fatal(err)
	}
	if got := fetch(c, "g", 0)[0].Offset; got != lastCommitted {
		t.Errorf("offset after the churn: %d, last commit answered NONE: %d", got, lastCommitted)
	}
}
