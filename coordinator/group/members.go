package group

// Heartbeats, session expiry and LeaveGroup (Kafka's handleHeartbeat,
// onExpireHeartbeat, handleLeaveGroup).

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// scheduleExpiry (re)arms a member's session timer: unless something
// re-arms it first, the member is removed after d.
func (c *Coordinator) scheduleExpiry(g *group, m *member, d time.Duration) {
	if m.hbTimer != nil {
		m.hbTimer.Stop()
	}
	m.hbSeq++
	seq, id := m.hbSeq, m.id
	m.hbTimer = c.cfg.Clock.AfterFunc(d, func() { c.expireMember(g, id, seq) })
}

// expireMember removes a member whose session ended, unless it is waiting
// for a join or sync to complete (then the rebalance decides), as Kafka's
// MemberMetadata.hasSatisfiedHeartbeat. A new member's parked join does
// expire.
func (c *Coordinator) expireMember(g *group, id string, seq uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	m := g.members[id]
	if g.state == dead || m == nil || m.hbSeq != seq {
		return
	}
	if !m.isNew && (m.joinCh != nil || m.syncCh != nil) {
		return
	}
	c.log.Info("member session expired", "group", g.id, "member", id)
	c.removeMember(g, m, "session timeout of "+id)
}

// removeMember is Kafka's removeMemberAndUpdateGroup.
func (c *Coordinator) removeMember(g *group, m *member, reason string) {
	g.answerJoin(m, joinError("", errUnknownMemberID))
	g.remove(m.id)
	switch g.state {
	case stable, completingRebalance:
		c.maybePrepareRebalance(g, reason)
	case preparingRebalance:
		c.tryCompleteJoin(g)
	}
}

// Heartbeat answers a Heartbeat request.
func (c *Coordinator) Heartbeat(req *kmsg.HeartbeatRequest) *kmsg.HeartbeatResponse {
	resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
	resp.ErrorCode = c.heartbeat(req)
	return resp
}

func (c *Coordinator) heartbeat(req *kmsg.HeartbeatRequest) int16 {
	if req.Group == "" {
		return errInvalidGroupID
	}
	g, code := c.getGroup(req.Group, false)
	switch {
	case code == errLoadInProgress:
		return 0 // as Kafka: answered blindly while the group loads
	case code != 0:
		return code
	case g == nil:
		return errUnknownMemberID
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.state == dead {
		return errCoordinatorNotAvailable
	}
	if code := g.validateMember(req.MemberID, req.InstanceID); code != 0 {
		return code
	}
	if req.Generation != g.generation {
		return errIllegalGeneration
	}
	m := g.members[req.MemberID]
	switch g.state {
	case empty:
		return errUnknownMemberID
	case preparingRebalance:
		c.scheduleExpiry(g, m, m.sessionTimeout)
		return errRebalanceInProgress
	}
	// CompletingRebalance (members may heartbeat once they have their
	// JoinGroup answer) and Stable.
	c.scheduleExpiry(g, m, m.sessionTimeout)
	return 0
}

// LeaveGroup answers a LeaveGroup request: v0-2 name one member, v3+ a
// batch (by member id, or by instance id alone to remove a static member
// administratively).
func (c *Coordinator) LeaveGroup(req *kmsg.LeaveGroupRequest) *kmsg.LeaveGroupResponse {
	resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
	members := req.Members
	if req.Version < 3 {
		lm := kmsg.NewLeaveGroupRequestMember()
		lm.MemberID = req.MemberID
		members = []kmsg.LeaveGroupRequestMember{lm}
	}
	top, codes := c.leave(req.Group, members)
	resp.ErrorCode = top
	if req.Version < 3 {
		if top == 0 && len(codes) > 0 {
			resp.ErrorCode = codes[0]
		}
		return resp
	}
	if top != 0 {
		return resp
	}
	for i, lm := range members {
		rm := kmsg.NewLeaveGroupResponseMember()
		rm.MemberID, rm.InstanceID, rm.ErrorCode = lm.MemberID, lm.InstanceID, codes[i]
		resp.Members = append(resp.Members, rm)
	}
	return resp
}

func (c *Coordinator) leave(groupID string, members []kmsg.LeaveGroupRequestMember) (int16, []int16) {
	codes := make([]int16, len(members))
	if groupID == "" {
		return errInvalidGroupID, nil
	}
	g, code := c.getGroup(groupID, false)
	if code != 0 {
		return code, nil
	}
	if g == nil {
		for i := range codes {
			codes[i] = errUnknownMemberID
		}
		return 0, codes
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.state == dead {
		return errCoordinatorNotAvailable, nil
	}
	for i, lm := range members {
		switch {
		case lm.MemberID == "":
			id, ok := "", false
			if lm.InstanceID != nil {
				id, ok = g.static[*lm.InstanceID]
			}
			if !ok {
				codes[i] = errUnknownMemberID
				continue
			}
			c.removeMember(g, g.members[id], "member "+id+" left")
		case g.pending[lm.MemberID] != nil:
			g.remove(lm.MemberID)
			if g.state == preparingRebalance {
				c.tryCompleteJoin(g)
			}
		default:
			if code := g.validateMember(lm.MemberID, lm.InstanceID); code != 0 {
				codes[i] = code
				continue
			}
			c.log.Info("member left", "group", g.id, "member", lm.MemberID)
			c.removeMember(g, g.members[lm.MemberID], "member "+lm.MemberID+" left")
		}
	}
	return 0, codes
}
