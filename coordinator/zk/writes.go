package zk

// The controller driver's writes: the decision core's Writes performed as
// multi-ops fenced on the controller epoch (Multi), each answered by one
// WriteResult.
//
// State writes are batched: the CreateStates and UpdateStates of one Ready
// go in as few multi-ops as ZooKeeper's request limit (jute.maxbuffer,
// 1 MiB by default) allows, a new topic's parents
// (/brokers/topics/<t>/partitions and .../<p>) created in the same multi.
// A multi-op is all or nothing: when one fails, its writes are done again
// one by one, each with its own outcome (a parent that already exists is
// then not an error, a state znode that does is a conflict, read back into
// WriteResult.Current). Topic-level writes (SetAssignment, DeleteTopic,
// RemoveDeleteMarker) go one by one.

import (
	"errors"
	"fmt"

	gozk "github.com/go-zookeeper/zk"

	"github.com/sluice-io/sluice/coordinator/controller"
	"github.com/sluice-io/sluice/engine"
)

// maxMultiBytes bounds the estimated size of one multi-op, well below
// ZooKeeper's default jute.maxbuffer of 1 MiB (0xfffff bytes) that a
// request must fit in.
const maxMultiBytes = 512 << 10

// opOverhead is an estimate of a multi-op's bytes per operation beside
// its path and data: headers, flags, version and the open ACL.
const opOverhead = 64

// opSize estimates an operation's bytes in a multi-op request.
func opSize(op any) int {
	switch op := op.(type) {
	case *gozk.CreateRequest:
		return opOverhead + len(op.Path) + len(op.Data)
	case *gozk.SetDataRequest:
		return opOverhead + len(op.Path) + len(op.Data)
	case *gozk.DeleteRequest:
		return opOverhead + len(op.Path)
	case *gozk.CheckVersionRequest:
		return opOverhead + len(op.Path)
	}
	return opOverhead
}

// stateOps returns the operations of a CreateState or UpdateState; with
// parents, a CreateState also creates its partition's znode and, when
// topicParent, the topic's partitions znode before it.
func stateOps(w controller.Write, parents, topicParent bool) []any {
	data := EncodePartitionState(PartitionState{
		Leader: w.State.Leader, LeaderEpoch: w.State.LeaderEpoch, ISR: w.State.ISR,
		ControllerEpoch: w.State.ControllerEpoch, LeaderRecoveryState: w.State.LeaderRecoveryState,
	})
	p := PartitionStatePath(w.Topic, w.Partition)
	if w.Op == controller.UpdateState {
		return []any{&gozk.SetDataRequest{Path: p, Data: data, Version: w.State.PartitionEpoch}}
	}
	var ops []any
	if topicParent {
		ops = append(ops, &gozk.CreateRequest{Path: PartitionsPath(w.Topic), Acl: openACL})
	}
	if parents {
		ops = append(ops, &gozk.CreateRequest{Path: PartitionPath(w.Topic, w.Partition), Acl: openACL})
	}
	return append(ops, &gozk.CreateRequest{Path: p, Data: data, Acl: openACL})
}

// stateBatch is one multi-op of state writes.
type stateBatch struct {
	writes []controller.Write
	ops    []any
	// last[i] is the index in ops of writes[i]'s state operation.
	last []int
}

// batchStates splits state writes into multi-ops within maxMultiBytes.
// A CreateState creates its partition's znode too, and the first of a
// topic with no state known to exist (hasState false) the topic's
// partitions znode: a new topic's znodes go in one multi-op per batch. A
// multi that fails on a parent that exists (a state znode someone deleted)
// is done again write by write.
func batchStates(ws []controller.Write, hasState func(topic string) bool) []stateBatch {
	var out []stateBatch
	var cur stateBatch
	size := 0
	parented := map[string]bool{}
	for _, w := range ws {
		create := w.Op == controller.CreateState
		topicParent := create && !parented[w.Topic] && !hasState(w.Topic)
		ops := stateOps(w, create, topicParent)
		n := 0
		for _, op := range ops {
			n += opSize(op)
		}
		if len(cur.writes) > 0 && size+n > maxMultiBytes {
			out = append(out, cur)
			cur, size = stateBatch{}, 0
		}
		if topicParent {
			parented[w.Topic] = true
		}
		cur.writes = append(cur.writes, w)
		cur.ops = append(cur.ops, ops...)
		cur.last = append(cur.last, len(cur.ops)-1)
		size += n
	}
	if len(cur.writes) > 0 {
		out = append(out, cur)
	}
	return out
}

// moved translates Multi's ErrControllerMoved into the core's.
func moved(err error) error {
	if errors.Is(err, ErrControllerMoved) {
		return fmt.Errorf("%w: %v", controller.ErrControllerMoved, err)
	}
	return err
}

// writeStates performs one batch and returns a result per write.
func (c *Client) writeStates(e Election, b stateBatch) []controller.WriteResult {
	res, err := c.Multi(e, b.ops...)
	out := make([]controller.WriteResult, len(b.writes))
	if err == nil {
		for i, w := range b.writes {
			out[i] = controller.WriteResult{Write: w, Version: stateVersion(w, res[b.last[i]])}
		}
		return out
	}
	if errors.Is(err, ErrControllerMoved) || len(res) == 0 {
		// Fenced, or no answer (the connection went): the same for all.
		for i, w := range b.writes {
			out[i] = controller.WriteResult{Write: w, Err: moved(err)}
		}
		return out
	}
	for i, w := range b.writes {
		out[i] = c.writeState(e, w)
	}
	return out
}

func stateVersion(w controller.Write, r gozk.MultiResponse) int32 {
	if w.Op == controller.UpdateState && r.Stat != nil {
		return r.Stat.Version
	}
	return 0
}

// writeState performs one state write alone: its parents first (fenced,
// existing ones ignored), then the state znode.
func (c *Client) writeState(e Election, w controller.Write) controller.WriteResult {
	if w.Op == controller.CreateState {
		for _, p := range []string{PartitionsPath(w.Topic), PartitionPath(w.Topic, w.Partition)} {
			_, err := c.Multi(e, &gozk.CreateRequest{Path: p, Acl: openACL})
			if err != nil && !errors.Is(err, gozk.ErrNodeExists) {
				return c.stateResult(w, err)
			}
		}
	}
	res, err := c.Multi(e, stateOps(w, false, false)...)
	if err == nil {
		return controller.WriteResult{Write: w, Version: stateVersion(w, res[0])}
	}
	return c.stateResult(w, err)
}

// stateResult is the result of a state write that failed with err: a
// conflict (the znode existed for a create, or had another version or
// none for an update) is read back into Current.
func (c *Client) stateResult(w controller.Write, err error) controller.WriteResult {
	r := controller.WriteResult{Write: w, Err: moved(err)}
	if !errors.Is(err, gozk.ErrNodeExists) && !errors.Is(err, gozk.ErrBadVersion) && !errors.Is(err, gozk.ErrNoNode) {
		return r
	}
	tp := engine.Partition{Topic: w.Topic, Partition: w.Partition}
	s, ok, rerr := c.readState(tp)
	if rerr != nil {
		r.Err = fmt.Errorf("zk: %s: %v, then reading it back: %w", PartitionStatePath(w.Topic, w.Partition), err, rerr)
		return r
	}
	r.Err = fmt.Errorf("%w: %s: %v", controller.ErrConflict, PartitionStatePath(w.Topic, w.Partition), err)
	if ok {
		r.Current = &s
	}
	return r
}

// writeTopic performs a topic-level write.
func (c *Client) writeTopic(e Election, w controller.Write) controller.WriteResult {
	r := controller.WriteResult{Write: w}
	switch w.Op {
	case controller.SetAssignment:
		data := EncodeTopic(TopicAssignment{ID: w.Assignment.ID, Replicas: w.Assignment.Replicas,
			Adding: w.Assignment.Adding, Removing: w.Assignment.Removing})
		res, err := c.Multi(e, &gozk.SetDataRequest{Path: TopicPath(w.Topic), Data: data, Version: w.Assignment.Version})
		if errors.Is(err, gozk.ErrBadVersion) || errors.Is(err, gozk.ErrNoNode) {
			err = fmt.Errorf("%w: %s: %v", controller.ErrConflict, TopicPath(w.Topic), err)
		}
		if err == nil && len(res) > 0 && res[len(res)-1].Stat != nil {
			r.Version = res[len(res)-1].Stat.Version
		}
		r.Err = moved(err)
	case controller.RemoveReassignments:
		r.Err = moved(c.removeReassignments(e, w.Reassignments))
	case controller.DeleteTopic:
		r.Err = moved(c.deleteTopicZnodes(e, w.Topic))
	case controller.RemoveDeleteMarker:
		r.Err = moved(c.deleteFenced(e, []string{DeleteTopicPath(w.Topic)}))
	default:
		r.Err = fmt.Errorf("zk: unknown controller write %v", w.Op)
	}
	return r
}

// deleteTopicZnodes deletes /brokers/topics/<t> and everything under it,
// then /config/topics/<t>, then /admin/delete_topics/<t> (Kafka's
// onTopicDeletion order); znodes already gone are skipped.
func (c *Client) deleteTopicZnodes(e Election, topic string) error {
	var paths []string
	parts, _, err := c.conn.Children(c.abs(PartitionsPath(topic)))
	if err != nil && !errors.Is(err, gozk.ErrNoNode) {
		return fmt.Errorf("zk: list %s: %w", PartitionsPath(topic), err)
	}
	for _, name := range parts {
		p, err := ParsePartition(topic, name)
		if err != nil {
			return err
		}
		paths = append(paths, PartitionStatePath(topic, p), PartitionPath(topic, p))
	}
	if err == nil {
		paths = append(paths, PartitionsPath(topic))
	}
	paths = append(paths, TopicPath(topic), ConfigEntityPath(ConfigTopics, topic), DeleteTopicPath(topic))
	return c.deleteFenced(e, paths)
}

// deleteFenced deletes paths in order, as multi-ops within maxMultiBytes,
// fenced on the controller epoch. A multi that fails on a missing znode is
// done again path by path, missing ones skipped.
func (c *Client) deleteFenced(e Election, paths []string) error {
	for len(paths) > 0 {
		var ops []any
		size := 0
		for _, p := range paths {
			op := &gozk.DeleteRequest{Path: p, Version: -1}
			if len(ops) > 0 && size+opSize(op) > maxMultiBytes {
				break
			}
			ops = append(ops, op)
			size += opSize(op)
		}
		paths = paths[len(ops):]
		_, err := c.Multi(e, ops...)
		if err == nil || !errors.Is(err, gozk.ErrNoNode) {
			if err != nil {
				return fmt.Errorf("zk: delete %s: %w", ops[0].(*gozk.DeleteRequest).Path, err)
			}
			continue
		}
		for _, op := range ops {
			d := op.(*gozk.DeleteRequest)
			if _, err := c.Multi(e, d); err != nil && !errors.Is(err, gozk.ErrNoNode) {
				return fmt.Errorf("zk: delete %s: %w", d.Path, err)
			}
		}
	}
	return nil
}

// hasStates reports, for the topics of ws, whether the core knows a state
// of one of their partitions (their parents exist then).
func hasStates(core *controller.Controller, ws []controller.Write) func(string) bool {
	known := map[string]bool{}
	for _, w := range ws {
		if _, ok := known[w.Topic]; ok {
			continue
		}
		known[w.Topic] = false
		if a, ok := core.Topic(w.Topic); ok {
			for p := range a.Replicas {
				if _, ok := core.State(engine.Partition{Topic: w.Topic, Partition: int32(p)}); ok {
					known[w.Topic] = true
					break
				}
			}
		}
	}
	return func(t string) bool { return known[t] }
}
