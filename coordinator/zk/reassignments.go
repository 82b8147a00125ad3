package zk

// The controller driver's part in partition reassignments (the decision
// core's reassign.go decides them):
//
//   - AlterReassignments hands an administrator's
//     AlterPartitionReassignments to the loop, and ListReassignments asks
//     it for the ongoing ones, as ElectLeaders does (elections.go): a
//     broker that is not the controller answers NOT_CONTROLLER.
//   - /admin/reassign_partitions (the legacy way, Kafka's
//     PartitionReassignmentHandler): a term watches it from its election
//     on, and each time it is created or changed reads it and Steps its
//     entries (ZkReassignments). A payload that does not decode is logged
//     and left alone (Kafka fails the event likewise); the term goes on.
//   - RemoveReassignments writes: the znode read, the named entries
//     dropped, written back (or deleted when empty) conditional on the
//     version read, again on a conflict.

import (
	"context"
	"errors"
	"fmt"
	"slices"

	gozk "github.com/go-zookeeper/zk"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-io/sluice/coordinator/controller"
	"github.com/sluice-io/sluice/engine"
)

// reassignCall is an AlterPartitionReassignments handed to the loop, and
// where its answer goes (capacity 1).
type reassignCall struct {
	ev    controller.AlterReassignments
	reply chan controller.ReassignAnswer
}

// listCall asks the loop for the ongoing reassignments (capacity 1).
type listCall struct {
	reply chan []controller.Reassignment
}

// AlterReassignments hands reassignment targets to the controller and
// returns its answer (NOT_CONTROLLER for the whole request from a broker
// that is not the controller), or ctx's error when ctx ends first.
func (l *ControllerLoop) AlterReassignments(ctx context.Context, targets []controller.ReassignTarget) (controller.ReassignAnswer, error) {
	call := reassignCall{ev: controller.AlterReassignments{Targets: targets}, reply: make(chan controller.ReassignAnswer, 1)}
	return ask(l, ctx, l.reassigns, call, call.reply, notControllerReassign)
}

func notControllerReassign() controller.ReassignAnswer {
	return controller.ReassignAnswer{ErrorCode: kerr.NotController.Code}
}

// ListReassignments returns the ongoing reassignments; ok is false when
// this broker is not the controller.
func (l *ControllerLoop) ListReassignments(ctx context.Context) (rs []controller.Reassignment, ok bool, err error) {
	call := listCall{reply: make(chan []controller.Reassignment, 1)}
	got, err := ask(l, ctx, l.lists, call, call.reply, func() []controller.Reassignment { return nil })
	return got, got != nil, err // the loop answers non-nil
}

// reassign Steps an AlterReassignments into the core.
func (t *term) reassign(call reassignCall) {
	call.ev.ID = t.ra.add(call)
	t.l.log.Info("partition reassignment requested", "partitions", len(call.ev.Targets))
	t.core.Step(call.ev)
}

// list answers a listCall from the core.
func (t *term) list(call listCall) {
	rs := t.core.Reassignments()
	if rs == nil {
		rs = []controller.Reassignment{}
	}
	call.reply <- rs
}

// answerReassignments sends the core's answers to their callers.
func (t *term) answerReassignments(as []controller.ReassignAnswer) {
	for _, a := range as {
		if call, ok := t.ra.take(a.ID); ok {
			call.reply <- a
		}
	}
}

// endReassignments answers the requests the term still holds
// NOT_CONTROLLER.
func (t *term) endReassignments() {
	t.ra.drain(func(call reassignCall) { call.reply <- notControllerReassign() })
}

// zkReassignmentsChanged reads /admin/reassign_partitions with a watch on
// it (on its creation when missing) and Steps its entries.
func (t *term) zkReassignmentsChanged() error {
	c := t.l.client
	data, _, ch, err := c.conn.GetW(c.abs(ReassignPartitionsPath))
	if errors.Is(err, gozk.ErrNoNode) {
		var exists bool
		exists, _, ch, err = c.conn.ExistsW(c.abs(ReassignPartitionsPath))
		if err != nil {
			return fmt.Errorf("zk: watch %s: %w", ReassignPartitionsPath, err)
		}
		t.forward(ch, watchReassign, "")
		if exists {
			return t.zkReassignmentsChanged() // created meanwhile: read it
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("zk: read %s: %w", ReassignPartitionsPath, err)
	}
	t.forward(ch, watchReassign, "")
	rs, err := DecodeReassignment(data)
	if err != nil {
		t.l.log.Warn("ignoring a reassignment plan that does not decode", "path", ReassignPartitionsPath, "err", err)
		return nil
	}
	ev := controller.ZkReassignments{Targets: make([]controller.ReassignTarget, len(rs))}
	for i, r := range rs {
		ev.Targets[i] = controller.ReassignTarget{Partition: engine.Partition{Topic: r.Topic, Partition: r.Partition}, Replicas: r.Replicas}
	}
	t.l.log.Info("partition reassignment read", "path", ReassignPartitionsPath, "partitions", len(rs))
	t.core.Step(ev)
	return nil
}

// maxRemovalTries bounds a RemoveReassignments' read-modify-write rounds
// against writers of the znode (the core asks again after an error).
const maxRemovalTries = 10

// removeReassignments performs a RemoveReassignments: the entries named
// leave /admin/reassign_partitions, which is deleted once empty.
func (c *Client) removeReassignments(e Election, drop []controller.ReassignTarget) error {
	matches := func(r PartitionReassignment) bool {
		return slices.ContainsFunc(drop, func(d controller.ReassignTarget) bool {
			return d.Partition.Topic == r.Topic && d.Partition.Partition == r.Partition &&
				(d.Replicas == nil || slices.Equal(d.Replicas, r.Replicas))
		})
	}
	for range maxRemovalTries {
		data, stat, err := c.conn.Get(c.abs(ReassignPartitionsPath))
		if errors.Is(err, gozk.ErrNoNode) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("zk: read %s: %w", ReassignPartitionsPath, err)
		}
		rs, err := DecodeReassignment(data)
		if err != nil {
			return err // left alone: an administrator's to fix
		}
		kept := slices.DeleteFunc(slices.Clone(rs), matches)
		if len(kept) == len(rs) {
			return nil
		}
		var op any = &gozk.SetDataRequest{Path: ReassignPartitionsPath, Data: EncodeReassignment(kept), Version: stat.Version}
		if len(kept) == 0 {
			op = &gozk.DeleteRequest{Path: ReassignPartitionsPath, Version: stat.Version}
		}
		_, err = c.Multi(e, op)
		if errors.Is(err, gozk.ErrBadVersion) || errors.Is(err, gozk.ErrNoNode) {
			continue // changed meanwhile: read again
		}
		if err != nil {
			return fmt.Errorf("zk: write %s: %w", ReassignPartitionsPath, err)
		}
		return nil
	}
	return fmt.Errorf("zk: %s kept changing", ReassignPartitionsPath)
}
