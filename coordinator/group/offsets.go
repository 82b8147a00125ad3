package group

// Committed offsets: OffsetCommit, OffsetFetch, OffsetDelete and their
// expiry (Kafka's handleCommitOffsets, handleFetchOffsets,
// handleDeleteOffsets, GroupMetadata.removeExpiredOffsets).

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// OffsetCommit answers an OffsetCommit request.
func (c *Coordinator) OffsetCommit(req *kmsg.OffsetCommitRequest) *kmsg.OffsetCommitResponse {
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	now := c.now().UnixMilli()
	type entry struct {
		ti, pi int
		tp     topicPartition
		o      committed
	}
	var valid []entry
	// Partitions of unknown topics are refused first, as Kafka's KafkaApis
	// does before the coordinator validates the group.
	status := c.status(req.Group)
	for ti, rt := range req.Topics {
		st := kmsg.NewOffsetCommitResponseTopic()
		st.Topic = rt.Topic
		for pi, rp := range rt.Partitions {
			sp := kmsg.NewOffsetCommitResponseTopicPartition()
			sp.Partition = rp.Partition
			switch {
			case !c.knownPartition(rt.Topic, rp.Partition):
				sp.ErrorCode = errUnknownTopicOrPartition
			case status != 0:
				sp.ErrorCode = status
			case rp.Metadata != nil && len(*rp.Metadata) > c.cfg.MaxMetadataBytes:
				sp.ErrorCode = errOffsetMetadataTooLarge
			default:
				o := committed{offset: rp.Offset, leaderEpoch: -1, commitTime: now, expireTime: -1}
				if rp.Metadata != nil {
					o.metadata = *rp.Metadata
				}
				if req.Version >= 6 {
					o.leaderEpoch = rp.LeaderEpoch
				}
				if req.Version == 1 && rp.Timestamp != -1 {
					o.commitTime = rp.Timestamp
				}
				if req.Version >= 2 && req.Version <= 4 && req.RetentionTimeMillis != -1 {
					o.expireTime = o.commitTime + req.RetentionTimeMillis
				}
				valid = append(valid, entry{ti, pi, topicPartition{rt.Topic, rp.Partition}, o})
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	if len(valid) == 0 {
		return resp
	}
	setAll := func(code int16) {
		for _, e := range valid {
			resp.Topics[e.ti].Partitions[e.pi].ErrorCode = code
		}
	}
	g, code := c.getGroup(req.Group, false)
	if g == nil && code == 0 {
		if req.Generation >= 0 {
			setAll(errIllegalGeneration)
			return resp
		}
		// A commit outside group management creates a simple group.
		if g, code = c.getGroup(req.Group, true); g == nil && code == 0 {
			code = errCoordinatorNotAvailable
		}
	}
	if code != 0 {
		setAll(code)
		return resp
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if code := c.validateCommit(g, req); code != 0 {
		setAll(code)
		return resp
	}
	switch g.state {
	case completingRebalance:
		setAll(errRebalanceInProgress)
		return resp
	case stable, preparingRebalance:
		m := g.members[req.MemberID]
		c.scheduleExpiry(g, m, m.sessionTimeout)
	}
	records := make([]Record, len(valid))
	for i, e := range valid {
		records[i] = Record{Key: offsetKey(g.id, e.tp.topic, e.tp.partition), Value: offsetValueFor(e.o)}
	}
	if err := c.store.Append(g.partition, records); err != nil {
		c.log.Warn("storing offsets", "group", g.id, "err", err)
		setAll(appendError(err))
		return resp
	}
	for _, e := range valid {
		e.o.order = c.order.Add(1)
		g.offsets[e.tp] = e.o
	}
	return resp
}

// validateCommit is Kafka's validateOffsetCommit.
func (c *Coordinator) validateCommit(g *group, req *kmsg.OffsetCommitRequest) int16 {
	switch {
	case g.state == dead:
		return errCoordinatorNotAvailable
	case req.Generation < 0 && g.state == empty:
		return 0 // an admin client or a consumer outside group management
	case req.Generation >= 0 || req.MemberID != "" || req.InstanceID != nil:
		if code := g.validateMember(req.MemberID, req.InstanceID); code != 0 {
			return code
		}
		if req.Generation != g.generation {
			return errIllegalGeneration
		}
		return 0
	case g.state != empty:
		return errUnknownMemberID // only members commit for a group that has them
	}
	return 0
}

func (c *Coordinator) knownPartition(topic string, partition int32) bool {
	if c.cfg.Topics == nil {
		return true
	}
	n, ok := c.cfg.Topics(topic)
	return ok && partition >= 0 && partition < n
}

func offsetValueFor(o committed) []byte {
	if o.expireTime < 0 {
		return offsetValue(o)
	}
	v := kmsg.NewOffsetCommitValue()
	v.Version, v.Offset, v.Metadata, v.CommitTimestamp, v.ExpireTimestamp = 1, o.offset, o.metadata, o.commitTime, o.expireTime
	return v.AppendTo(nil)
}

// OffsetFetch answers an OffsetFetch request: v0-7 for one group, v8+ for
// several. Offsets are answered whatever the group's state (a group may
// use Kafka only to store offsets); a partition without a committed offset
// answers -1.
func (c *Coordinator) OffsetFetch(req *kmsg.OffsetFetchRequest) *kmsg.OffsetFetchResponse {
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	if req.Version < 8 {
		var topics []kmsg.OffsetFetchRequestGroupTopic
		if req.Topics != nil {
			topics = []kmsg.OffsetFetchRequestGroupTopic{}
			for _, t := range req.Topics {
				gt := kmsg.NewOffsetFetchRequestGroupTopic()
				gt.Topic, gt.Partitions = t.Topic, t.Partitions
				topics = append(topics, gt)
			}
		}
		got, code := c.fetchOffsets(req.Group, topics, req.Version >= 7 && req.RequireStable)
		if code != 0 {
			return offsetFetchError(req, resp, code)
		}
		for _, t := range got {
			rt := kmsg.NewOffsetFetchResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetFetchResponseTopicPartition()
				rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata, rp.ErrorCode = p.Partition, p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
	for _, rg := range req.Groups {
		g := kmsg.NewOffsetFetchResponseGroup()
		g.Group = rg.Group
		g.Topics, g.ErrorCode = c.fetchOffsets(rg.Group, rg.Topics, req.RequireStable)
		resp.Groups = append(resp.Groups, g)
	}
	return resp
}

// offsetFetchError is the answer of v0-7 when the group's partition is not
// served, as Kafka's OffsetFetchRequest.getErrorResponse: v0-1 have no
// top-level error, so each requested partition carries it.
func offsetFetchError(req *kmsg.OffsetFetchRequest, resp *kmsg.OffsetFetchResponse, code int16) *kmsg.OffsetFetchResponse {
	resp.ErrorCode = code
	if req.Version >= 2 {
		return resp
	}
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetFetchResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetFetchResponseTopicPartition()
			empty := ""
			rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata, rp.ErrorCode = p, -1, -1, &empty, code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// fetchOffsets answers one group's offsets: of the given partitions, or
// all committed ones for a nil list; or the code its partition answers.
// With requireStable (v7+), a partition with offsets pending in an open
// transaction answers UNSTABLE_OFFSET_COMMIT, as Kafka's
// GroupMetadataManager.getOffsets.
func (c *Coordinator) fetchOffsets(groupID string, topics []kmsg.OffsetFetchRequestGroupTopic, requireStable bool) ([]kmsg.OffsetFetchResponseGroupTopic, int16) {
	var offsets map[topicPartition]committed
	var unstable map[topicPartition]bool
	g, code := c.getGroup(groupID, false)
	if code != 0 {
		return nil, code
	}
	if g != nil {
		g.mu.Lock()
		if g.state != dead {
			offsets = make(map[topicPartition]committed, len(g.offsets))
			for tp, o := range g.offsets {
				offsets[tp] = o
			}
			if requireStable {
				for _, pend := range g.pendingTxn {
					for tp := range pend {
						if unstable == nil {
							unstable = map[topicPartition]bool{}
						}
						unstable[tp] = true
					}
				}
			}
		}
		g.mu.Unlock()
	}
	if topics == nil {
		byTopic := map[string][]int32{}
		for tp := range offsets {
			byTopic[tp.topic] = append(byTopic[tp.topic], tp.partition)
		}
		for t, ps := range byTopic {
			slices.Sort(ps)
			gt := kmsg.NewOffsetFetchRequestGroupTopic()
			gt.Topic, gt.Partitions = t, ps
			topics = append(topics, gt)
		}
		slices.SortFunc(topics, func(a, b kmsg.OffsetFetchRequestGroupTopic) int {
			if a.Topic < b.Topic {
				return -1
			}
			return 1
		})
	}
	out := make([]kmsg.OffsetFetchResponseGroupTopic, 0, len(topics))
	for _, t := range topics {
		rt := kmsg.NewOffsetFetchResponseGroupTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch = p, -1, -1
			empty := ""
			rp.Metadata = &empty
			if unstable[topicPartition{t.Topic, p}] {
				rp.ErrorCode = kerr.UnstableOffsetCommit.Code
			} else if o, ok := offsets[topicPartition{t.Topic, p}]; ok {
				md := o.metadata
				rp.Offset, rp.LeaderEpoch, rp.Metadata = o.offset, o.leaderEpoch, &md
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		out = append(out, rt)
	}
	return out, 0
}

// OffsetDelete answers an OffsetDelete request: offsets of an Empty group,
// or of topics a consumer group is not subscribed to.
func (c *Coordinator) OffsetDelete(req *kmsg.OffsetDeleteRequest) *kmsg.OffsetDeleteResponse {
	resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
	g, code := c.getGroup(req.Group, false)
	if code != 0 {
		resp.ErrorCode = code
		return resp
	}
	if g == nil {
		resp.ErrorCode = errGroupIDNotFound
		return resp
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	var doomed []topicPartition
	codes := map[topicPartition]int16{}
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			tp := topicPartition{t.Topic, p.Partition}
			switch {
			case g.state == dead:
				resp.ErrorCode = errGroupIDNotFound
				return resp
			case g.state == empty:
				doomed = append(doomed, tp)
			case g.protocolType == "consumer":
				if g.subscribedTo(t.Topic) {
					codes[tp] = errGroupSubscribedToTopic
				} else {
					doomed = append(doomed, tp)
				}
			default:
				resp.ErrorCode = errNonEmptyGroup
				return resp
			}
		}
	}
	if err := c.deleteOffsets(g, doomed, false); err != nil {
		c.log.Warn("deleting offsets", "group", g.id, "err", err)
		resp.ErrorCode = appendError(err)
		return resp
	}
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetDeleteResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetDeleteResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, codes[topicPartition{t.Topic, p.Partition}]
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// deleteOffsets writes tombstones for the group's offsets of doomed (and,
// with dropGroup, for the group itself) and removes them from memory.
func (c *Coordinator) deleteOffsets(g *group, doomed []topicPartition, dropGroup bool) error {
	var records []Record
	for _, tp := range doomed {
		if _, ok := g.offsets[tp]; ok {
			records = append(records, Record{Key: offsetKey(g.id, tp.topic, tp.partition)})
		}
	}
	if dropGroup {
		records = append(records, Record{Key: groupKey(g.id)})
	}
	if len(records) == 0 {
		return nil
	}
	if err := c.store.Append(g.partition, records); err != nil {
		return err
	}
	for _, tp := range doomed {
		delete(g.offsets, tp)
		// Offsets pending in transactions go too, as Kafka's
		// GroupMetadata.removeOffsets drops them.
		for _, pend := range g.pendingTxn {
			delete(pend, tp)
		}
	}
	return nil
}

// scheduleOffsetExpiry arms the periodic offset expiry.
func (c *Coordinator) scheduleOffsetExpiry() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.closed {
		return
	}
	c.expiry = c.cfg.Clock.AfterFunc(c.cfg.OffsetsRetentionCheck, func() {
		c.ExpireOffsets()
		c.scheduleOffsetExpiry()
	})
}

// ExpireOffsets removes expired offsets, as Kafka's periodic
// cleanupGroupMetadata: all offsets of a group Empty for longer than
// offsets.retention; in a Stable consumer group, offsets of topics no
// member subscribes to that were last committed longer ago than that; in a
// group that only stores offsets, each offset by its commit time. A group
// left Empty with no offsets is deleted. Only groups of owned (loaded)
// partitions are in memory, so only those are expired. It returns how
// many offsets it removed.
func (c *Coordinator) ExpireOffsets() int {
	now := c.now().UnixMilli()
	retention := c.cfg.OffsetsRetention.Milliseconds()
	removed := 0
	for _, g := range c.groups() {
		g.mu.Lock()
		var doomed []topicPartition
		expired := func(o committed, base int64) bool {
			if o.expireTime >= 0 {
				return now >= o.expireTime
			}
			return now-base >= retention
		}
		switch {
		case g.state == dead:
		case g.protocolType != "" && g.state == empty:
			for tp, o := range g.offsets {
				if expired(o, g.stateTime.UnixMilli()) {
					doomed = append(doomed, tp)
				}
			}
		case g.protocolType == "consumer" && g.subscribed != nil && g.state == stable:
			for tp, o := range g.offsets {
				if !g.subscribed[tp.topic] && expired(o, o.commitTime) {
					doomed = append(doomed, tp)
				}
			}
		case g.protocolType == "":
			for tp, o := range g.offsets {
				if expired(o, o.commitTime) {
					doomed = append(doomed, tp)
				}
			}
		}
		// A group with offsets pending in a transaction keeps living, as
		// Kafka's GroupMetadata.hasOffsets counts them.
		dropGroup := g.state == empty && len(g.offsets) == len(doomed) && len(g.pendingTxn) == 0
		if len(doomed) > 0 || dropGroup && len(g.offsets) == 0 {
			if err := c.deleteOffsets(g, doomed, dropGroup); err != nil {
				c.log.Warn("expiring offsets", "group", g.id, "err", err)
			} else {
				removed += len(doomed)
				if dropGroup {
					g.transition(dead, c.now())
					c.forget(g)
				}
			}
		}
		g.mu.Unlock()
	}
	if removed > 0 {
		c.log.Info("expired offsets", "offsets", removed)
	}
	return removed
}

// DeleteTopicOffsets removes every group's offsets of a deleted topic (as
// Kafka's handleDeletedPartitions), with tombstones, and returns how many
// it removed. As ExpireOffsets, it acts on owned partitions' groups only:
// the other partitions' leaders remove theirs.
func (c *Coordinator) DeleteTopicOffsets(topic string) int {
	removed := 0
	for _, g := range c.groups() {
		g.mu.Lock()
		var doomed []topicPartition
		for tp := range g.offsets {
			if tp.topic == topic && g.state != dead {
				doomed = append(doomed, tp)
			}
		}
		committed := len(doomed)
		for _, pend := range g.pendingTxn {
			for tp := range pend {
				if tp.topic == topic && g.state != dead && !slices.Contains(doomed, tp) {
					doomed = append(doomed, tp) // dropped from memory, no tombstone: nothing committed
				}
			}
		}
		if err := c.deleteOffsets(g, doomed, false); err != nil {
			c.log.Warn("deleting offsets of a deleted topic", "group", g.id, "topic", topic, "err", err)
		} else {
			removed += committed
		}
		g.mu.Unlock()
	}
	return removed
}
