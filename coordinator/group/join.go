package group

// JoinGroup and SyncGroup, and the rebalance they drive (Kafka's
// GroupCoordinator.handleJoinGroup, handleSyncGroup, prepareRebalance,
// onCompleteJoin).

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// JoinGroup answers a JoinGroup request, parking it until the rebalance it
// joins completes or ctx ends. clientID and clientHost describe the
// connection.
func (c *Coordinator) JoinGroup(ctx context.Context, req *kmsg.JoinGroupRequest, clientID, clientHost string) *kmsg.JoinGroupResponse {
	resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
	r := c.join(ctx, req, clientID, clientHost)
	resp.ErrorCode, resp.MemberID, resp.Generation = r.err, r.memberID, r.generation
	resp.LeaderID, resp.Members, resp.SkipAssignment = r.leader, r.members, r.skipAssignment
	if r.err == 0 {
		resp.Protocol = &r.protocolName
		if req.Version >= 7 {
			resp.ProtocolType = &r.protocolType
		}
	}
	return resp
}

func (c *Coordinator) join(ctx context.Context, req *kmsg.JoinGroupRequest, clientID, clientHost string) joinResult {
	ch, r := c.startJoin(req, clientID, clientHost)
	if ch == nil {
		return r
	}
	select {
	case r = <-ch:
		return r
	case <-ctx.Done():
		return joinError(req.MemberID, errCoordinatorNotAvailable)
	}
}

// startJoin handles a JoinGroup up to where it parks: it returns either
// the answer or the channel the answer will come on.
func (c *Coordinator) startJoin(req *kmsg.JoinGroupRequest, clientID, clientHost string) (chan joinResult, joinResult) {
	if req.Group == "" {
		return nil, joinError(req.MemberID, errInvalidGroupID)
	}
	if code := c.status(req.Group); code != 0 {
		return nil, joinError(req.MemberID, code)
	}
	session := time.Duration(req.SessionTimeoutMillis) * time.Millisecond
	rebalance := time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond
	if req.Version == 0 {
		rebalance = session
	}
	if session < c.cfg.MinSessionTimeout || session > c.cfg.MaxSessionTimeout {
		return nil, joinError(req.MemberID, errInvalidSessionTimeout)
	}
	unknown := req.MemberID == ""
	g, code := c.getGroup(req.Group, unknown)
	if code != 0 {
		return nil, joinError(req.MemberID, code)
	}
	if g == nil {
		return nil, joinError(req.MemberID, errUnknownMemberID)
	}
	// The request's byte fields are views into its frame, which the next
	// request on the connection overwrites: the group keeps copies.
	protocols := make([]protocol, len(req.Protocols))
	for i, p := range req.Protocols {
		protocols[i] = protocol{p.Name, bytes.Clone(p.Metadata)}
	}
	j := joining{
		memberID: req.MemberID, instanceID: req.InstanceID, clientID: clientID, clientHost: clientHost,
		rebalance: rebalance, session: session, protocolType: req.ProtocolType, protocols: protocols,
		requireKnownID: req.Version >= 4, skipAssignment: req.Version >= 9,
	}

	g.mu.Lock()
	var ch chan joinResult
	var r joinResult
	switch {
	case !c.acceptJoining(g, req.MemberID):
		g.remove(req.MemberID)
		r = joinError("", errGroupMaxSizeReached)
	case unknown:
		ch, r = c.joinNew(g, &j)
	default:
		ch, r = c.joinCurrent(g, &j)
	}
	if g.state == preparingRebalance {
		c.tryCompleteJoin(g)
	}
	g.mu.Unlock()
	return ch, r
}

// joining is a JoinGroup request's member fields.
type joining struct {
	memberID       string
	instanceID     *string
	clientID       string
	clientHost     string
	rebalance      time.Duration
	session        time.Duration
	protocolType   string
	protocols      []protocol
	requireKnownID bool // v4+: a new dynamic member first gets MEMBER_ID_REQUIRED (KIP-394)
	skipAssignment bool // v9+
}

// acceptJoining is Kafka's acceptJoiningMember: group.max.size.
func (c *Coordinator) acceptJoining(g *group, memberID string) bool {
	switch g.state {
	case preparingRebalance:
		m := g.members[memberID]
		return m != nil && m.joinCh != nil || g.awaitingJoin < c.cfg.MaxGroupSize
	case completingRebalance, stable:
		return g.members[memberID] != nil || len(g.members) < c.cfg.MaxGroupSize
	}
	return true
}

// newMemberID is Kafka's generateMemberId: the client id (or instance id)
// and a random UUID.
func newMemberID(clientID string, instanceID *string) string {
	var u [16]byte
	rand.Read(u[:])
	u[6], u[8] = u[6]&0x0f|0x40, u[8]&0x3f|0x80
	h := hex.EncodeToString(u[:])
	prefix := clientID
	if instanceID != nil {
		prefix = *instanceID
	}
	return prefix + "-" + h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

func (c *Coordinator) joinNew(g *group, j *joining) (chan joinResult, joinResult) {
	if g.state == dead {
		return nil, joinError("", errCoordinatorNotAvailable)
	}
	if !g.supports(j.protocolType, j.protocols) {
		return nil, joinError("", errInconsistentProtocol)
	}
	id := newMemberID(j.clientID, j.instanceID)
	if j.instanceID != nil {
		if old, ok := g.static[*j.instanceID]; ok {
			return c.replaceStatic(g, j, old, id)
		}
		return c.addMember(g, j, id)
	}
	if j.requireKnownID {
		p := &pendingMember{}
		g.pending[id] = p
		p.timer = c.cfg.Clock.AfterFunc(j.session, func() { c.expirePending(g, id, p) })
		return nil, joinError(id, errMemberIDRequired)
	}
	return c.addMember(g, j, id)
}

func (c *Coordinator) joinCurrent(g *group, j *joining) (chan joinResult, joinResult) {
	if g.state == dead {
		return nil, joinError(j.memberID, errCoordinatorNotAvailable)
	}
	if !g.supports(j.protocolType, j.protocols) {
		return nil, joinError(j.memberID, errInconsistentProtocol)
	}
	if _, ok := g.pending[j.memberID]; ok {
		if j.instanceID != nil {
			return nil, joinError(j.memberID, errUnknownMemberID)
		}
		return c.addMember(g, j, j.memberID)
	}
	if code := g.validateMember(j.memberID, j.instanceID); code != 0 {
		return nil, joinError(j.memberID, code)
	}
	m := g.members[j.memberID]
	switch g.state {
	case preparingRebalance:
		return c.updateAndRebalance(g, m, j, "member joining during a rebalance")
	case completingRebalance:
		if m.matches(j.protocols) {
			// The member lost the JoinGroup answer: give it again.
			r := c.currentJoinResult(g, m.id, g.leader == m.id)
			return nil, r
		}
		return c.updateAndRebalance(g, m, j, "member metadata changed")
	case stable:
		if g.leader == m.id || !m.matches(j.protocols) {
			return c.updateAndRebalance(g, m, j, "leader rejoined or member metadata changed")
		}
		return nil, c.currentJoinResult(g, m.id, false)
	}
	// Empty: the member is not in the group any more.
	return nil, joinError(j.memberID, errUnknownMemberID)
}

// validateMember is Kafka's validateCurrentMember: a static member's
// instance id must map to its member id; the member must exist.
func (g *group) validateMember(memberID string, instanceID *string) int16 {
	if instanceID != nil {
		cur, ok := g.static[*instanceID]
		if !ok {
			return errUnknownMemberID
		}
		if cur != memberID {
			return errFencedInstanceID
		}
		return 0
	}
	if g.members[memberID] == nil {
		return errUnknownMemberID
	}
	return 0
}

func (c *Coordinator) currentJoinResult(g *group, memberID string, withMembers bool) joinResult {
	r := joinResult{memberID: memberID, generation: g.generation, protocolType: g.protocolType, protocolName: g.protocolName, leader: g.leader}
	if withMembers {
		r.members = g.currentMembers()
	}
	return r
}

func (c *Coordinator) addMember(g *group, j *joining, id string) (chan joinResult, joinResult) {
	m := &member{
		id: id, instanceID: j.instanceID, clientID: j.clientID, clientHost: j.clientHost,
		rebalanceTimeout: j.rebalance, sessionTimeout: j.session,
		protocolType: j.protocolType, protocols: j.protocols, isNew: true,
	}
	if g.state == preparingRebalance && g.generation == 0 {
		g.newMemberAdded = true
	}
	ch := make(chan joinResult, 1)
	g.add(m, ch)
	// A new member cannot heartbeat before it has its id: its parked join
	// is bounded by newMemberJoinTimeout instead.
	c.scheduleExpiry(g, m, newMemberJoinTimeout)
	c.maybePrepareRebalance(g, "new member "+id+" joined")
	return ch, joinResult{}
}

func (c *Coordinator) updateAndRebalance(g *group, m *member, j *joining, reason string) (chan joinResult, joinResult) {
	ch := make(chan joinResult, 1)
	g.update(m, j.protocols, j.rebalance, j.session, ch)
	c.maybePrepareRebalance(g, reason+": "+m.id)
	return ch, joinResult{}
}

// replaceStatic is Kafka's updateStaticMemberAndRebalance: a static member
// rejoining with no member id takes over its instance's membership under a
// new id; the old id is fenced. In a Stable group whose protocol does not
// change, no rebalance happens: the member gets the current generation and
// its assignment.
func (c *Coordinator) replaceStatic(g *group, j *joining, oldID, newID string) (chan joinResult, joinResult) {
	m := g.members[oldID]
	oldLeader := g.leader
	// Fence whatever the old id had parked.
	g.answerJoin(m, joinError(oldID, errFencedInstanceID))
	g.answerSync(m, syncResult{err: errFencedInstanceID})
	g.rename(m, newID)
	c.scheduleExpiry(g, m, m.sessionTimeout)
	oldProtocols, oldRebalance, oldSession := m.protocols, m.rebalanceTimeout, m.sessionTimeout
	ch := make(chan joinResult, 1)
	g.update(m, j.protocols, j.rebalance, j.session, ch)
	switch g.state {
	case stable:
		if g.selectProtocol() != g.protocolName {
			c.maybePrepareRebalance(g, "static member "+newID+" changed the group's protocol")
			return ch, joinResult{}
		}
		assignment := map[string][]byte{}
		for id, mm := range g.members {
			assignment[id] = mm.assignment
		}
		if err := c.storeGroup(g, assignment); err != nil {
			// Undo: the old id keeps the membership.
			g.update(m, oldProtocols, oldRebalance, oldSession, nil)
			g.rename(m, oldID)
			c.scheduleExpiry(g, m, m.sessionTimeout)
			r := joinError("", appendError(err))
			r.generation, r.protocolType, r.protocolName, r.leader = g.generation, g.protocolType, g.protocolName, oldLeader
			g.answerJoin(m, r)
			return ch, joinResult{}
		}
		if j.skipAssignment {
			leader := g.leader == newID
			r := c.currentJoinResult(g, newID, leader)
			r.skipAssignment = leader
			g.answerJoin(m, r)
		} else {
			// Before v9 the old leader id is returned, so the member does not
			// take itself for the leader and assign in a Stable group.
			r := c.currentJoinResult(g, newID, false)
			r.leader = oldLeader
			g.answerJoin(m, r)
		}
	case completingRebalance:
		c.prepareRebalance(g, "static member "+newID+" rejoined while the assignment was being computed")
	}
	return ch, joinResult{}
}

func (c *Coordinator) expirePending(g *group, id string, p *pendingMember) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.pending[id] != p {
		return
	}
	g.remove(id)
	if g.state == preparingRebalance {
		c.tryCompleteJoin(g)
	}
}

func (c *Coordinator) maybePrepareRebalance(g *group, reason string) {
	if g.canRebalance() {
		c.prepareRebalance(g, reason)
	}
}

// prepareRebalance moves the group to PreparingRebalance: followers
// waiting for an assignment are told to rejoin, and the join deadline is
// armed (the initial delay for an Empty group).
func (c *Coordinator) prepareRebalance(g *group, reason string) {
	if g.state == completingRebalance {
		c.propagateAssignment(g, errRebalanceInProgress, true)
	}
	c.clearPendingSync(g)
	if g.state == empty {
		g.initialDelay = true
		g.delay = c.cfg.InitialRebalanceDelay
		g.remaining = max(g.rebalanceTimeout()-c.cfg.InitialRebalanceDelay, 0)
		c.armJoin(g, g.delay)
	} else {
		g.initialDelay = false
		c.armJoin(g, g.rebalanceTimeout())
	}
	g.transition(preparingRebalance, c.now())
	c.rebalances.Add(1)
	c.log.Info("preparing to rebalance group", "group", g.id, "generation", g.generation, "reason", reason)
	// As Kafka's purgatory tries a delayed join once when it is added: a
	// group whose members have all rejoined (or left) completes now.
	c.tryCompleteJoin(g)
}

func (c *Coordinator) armJoin(g *group, d time.Duration) {
	if g.joinTimer != nil {
		g.joinTimer.Stop()
	}
	g.seq++
	seq := g.seq
	g.joinTimer = c.cfg.Clock.AfterFunc(d, func() { c.joinDeadline(g, seq) })
}

// joinDeadline is the join timer: the initial delay is extended while new
// members keep joining (Kafka's InitialDelayedJoin), else the join
// completes with whoever joined.
func (c *Coordinator) joinDeadline(g *group, seq uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.seq != seq || g.state != preparingRebalance {
		return
	}
	if g.initialDelay && g.newMemberAdded && g.remaining != 0 {
		g.newMemberAdded = false
		delay := min(c.cfg.InitialRebalanceDelay, g.remaining)
		g.remaining = max(g.remaining-g.delay, 0)
		g.delay = delay
		c.armJoin(g, delay)
		return
	}
	c.completeJoin(g)
}

// tryCompleteJoin completes the join at once when every member has
// rejoined, except during the initial delay.
func (c *Coordinator) tryCompleteJoin(g *group) {
	if g.state == preparingRebalance && !g.initialDelay && g.allJoined() {
		c.completeJoin(g)
	}
}

// completeJoin is Kafka's onCompleteJoin.
func (c *Coordinator) completeJoin(g *group) {
	g.seq++
	if g.joinTimer != nil {
		g.joinTimer.Stop()
		g.joinTimer = nil
	}
	g.initialDelay = false
	for _, id := range append([]string(nil), g.order...) {
		if m := g.members[id]; m.joinCh == nil && !m.static() {
			c.log.Info("removing member that did not rejoin", "group", g.id, "member", id)
			g.remove(id)
		}
	}
	if g.state == dead {
		return
	}
	if len(g.members) > 0 && !g.electJoinedLeader() {
		// Nobody rejoined (static members are kept): wait another round,
		// until their sessions expire.
		c.armJoin(g, g.rebalanceTimeout())
		return
	}
	g.generation++
	if len(g.members) == 0 {
		g.protocolName, g.subscribed = "", nil
		g.transition(empty, c.now())
		g.pendingSync = nil
		if err := c.storeGroup(g, nil); err != nil {
			c.log.Warn("storing empty group", "group", g.id, "err", err)
		}
		c.log.Info("group is empty", "group", g.id, "generation", g.generation)
		return
	}
	g.protocolName = g.selectProtocol()
	g.subscribed = g.computeSubscribed()
	g.transition(completingRebalance, c.now())
	g.pendingSync = map[string]bool{}
	for _, id := range g.order {
		m := g.members[id]
		g.answerJoin(m, c.currentJoinResult(g, id, id == g.leader))
		c.scheduleExpiry(g, m, m.sessionTimeout)
		m.isNew = false
		g.pendingSync[id] = true
	}
	c.armSync(g)
	c.log.Info("group rebalanced", "group", g.id, "generation", g.generation, "members", len(g.members), "protocol", g.protocolName)
}

// electJoinedLeader is Kafka's maybeElectNewJoinedLeader: a leader that did
// not rejoin is replaced by a member that did.
func (g *group) electJoinedLeader() bool {
	l := g.members[g.leader]
	if l == nil {
		return false
	}
	if l.joinCh != nil {
		return true
	}
	for _, id := range g.order {
		if g.members[id].joinCh != nil {
			g.leader = id
			return true
		}
	}
	return false
}

// armSync arms the deadline for the new generation's SyncGroups: members
// that have not sent one by the rebalance timeout are removed.
func (c *Coordinator) armSync(g *group) {
	if g.syncTimer != nil {
		g.syncTimer.Stop()
	}
	g.seq++
	seq, gen := g.seq, g.generation
	g.syncTimer = c.cfg.Clock.AfterFunc(g.rebalanceTimeout(), func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.seq != seq || g.generation != gen || len(g.pendingSync) == 0 {
			return
		}
		if g.state != completingRebalance && g.state != stable {
			return
		}
		for id := range g.pendingSync {
			c.log.Info("removing member that did not sync", "group", g.id, "member", id)
			g.remove(id)
		}
		c.prepareRebalance(g, "members did not send SyncGroup in time")
	})
}

func (c *Coordinator) clearPendingSync(g *group) {
	g.pendingSync = nil
	if g.syncTimer != nil {
		g.syncTimer.Stop()
		g.syncTimer = nil
	}
}

func (c *Coordinator) removePendingSync(g *group, id string) {
	delete(g.pendingSync, id)
	if len(g.pendingSync) == 0 && g.syncTimer != nil {
		g.syncTimer.Stop()
		g.syncTimer = nil
	}
}

// propagateAssignment answers every parked SyncGroup: with each member's
// assignment, or with code (and no assignment) when reset is set.
func (c *Coordinator) propagateAssignment(g *group, code int16, reset bool) {
	for _, id := range g.order {
		m := g.members[id]
		if reset {
			m.assignment = nil
		}
		r := syncResult{err: code, assignment: m.assignment}
		if code == 0 {
			r.protocolType, r.protocolName = g.protocolType, g.protocolName
		}
		if g.answerSync(m, r) {
			c.scheduleExpiry(g, m, m.sessionTimeout)
		}
	}
}

// SyncGroup answers a SyncGroup request, parking a follower's until the
// leader's brings the assignment.
func (c *Coordinator) SyncGroup(ctx context.Context, req *kmsg.SyncGroupRequest) *kmsg.SyncGroupResponse {
	resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
	r := c.sync(ctx, req)
	resp.ErrorCode, resp.MemberAssignment = r.err, r.assignment
	if r.err == 0 && req.Version >= 5 {
		resp.ProtocolType, resp.Protocol = &r.protocolType, &r.protocolName
	}
	return resp
}

func (c *Coordinator) sync(ctx context.Context, req *kmsg.SyncGroupRequest) syncResult {
	ch, r := c.startSync(req)
	if ch == nil {
		return r
	}
	select {
	case r = <-ch:
		return r
	case <-ctx.Done():
		return syncResult{err: errCoordinatorNotAvailable}
	}
}

// startSync handles a SyncGroup up to where it parks.
func (c *Coordinator) startSync(req *kmsg.SyncGroupRequest) (chan syncResult, syncResult) {
	if req.Group == "" {
		return nil, syncResult{err: errInvalidGroupID}
	}
	g, code := c.getGroup(req.Group, false)
	switch {
	case code == errLoadInProgress:
		// As Kafka: the rebalance's state is lost, so the member is sent
		// back to JoinGroup (older clients do not expect the load error).
		return nil, syncResult{err: errRebalanceInProgress}
	case code != 0:
		return nil, syncResult{err: code}
	case g == nil:
		return nil, syncResult{err: errUnknownMemberID}
	}
	g.mu.Lock()
	var ch chan syncResult
	r := func() syncResult {
		if g.state == dead {
			return syncResult{err: errCoordinatorNotAvailable}
		}
		if code := g.validateMember(req.MemberID, req.InstanceID); code != 0 {
			return syncResult{err: code}
		}
		switch {
		case req.Generation != g.generation:
			return syncResult{err: errIllegalGeneration}
		case req.ProtocolType != nil && *req.ProtocolType != g.protocolType,
			req.Protocol != nil && *req.Protocol != g.protocolName:
			return syncResult{err: errInconsistentProtocol}
		}
		m := g.members[req.MemberID]
		switch g.state {
		case empty:
			return syncResult{err: errUnknownMemberID}
		case preparingRebalance:
			return syncResult{err: errRebalanceInProgress}
		case stable:
			c.removePendingSync(g, m.id)
			c.scheduleExpiry(g, m, m.sessionTimeout)
			return syncResult{protocolType: g.protocolType, protocolName: g.protocolName, assignment: m.assignment}
		}
		// CompletingRebalance.
		ch = make(chan syncResult, 1)
		m.syncCh = ch
		c.removePendingSync(g, m.id)
		if g.leader == m.id {
			assignment := map[string][]byte{}
			for _, a := range req.GroupAssignment {
				// Copied: a view into the leader's request frame.
				assignment[a.MemberID] = bytes.Clone(a.MemberAssignment)
			}
			for id := range g.members {
				if _, ok := assignment[id]; !ok {
					assignment[id] = []byte{}
				}
			}
			if err := c.storeGroup(g, assignment); err != nil {
				c.log.Warn("storing group assignment", "group", g.id, "err", err)
				c.propagateAssignment(g, appendError(err), true)
				c.maybePrepareRebalance(g, "storing the assignment failed")
			} else {
				for id, mm := range g.members {
					mm.assignment = assignment[id]
				}
				c.propagateAssignment(g, 0, false)
				g.transition(stable, c.now())
				c.log.Info("group is stable", "group", g.id, "generation", g.generation)
			}
		}
		return syncResult{}
	}()
	g.mu.Unlock()
	return ch, r
}
