package group

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	session   = 10 * time.Second
	rebalance = 30 * time.Second
	delay     = 3 * time.Second
)

type fixture struct {
	t     *testing.T
	clock *manualClock
	store *memStore
	c     *Coordinator
}

func newFixture(t *testing.T) *fixture {
	f := &fixture{t: t, clock: newManualClock(), store: newMemStore()}
	f.c = f.open()
	return f
}

func (f *fixture) config() Config {
	return Config{
		Clock:  f.clock,
		Logger: testLogger(),
		Topics: func(topic string) (int32, bool) {
			if topic == "t" {
				return 6, true
			}
			return 0, false
		},
	}
}

func (f *fixture) open() *Coordinator {
	f.t.Helper()
	c, err := New(f.config(), f.store)
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(c.Close)
	return c
}

func joinReq(group, memberID string, instanceID *string, protocols ...string) *kmsg.JoinGroupRequest {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Version = 9
	req.Group, req.MemberID, req.InstanceID = group, memberID, instanceID
	req.SessionTimeoutMillis = int32(session.Milliseconds())
	req.RebalanceTimeoutMillis = int32(rebalance.Milliseconds())
	req.ProtocolType = "consumer"
	if len(protocols) == 0 {
		protocols = []string{"range"}
	}
	for _, p := range protocols {
		rp := kmsg.NewJoinGroupRequestProtocol()
		meta := kmsg.NewConsumerMemberMetadata()
		meta.Topics = []string{"t"}
		rp.Name, rp.Metadata = p, meta.AppendTo(nil)
		req.Protocols = append(req.Protocols, rp)
	}
	return req
}

// result waits for a parked answer; the bound only turns a hang into a
// failure.
func result[T any](t *testing.T, ch chan T) T {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("parked request never answered")
	}
	panic("unreachable")
}

func notYet[T any](t *testing.T, what string, ch chan T) {
	t.Helper()
	select {
	case r := <-ch:
		t.Fatalf("%s answered early: %+v", what, r)
	default:
	}
}

func code(t *testing.T, what string, got int16, want *kerr.Error) {
	t.Helper()
	var w int16
	if want != nil {
		w = want.Code
	}
	if got != w {
		t.Errorf("%s: %v, want %v", what, kerr.ErrorForCode(got), want)
	}
}

// newMember runs the KIP-394 handshake: MEMBER_ID_REQUIRED, then a parked
// join with the id.
func (f *fixture) newMember(group string) (string, chan joinResult) {
	f.t.Helper()
	ch, r := f.c.startJoin(joinReq(group, "", nil), "client", "/127.0.0.1")
	if ch != nil || r.err != kerr.MemberIDRequired.Code || r.memberID == "" {
		f.t.Fatalf("first join: %+v", r)
	}
	ch, r = f.c.startJoin(joinReq(group, r.memberID, nil), "client", "/127.0.0.1")
	if ch == nil {
		f.t.Fatalf("join with the given id was not parked: %+v", r)
	}
	return r.memberID, ch
}

func (f *fixture) state(group string) string {
	g, _ := f.c.getGroup(group, false)
	if g == nil {
		return "none"
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.state.String()
}

func syncReq(group, memberID string, generation int32, assignments map[string]string) *kmsg.SyncGroupRequest {
	req := kmsg.NewPtrSyncGroupRequest()
	req.Version = 5
	req.Group, req.MemberID, req.Generation = group, memberID, generation
	for id, a := range assignments {
		ra := kmsg.NewSyncGroupRequestGroupAssignment()
		ra.MemberID, ra.MemberAssignment = id, []byte(a)
		req.GroupAssignment = append(req.GroupAssignment, ra)
	}
	return req
}

func hb(c *Coordinator, group, memberID string, generation int32) int16 {
	req := kmsg.NewPtrHeartbeatRequest()
	req.Group, req.MemberID, req.Generation = group, memberID, generation
	return c.Heartbeat(req).ErrorCode
}

// stableGroup brings n members to Stable and returns their ids (the
// leader first) and the generation.
func (f *fixture) stableGroup(group string, n int) ([]string, int32) {
	f.t.Helper()
	order, gen, assign := f.joinedGroup(group, n)
	var syncs []chan syncResult
	for _, id := range order[1:] {
		ch, r := f.c.startSync(syncReq(group, id, gen, nil))
		if ch == nil {
			f.t.Fatalf("follower sync not parked: %+v", r)
		}
		syncs = append(syncs, ch)
	}
	ch, _ := f.c.startSync(syncReq(group, order[0], gen, assign))
	syncs = append([]chan syncResult{ch}, syncs...)
	for i, ch := range syncs {
		r := result(f.t, ch)
		if r.err != 0 || string(r.assignment) != assign[order[i]] {
			f.t.Fatalf("sync of %s: %+v", order[i], r)
		}
	}
	if s := f.state(group); s != "Stable" {
		f.t.Fatalf("state %s after every sync", s)
	}
	return order, gen
}

// joinedGroup brings n members through JoinGroup to CompletingRebalance
// and returns their ids (the leader first), the generation and an
// assignment for the leader to send.
func (f *fixture) joinedGroup(group string, n int) ([]string, int32, map[string]string) {
	f.t.Helper()
	ids := make([]string, n)
	chs := make([]chan joinResult, n)
	for i := range n {
		ids[i], chs[i] = f.newMember(group)
	}
	for i := range n {
		notYet(f.t, fmt.Sprintf("join %d during the initial delay", i), chs[i])
	}
	// Each member joining during the initial delay extends it once more
	// (Kafka's InitialDelayedJoin).
	f.clock.Advance(delay)
	if n > 1 {
		for i := range n {
			notYet(f.t, fmt.Sprintf("join %d after one delay, with members joining during it", i), chs[i])
		}
		f.clock.Advance(delay)
	}
	results := make([]joinResult, n)
	var leader string
	for i := range n {
		results[i] = result(f.t, chs[i])
		if results[i].err != 0 {
			f.t.Fatalf("join %d: %v", i, kerr.ErrorForCode(results[i].err))
		}
		leader = results[i].leader
	}
	gen := results[0].generation
	assign := map[string]string{}
	var order []string
	for i, r := range results {
		if r.generation != gen || r.leader != leader || r.protocolName != "range" {
			f.t.Fatalf("join %d: %+v, others got generation %d leader %s", i, r, gen, leader)
		}
		if (r.memberID == leader) != (len(r.members) == n) {
			f.t.Fatalf("join %d: member %s got %d member descriptions (leader %s)", i, r.memberID, len(r.members), leader)
		}
		assign[r.memberID] = "assignment of " + r.memberID
		if r.memberID == leader {
			order = append([]string{r.memberID}, order...)
		} else {
			order = append(order, r.memberID)
		}
	}
	return order, gen, assign
}

func TestRebalanceToStable(t *testing.T) {
	f := newFixture(t)
	ids, gen := f.stableGroup("g", 3)
	if gen != 1 {
		t.Errorf("generation %d, want 1", gen)
	}
	for _, id := range ids {
		code(t, "heartbeat", hb(f.c, "g", id, gen), nil)
	}
	d := kmsg.NewPtrDescribeGroupsRequest()
	d.Groups = []string{"g", "unknown"}
	resp := f.c.DescribeGroups(d)
	if g := resp.Groups[0]; g.State != "Stable" || g.Protocol != "range" || g.ProtocolType != "consumer" || len(g.Members) != 3 {
		t.Errorf("describe: %+v", g)
	}
	if g := resp.Groups[1]; g.State != "Dead" || len(g.Members) != 0 || g.ErrorCode != 0 {
		t.Errorf("describe unknown: %+v", g)
	}
	l := f.c.ListGroups(kmsg.NewPtrListGroupsRequest())
	if len(l.Groups) != 1 || l.Groups[0].Group != "g" || l.Groups[0].GroupState != "Stable" {
		t.Errorf("list: %+v", l.Groups)
	}
	lr := kmsg.NewPtrListGroupsRequest()
	lr.StatesFilter = []string{"empty"}
	if l := f.c.ListGroups(lr); len(l.Groups) != 0 {
		t.Errorf("list Empty groups: %+v", l.Groups)
	}
}

func TestSessionExpiryRebalances(t *testing.T) {
	f := newFixture(t)
	ids, gen := f.stableGroup("g", 3)
	// ids[2] stops heartbeating; the others keep theirs going.
	f.clock.Advance(session / 2)
	code(t, "heartbeat 0", hb(f.c, "g", ids[0], gen), nil)
	code(t, "heartbeat 1", hb(f.c, "g", ids[1], gen), nil)
	f.clock.Advance(session/2 - time.Millisecond)
	if s := f.state("g"); s != "Stable" {
		t.Fatalf("state %s before any session ended", s)
	}
	f.clock.Advance(time.Millisecond) // ids[2]'s session ends
	if s := f.state("g"); s != "PreparingRebalance" {
		t.Fatalf("state %s after a member's session expired", s)
	}
	code(t, "heartbeat of the expired member", hb(f.c, "g", ids[2], gen), kerr.UnknownMemberID)
	code(t, "heartbeat during the rebalance", hb(f.c, "g", ids[1], gen), kerr.RebalanceInProgress)
	// The two left rejoin: the rebalance completes at once.
	ch0, _ := f.c.startJoin(joinReq("g", ids[0], nil), "c", "h")
	notYet(t, "join of one of two", ch0)
	ch1, _ := f.c.startJoin(joinReq("g", ids[1], nil), "c", "h")
	r0, r1 := result(t, ch0), result(t, ch1)
	if r0.err != 0 || r1.err != 0 || r0.generation != gen+1 || r1.generation != gen+1 {
		t.Fatalf("rejoin: %+v %+v", r0, r1)
	}
	if s := f.state("g"); s != "CompletingRebalance" {
		t.Errorf("state %s", s)
	}
	// Commits are refused until the assignment is out.
	cr := commitReq("g", ids[0], gen+1, 5)
	code(t, "commit while completing", f.c.OffsetCommit(cr).Topics[0].Partitions[0].ErrorCode, kerr.RebalanceInProgress)
}

func TestLeaveRebalancesAtOnce(t *testing.T) {
	f := newFixture(t)
	ids, gen := f.stableGroup("g", 2)
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Version = 5
	req.Group = "g"
	lm := kmsg.NewLeaveGroupRequestMember()
	lm.MemberID = ids[1]
	unknown := kmsg.NewLeaveGroupRequestMember()
	unknown.MemberID = "nobody"
	req.Members = []kmsg.LeaveGroupRequestMember{lm, unknown}
	resp := f.c.LeaveGroup(req)
	code(t, "leave", resp.ErrorCode, nil)
	code(t, "leaving member", resp.Members[0].ErrorCode, nil)
	code(t, "unknown member", resp.Members[1].ErrorCode, kerr.UnknownMemberID)
	if s := f.state("g"); s != "PreparingRebalance" {
		t.Fatalf("state %s after a leave", s)
	}
	ch, _ := f.c.startJoin(joinReq("g", ids[0], nil), "c", "h")
	r := result(t, ch)
	if r.err != 0 || r.generation != gen+1 || r.leader != ids[0] || len(r.members) != 1 {
		t.Fatalf("rejoin: %+v", r)
	}
	// The last member leaves (v0 request): the group is Empty.
	sch, _ := f.c.startSync(syncReq("g", ids[0], gen+1, map[string]string{ids[0]: "all"}))
	result(t, sch)
	v0 := kmsg.NewPtrLeaveGroupRequest()
	v0.Group, v0.MemberID = "g", ids[0]
	code(t, "v0 leave", f.c.LeaveGroup(v0).ErrorCode, nil)
	if s := f.state("g"); s != "Empty" {
		t.Errorf("state %s after the last member left", s)
	}
	code(t, "v0 leave again", f.c.LeaveGroup(v0).ErrorCode, kerr.UnknownMemberID)
}

func TestRebalanceTimeoutRemovesLaggards(t *testing.T) {
	f := newFixture(t)
	ids, gen := f.stableGroup("g", 2)
	// The leader rejoins (forcing a rebalance); the follower never does
	// but keeps heartbeating until it learns of it.
	ch, _ := f.c.startJoin(joinReq("g", ids[0], nil), "c", "h")
	// Heartbeats every 5 s keep the follower's session (10 s) alive until
	// the rebalance timeout (30 s) ends the join without it.
	step := session / 2
	for waited := time.Duration(0); waited < rebalance; {
		code(t, "follower heartbeat", hb(f.c, "g", ids[1], gen), kerr.RebalanceInProgress)
		d := min(step, rebalance-time.Millisecond-waited)
		if d == 0 {
			break
		}
		f.clock.Advance(d)
		waited += d
		notYet(t, "join before the rebalance timeout", ch)
	}
	f.clock.Advance(time.Millisecond)
	r := result(t, ch)
	if r.err != 0 || r.generation != gen+1 || len(r.members) != 1 {
		t.Fatalf("join after the timeout: %+v", r)
	}
	code(t, "laggard heartbeat", hb(f.c, "g", ids[1], gen), kerr.UnknownMemberID)
}

func TestStaticMemberRestartKeepsAssignment(t *testing.T) {
	f := newFixture(t)
	inst := []string{"i0", "i1"}
	chs := make([]chan joinResult, 2)
	for i := range 2 {
		ch, r := f.c.startJoin(joinReq("g", "", &inst[i]), "c", "h")
		if ch == nil {
			t.Fatalf("static join was not parked (no MEMBER_ID_REQUIRED for static members): %+v", r)
		}
		chs[i] = ch
	}
	f.clock.Advance(2 * delay)
	r0, r1 := result(t, chs[0]), result(t, chs[1])
	leader, follower := r0, r1
	if r1.memberID == r0.leader {
		leader, follower = r1, r0
	}
	gen := leader.generation
	fch, _ := f.c.startSync(syncReq("g", follower.memberID, gen, nil))
	lch, _ := f.c.startSync(syncReq("g", leader.memberID, gen, map[string]string{leader.memberID: "L", follower.memberID: "F"}))
	result(t, lch)
	result(t, fch)

	// The follower restarts: a join with its instance id and no member id.
	finst := inst[0]
	if follower.memberID == r1.memberID {
		finst = inst[1]
	}
	ch, r := f.c.startJoin(joinReq("g", "", &finst), "c", "h")
	if ch == nil {
		t.Fatalf("restart join: %+v", r)
	}
	r = result(t, ch)
	if r.err != 0 || r.generation != gen || r.memberID == follower.memberID {
		t.Fatalf("restart join: %+v (old id %s, generation %d)", r, follower.memberID, gen)
	}
	if s := f.state("g"); s != "Stable" {
		t.Errorf("state %s after a static restart: it must not rebalance", s)
	}
	sch, s := f.c.startSync(syncReq("g", r.memberID, gen, nil))
	if sch != nil {
		t.Fatal("sync in a Stable group was parked")
	}
	if s.err != 0 || string(s.assignment) != "F" {
		t.Errorf("restarted member's assignment: %+v", s)
	}
	// The old incarnation is fenced.
	hr := kmsg.NewPtrHeartbeatRequest()
	hr.Group, hr.MemberID, hr.Generation, hr.InstanceID = "g", follower.memberID, gen, &finst
	code(t, "old incarnation heartbeat", f.c.Heartbeat(hr).ErrorCode, kerr.FencedInstanceID)
	code(t, "leader heartbeat", hb(f.c, "g", leader.memberID, gen), nil)
}

func TestJoinAndSyncErrors(t *testing.T) {
	f := newFixture(t)
	ids, gen := f.stableGroup("g", 1)
	ch, r := f.c.startJoin(joinReq("", "", nil), "c", "h")
	if ch != nil {
		t.Fatal("join of the empty group id parked")
	}
	code(t, "join empty group id", r.err, kerr.InvalidGroupID)
	short := joinReq("g", "", nil)
	short.SessionTimeoutMillis = 1000
	_, r = f.c.startJoin(short, "c", "h")
	code(t, "session timeout below the minimum", r.err, kerr.InvalidSessionTimeout)
	_, r = f.c.startJoin(joinReq("nope", "someone", nil), "c", "h")
	code(t, "join an unknown group with a member id", r.err, kerr.UnknownMemberID)
	other := joinReq("g", "", nil)
	other.ProtocolType = "connect"
	_, r = f.c.startJoin(other, "c", "h")
	code(t, "another protocol type", r.err, kerr.InconsistentGroupProtocol)
	_, r = f.c.startJoin(joinReq("g", "", nil, "roundrobin"), "c", "h")
	code(t, "no common protocol", r.err, kerr.InconsistentGroupProtocol)

	_, s := f.c.startSync(syncReq("", ids[0], gen, nil))
	code(t, "sync empty group id", s.err, kerr.InvalidGroupID)
	_, s = f.c.startSync(syncReq("nope", ids[0], gen, nil))
	code(t, "sync unknown group", s.err, kerr.UnknownMemberID)
	_, s = f.c.startSync(syncReq("g", "nobody", gen, nil))
	code(t, "sync unknown member", s.err, kerr.UnknownMemberID)
	_, s = f.c.startSync(syncReq("g", ids[0], gen+1, nil))
	code(t, "sync wrong generation", s.err, kerr.IllegalGeneration)
	bad := syncReq("g", ids[0], gen, nil)
	wrong := "roundrobin"
	bad.Protocol = &wrong
	_, s = f.c.startSync(bad)
	code(t, "sync wrong protocol", s.err, kerr.InconsistentGroupProtocol)

	code(t, "heartbeat empty group id", hb(f.c, "", ids[0], gen), kerr.InvalidGroupID)
	code(t, "heartbeat unknown group", hb(f.c, "nope", ids[0], gen), kerr.UnknownMemberID)
	code(t, "heartbeat stale generation", hb(f.c, "g", ids[0], gen-1), kerr.IllegalGeneration)
	code(t, "heartbeat unknown member", hb(f.c, "g", "nobody", gen), kerr.UnknownMemberID)
}

func commitReq(group, memberID string, generation int32, offset int64, partitions ...int32) *kmsg.OffsetCommitRequest {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version = 9
	req.Group, req.MemberID, req.Generation = group, memberID, generation
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = "t"
	if len(partitions) == 0 {
		partitions = []int32{0}
	}
	for _, p := range partitions {
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch = p, offset, 7
		md := fmt.Sprintf("md%d", p)
		rp.Metadata = &md
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

func fetch(c *Coordinator, group string, partitions ...int32) map[int32]kmsg.OffsetFetchResponseGroupTopicPartition {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = 8
	rg := kmsg.NewOffsetFetchRequestGroup()
	rg.Group = group
	if partitions != nil {
		rt := kmsg.NewOffsetFetchRequestGroupTopic()
		rt.Topic, rt.Partitions = "t", partitions
		rg.Topics = append(rg.Topics, rt)
	}
	req.Groups = append(req.Groups, rg)
	out := map[int32]kmsg.OffsetFetchResponseGroupTopicPartition{}
	for _, t := range c.OffsetFetch(req).Groups[0].Topics {
		for _, p := range t.Partitions {
			out[p.Partition] = p
		}
	}
	return out
}

func TestOffsetCommitAndFetch(t *testing.T) {
	f := newFixture(t)
	ids, gen := f.stableGroup("g", 1)
	resp := f.c.OffsetCommit(commitReq("g", ids[0], gen, 42, 0, 3))
	for _, p := range resp.Topics[0].Partitions {
		code(t, fmt.Sprint("commit partition ", p.Partition), p.ErrorCode, nil)
	}
	got := fetch(f.c, "g", 0, 3, 5)
	if p := got[0]; p.Offset != 42 || p.LeaderEpoch != 7 || *p.Metadata != "md0" {
		t.Errorf("fetched %+v", p)
	}
	if p := got[5]; p.Offset != -1 || p.ErrorCode != 0 {
		t.Errorf("uncommitted partition: %+v", p)
	}
	if all := fetch(f.c, "g"); len(all) != 2 || all[3].Offset != 42 {
		t.Errorf("all offsets: %+v", all)
	}
	code(t, "stale generation", f.c.OffsetCommit(commitReq("g", ids[0], gen-1, 1)).Topics[0].Partitions[0].ErrorCode, kerr.IllegalGeneration)
	code(t, "unknown member", f.c.OffsetCommit(commitReq("g", "nobody", gen, 1)).Topics[0].Partitions[0].ErrorCode, kerr.UnknownMemberID)
	code(t, "non-member to a group with members", f.c.OffsetCommit(commitReq("g", "", -1, 1)).Topics[0].Partitions[0].ErrorCode, kerr.UnknownMemberID)
	code(t, "unknown partition", f.c.OffsetCommit(commitReq("g", ids[0], gen, 1, 6)).Topics[0].Partitions[0].ErrorCode, kerr.UnknownTopicOrPartition)
	big := commitReq("g", ids[0], gen, 1)
	md := string(make([]byte, 4097))
	big.Topics[0].Partitions[0].Metadata = &md
	code(t, "metadata too large", f.c.OffsetCommit(big).Topics[0].Partitions[0].ErrorCode, kerr.OffsetMetadataTooLarge)
	code(t, "commit with a generation to an unknown group", f.c.OffsetCommit(commitReq("new", "m", 3, 1)).Topics[0].Partitions[0].ErrorCode, kerr.IllegalGeneration)
	// A simple (unmanaged) commit creates an Empty group.
	code(t, "simple commit", f.c.OffsetCommit(commitReq("simple", "", -1, 9)).Topics[0].Partitions[0].ErrorCode, nil)
	if p := fetch(f.c, "simple", 0)[0]; p.Offset != 9 {
		t.Errorf("simple group offset %d", p.Offset)
	}
	if s := f.state("simple"); s != "Empty" {
		t.Errorf("simple group state %s", s)
	}
	f.store.fail = errInjected
	code(t, "store failure", f.c.OffsetCommit(commitReq("g", ids[0], gen, 100)).Topics[0].Partitions[0].ErrorCode, kerr.CoordinatorNotAvailable)
	f.store.fail = nil
	if p := fetch(f.c, "g", 0)[0]; p.Offset != 42 {
		t.Errorf("a failed commit changed the offset to %d", p.Offset)
	}
}

// Everything comes back from the store: offsets, and the Stable group with
// its members and assignments.
func TestReload(t *testing.T) {
	f := newFixture(t)
	ids, gen := f.stableGroup("g", 2)
	f.c.OffsetCommit(commitReq("g", ids[0], gen, 42, 0, 1))
	f.c.OffsetCommit(commitReq("g", ids[0], gen, 43, 1))
	f.c.OffsetCommit(commitReq("simple", "", -1, 5))
	f.c.Close()

	c := f.open()
	if got := fetch(c, "g", 0, 1); got[0].Offset != 42 || got[1].Offset != 43 || got[1].LeaderEpoch != 7 {
		t.Errorf("offsets after reload: %+v", got)
	}
	if got := fetch(c, "simple", 0); got[0].Offset != 5 {
		t.Errorf("simple group offset after reload: %+v", got)
	}
	d := kmsg.NewPtrDescribeGroupsRequest()
	d.Groups = []string{"g"}
	g := c.DescribeGroups(d).Groups[0]
	if g.State != "Stable" || len(g.Members) != 2 || string(g.Members[0].MemberAssignment) != "assignment of "+g.Members[0].MemberID {
		t.Errorf("group after reload: %+v", g)
	}
	f.c = c
	code(t, "heartbeat after reload", hb(c, "g", ids[1], gen), nil)
	// Members that never come back expire.
	f.clock.Advance(session + time.Second)
	if s := f.state("g"); s == "Stable" {
		t.Errorf("state %s after every member's session ended", s)
	}
}

func TestDeleteGroupsAndOffsets(t *testing.T) {
	f := newFixture(t)
	ids, gen := f.stableGroup("g", 1)
	f.c.OffsetCommit(commitReq("g", ids[0], gen, 42, 0, 1))
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Groups = []string{"g", "nope"}
	resp := f.c.DeleteGroups(del)
	code(t, "delete a group with members", resp.Groups[0].ErrorCode, kerr.NonEmptyGroup)
	code(t, "delete an unknown group", resp.Groups[1].ErrorCode, kerr.GroupIDNotFound)

	od := kmsg.NewPtrOffsetDeleteRequest()
	od.Group = "g"
	rt := kmsg.NewOffsetDeleteRequestTopic()
	rt.Topic = "t"
	rp := kmsg.NewOffsetDeleteRequestTopicPartition()
	rp.Partition = 1
	rt.Partitions = append(rt.Partitions, rp)
	od.Topics = append(od.Topics, rt)
	code(t, "offset delete of a subscribed topic", f.c.OffsetDelete(od).Topics[0].Partitions[0].ErrorCode, kerr.GroupSubscribedToTopic)

	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.Group, leave.MemberID = "g", ids[0]
	f.c.LeaveGroup(leave)
	odr := f.c.OffsetDelete(od)
	code(t, "offset delete in an Empty group", odr.ErrorCode, nil)
	code(t, "offset delete in an Empty group", odr.Topics[0].Partitions[0].ErrorCode, nil)
	if got := fetch(f.c, "g", 0, 1); got[1].Offset != -1 || got[0].Offset != 42 {
		t.Errorf("after deleting partition 1's offset: %+v", got)
	}
	resp = f.c.DeleteGroups(del)
	code(t, "delete the Empty group", resp.Groups[0].ErrorCode, nil)
	if got := fetch(f.c, "g", 0); got[0].Offset != -1 {
		t.Errorf("offsets after the group's deletion: %+v", got)
	}
	f.c.Close()
	c := f.open()
	if got := fetch(c, "g", 0); got[0].Offset != -1 {
		t.Errorf("offsets of the deleted group after reload: %+v", got)
	}
	if l := c.ListGroups(kmsg.NewPtrListGroupsRequest()); len(l.Groups) != 0 {
		t.Errorf("groups after reload: %+v", l.Groups)
	}
}

func TestOffsetsExpireWhenGroupStaysEmpty(t *testing.T) {
	f := newFixture(t)
	ids, gen := f.stableGroup("g", 1)
	f.c.OffsetCommit(commitReq("g", ids[0], gen, 42))
	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.Group, leave.MemberID = "g", ids[0]
	f.c.LeaveGroup(leave)
	f.clock.Advance(7*24*time.Hour - time.Minute)
	if got := fetch(f.c, "g", 0); got[0].Offset != 42 {
		t.Fatalf("offset expired early: %+v", got)
	}
	f.clock.Advance(11 * time.Minute) // past retention, and a check (every 10 minutes) after it
	if got := fetch(f.c, "g", 0); got[0].Offset != -1 {
		t.Errorf("offset after retention: %+v", got)
	}
	if s := f.state("g"); s != "none" {
		t.Errorf("group still there (%s) with no offsets and no members", s)
	}
	f.c.Close()
	if got := fetch(f.open(), "g", 0); got[0].Offset != -1 {
		t.Errorf("expired offset back after reload: %+v", got)
	}
}

// Kafka's partitionFor: Utils.abs(groupId.hashCode) % partitions.
func TestPartitionFor(t *testing.T) {
	for _, c := range []struct {
		group string
		want  int32
	}{
		{"", 0},
		{"a", 97 % 50},
		{"hello", 99162322 % 50},
		{"polygenelubricants", 0}, // hashCode is Integer.MIN_VALUE
		{"héllo", ((((104*31+233)*31+108)*31+108)*31 + 111) % 50},
	} {
		if got := PartitionFor(c.group, 50); got != c.want {
			t.Errorf("PartitionFor(%q) = %d, want %d", c.group, got, c.want)
		}
	}
}

func TestDeleteTopicOffsets(t *testing.T) {
	f := newFixture(t)
	f.c.OffsetCommit(commitReq("a", "", -1, 5, 0, 1))
	f.c.OffsetCommit(commitReq("b", "", -1, 6, 2))
	if n := f.c.DeleteTopicOffsets("t"); n != 3 {
		t.Errorf("removed %d offsets, want 3", n)
	}
	if n := f.c.DeleteTopicOffsets("t"); n != 0 {
		t.Errorf("removed %d offsets the second time", n)
	}
	f.c.Close()
	c := f.open()
	if got := fetch(c, "a", 0, 1); got[0].Offset != -1 || got[1].Offset != -1 {
		t.Errorf("offsets of a deleted topic after reload: %+v", got)
	}
}

// Outside Stable, DescribeGroups lists members without their metadata and
// assignments (Kafka's summaryNoMetadata).
func TestDescribeDuringRebalance(t *testing.T) {
	f := newFixture(t)
	ids, _ := f.stableGroup("g", 1)
	ch, _ := f.c.startJoin(joinReq("g", ids[0], nil), "c", "h") // the leader rejoins
	d := kmsg.NewPtrDescribeGroupsRequest()
	d.Groups = []string{"g"}
	g := f.c.DescribeGroups(d).Groups[0]
	// The only member rejoined: the join completes, the assignment is not out.
	if g.State != "CompletingRebalance" || len(g.Members) != 1 || g.Protocol != "" || len(g.Members[0].MemberAssignment) != 0 || len(g.Members[0].ProtocolMetadata) != 0 {
		t.Errorf("described during a rebalance: %+v", g)
	}
	result(t, ch)
}

// Records that are not the coordinator's (garbage, a newer record type)
// are skipped at load; the groups around them load.
func TestLoadSkipsForeignRecords(t *testing.T) {
	f := newFixture(t)
	f.c.OffsetCommit(commitReq("a", "", -1, 5))
	p := PartitionFor("a", 50)
	f.store.parts[p] = append(f.store.parts[p],
		Record{Key: []byte{0}},                                   // too short for a version
		Record{Key: []byte{0, 1, 0xff}, Value: []byte{}},         // offset key that does not parse
		Record{Key: []byte{0, 9, 1, 2}, Value: []byte{3}},        // an unknown record type
		Record{Key: offsetKey("a", "t", 1), Value: []byte{0, 3}}) // a value that does not parse
	f.c.OffsetCommit(commitReq("a", "", -1, 6, 2))
	f.c.Close()
	c := f.open()
	if got := fetch(c, "a", 0, 1, 2); got[0].Offset != 5 || got[1].Offset != -1 || got[2].Offset != 6 {
		t.Errorf("offsets after a load with foreign records: %+v", got)
	}
}
