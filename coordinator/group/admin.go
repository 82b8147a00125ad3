package group

// ListGroups, DescribeGroups and DeleteGroups.

import (
	"math"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ListGroups answers a ListGroups request: every group of the owned
// partitions, filtered by state (v4+, case-insensitive) and type (v5+; all
// groups here are "classic").
func (c *Coordinator) ListGroups(req *kmsg.ListGroupsRequest) *kmsg.ListGroupsResponse {
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	states := map[string]bool{}
	for _, s := range req.StatesFilter {
		states[strings.ToLower(s)] = true
	}
	classicOnly := true
	if len(req.TypesFilter) > 0 {
		classicOnly = false
		for _, t := range req.TypesFilter {
			if strings.EqualFold(t, "classic") {
				classicOnly = true
			}
		}
	}
	if c.anyLoading() {
		// As Kafka's listGroups: the groups of loaded partitions, and the
		// error while another partition loads.
		resp.ErrorCode = errLoadInProgress
	}
	if !classicOnly {
		return resp
	}
	for _, g := range c.groups() {
		g.mu.Lock()
		st, pt := g.state, g.protocolType
		g.mu.Unlock()
		if st == dead || len(states) > 0 && !states[strings.ToLower(st.String())] {
			continue
		}
		lg := kmsg.NewListGroupsResponseGroup()
		lg.Group, lg.ProtocolType, lg.GroupState, lg.GroupType = g.id, pt, st.String(), "classic"
		resp.Groups = append(resp.Groups, lg)
	}
	return resp
}

// DescribeGroups answers a DescribeGroups request. An unknown group is
// described as Dead with no members, as Kafka does. Member metadata and
// assignments, and the protocol, are given for a Stable group only.
func (c *Coordinator) DescribeGroups(req *kmsg.DescribeGroupsRequest) *kmsg.DescribeGroupsResponse {
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	for _, id := range req.Groups {
		dg := kmsg.NewDescribeGroupsResponseGroup()
		dg.Group, dg.State = id, dead.String()
		dg.AuthorizedOperations = math.MinInt32
		g, code := c.getGroup(id, false)
		if code != 0 {
			// Kafka's GroupCoordinator.EmptyGroup: no state, type or
			// protocol.
			dg.ErrorCode, dg.State = code, ""
		}
		if g != nil {
			g.mu.Lock()
			dg.State, dg.ProtocolType = g.state.String(), g.protocolType
			if g.state == stable {
				dg.Protocol = g.protocolName
			}
			for _, mid := range g.order {
				m := g.members[mid]
				dm := kmsg.NewDescribeGroupsResponseGroupMember()
				dm.MemberID, dm.InstanceID, dm.ClientID, dm.ClientHost = m.id, m.instanceID, m.clientID, m.clientHost
				if g.state == stable { // Kafka's summaryNoMetadata otherwise
					dm.ProtocolMetadata, dm.MemberAssignment = m.metadata(g.protocolName), m.assignment
				}
				dg.Members = append(dg.Members, dm)
			}
			if g.state == dead {
				dg.Members = nil
			}
			g.mu.Unlock()
		}
		resp.Groups = append(resp.Groups, dg)
	}
	return resp
}

// DeleteGroups answers a DeleteGroups request: an Empty group's offsets
// and metadata are tombstoned and the group removed; a group with members
// gets NON_EMPTY_GROUP, an unknown one GROUP_ID_NOT_FOUND.
func (c *Coordinator) DeleteGroups(req *kmsg.DeleteGroupsRequest) *kmsg.DeleteGroupsResponse {
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	for _, id := range req.Groups {
		rg := kmsg.NewDeleteGroupsResponseGroup()
		rg.Group = id
		rg.ErrorCode = c.deleteGroup(id)
		resp.Groups = append(resp.Groups, rg)
	}
	return resp
}

func (c *Coordinator) deleteGroup(id string) int16 {
	g, code := c.getGroup(id, false)
	if code != 0 {
		return code
	}
	if g == nil {
		return errGroupIDNotFound
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	switch g.state {
	case dead:
		return errGroupIDNotFound
	case empty:
	default:
		return errNonEmptyGroup
	}
	all := make([]topicPartition, 0, len(g.offsets))
	for tp := range g.offsets {
		all = append(all, tp)
	}
	if err := c.deleteOffsets(g, all, true); err != nil {
		c.log.Warn("deleting group", "group", id, "err", err)
		return appendError(err)
	}
	g.transition(dead, c.now())
	c.forget(g)
	c.log.Info("deleted group", "group", id, "offsets", len(all))
	return 0
}

// Generation is a group's generation (Kafka does not report it in
// DescribeGroups); false for an unknown group. Tests use it to tell
// whether a rebalance happened.
func (c *Coordinator) Generation(groupID string) (int32, bool) {
	g, _ := c.getGroup(groupID, false)
	if g == nil {
		return 0, false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.generation, g.state != dead
}
