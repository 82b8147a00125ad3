package cluster

// The administration requests the controller answers, as Kafka's
// KafkaApis routes them to its controller: ElectLeaders (then the wait for
// this broker's metadata to show the leaders elected, Kafka's
// DelayedElectLeader), AlterPartitionReassignments and
// ListPartitionReassignments. The controller is the one running on this
// broker (zk.ControllerLoop, or the single node's coordinator.Embedded:
// DirectoryOptions.Controller); without one they are NOT_CONTROLLER, and
// the client asks the controller Metadata names. The rules each answers by
// are written in its handler's file (broker/43, 45 and 46).

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/coordinator/controller"
	"github.com/sluice-io/sluice/engine"
)

// Controller is a controller driver's entry points for the
// administration requests (zk.ControllerLoop and coordinator.Embedded).
type Controller interface {
	ElectLeaders(ctx context.Context, typ controller.ElectionType, partitions []engine.Partition) ([]controller.ElectionResult, error)
	AlterReassignments(ctx context.Context, targets []controller.ReassignTarget) (controller.ReassignAnswer, error)
	ListReassignments(ctx context.Context) ([]controller.Reassignment, bool, error)
}

// electLeadersTimeout bounds the wait for the controller's decisions (as
// AlterPartition's); the wait for this broker's metadata is the
// request's own timeout.
const electLeadersTimeout = 30 * time.Second

// reassignTimeout is the least a reassignment request waits for the
// controller.
const reassignTimeout = 30 * time.Second

// closingContext is a context that ends after timeout or when the broker
// closes.
func (d *Directory) closingContext(timeout time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	if d.o.Closing != nil {
		go func() {
			select {
			case <-d.o.Closing:
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	return ctx, cancel
}

// controller is the controller driver running here, nil when none does.
func (d *Directory) controller() Controller {
	if d.o.Controller == nil {
		return nil
	}
	return d.o.Controller()
}

// ElectLeaders answers an ElectLeaders request; allowed is the client's
// Alter on the cluster.
func (d *Directory) ElectLeaders(req *kmsg.ElectLeadersRequest, allowed bool) *kmsg.ElectLeadersResponse {
	resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
	deadline := time.Now().Add(time.Duration(max(req.TimeoutMillis, 0)) * time.Millisecond)
	typ := controller.PreferredElection
	if req.Version >= 1 {
		typ = controller.ElectionType(req.ElectionType)
	}
	var tps []engine.Partition
	for _, rt := range req.Topics {
		for _, p := range rt.Partitions {
			tps = append(tps, engine.Partition{Topic: rt.Topic, Partition: p})
		}
	}
	if !allowed {
		// Every partition named fails; none for an election of all.
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		fillElections(resp, controller.RefuseElection(tps, kerr.ClusterAuthorizationFailed.Code))
		return resp
	}
	if typ != controller.PreferredElection && typ != controller.UncleanElection {
		resp.ErrorCode = kerr.UnknownServerError.Code
		fillElections(resp, controller.RefuseElection(tps, kerr.UnknownServerError.Code))
		return resp
	}
	all := req.Topics == nil
	if all {
		tps = d.o.Cache.Load().Partitions()
	}
	results := controller.RefuseElection(tps, kerr.NotController.Code)
	if ctl := d.controller(); ctl != nil {
		ctx, cancel := d.closingContext(electLeadersTimeout)
		out, err := ctl.ElectLeaders(ctx, typ, tps)
		cancel()
		if err != nil {
			out = controller.RefuseElection(tps, kerr.RequestTimedOut.Code)
		}
		results = out
		d.awaitElected(results, deadline)
	}
	if all {
		results = slices.DeleteFunc(results, func(r controller.ElectionResult) bool { return r.ErrorCode == kerr.ElectionNotNeeded.Code })
	}
	fillElections(resp, results)
	return resp
}

// awaitElected waits until the cache shows the leader of every partition
// elected (error 0), as Kafka's DelayedElectLeader, and answers those it
// does not show by deadline REQUEST_TIMED_OUT.
func (d *Directory) awaitElected(results []controller.ElectionResult, deadline time.Time) {
	shows := func(s *Snapshot, r controller.ElectionResult) bool {
		t := s.Topics[r.Partition.Topic]
		if t == nil {
			return false
		}
		p, ok := t.Partitions[r.Partition.Partition]
		return ok && p.Leader == r.Leader
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	d.o.Cache.Wait(ctx, func(s *Snapshot) bool {
		for _, r := range results {
			if r.ErrorCode == 0 && !shows(s, r) {
				return false
			}
		}
		return true
	})
	s := d.o.Cache.Load()
	for i, r := range results {
		if r.ErrorCode == 0 && !shows(s, r) {
			results[i] = controller.ElectionResult{Partition: r.Partition, ErrorCode: kerr.RequestTimedOut.Code, Leader: controller.NoLeader}
		}
	}
}

// fillElections puts results in resp, by topic and partition.
func fillElections(resp *kmsg.ElectLeadersResponse, results []controller.ElectionResult) {
	slices.SortFunc(results, func(a, b controller.ElectionResult) int {
		return cmp.Or(cmp.Compare(a.Partition.Topic, b.Partition.Topic), cmp.Compare(a.Partition.Partition, b.Partition.Partition))
	})
	for _, r := range results {
		if n := len(resp.Topics); n == 0 || resp.Topics[n-1].Topic != r.Partition.Topic {
			rt := kmsg.NewElectLeadersResponseTopic()
			rt.Topic = r.Partition.Topic
			resp.Topics = append(resp.Topics, rt)
		}
		rp := kmsg.NewElectLeadersResponseTopicPartition()
		rp.Partition, rp.ErrorCode, rp.ErrorMessage = r.Partition.Partition, r.ErrorCode, r.Message
		rt := &resp.Topics[len(resp.Topics)-1]
		rt.Partitions = append(rt.Partitions, rp)
	}
}

// AlterReassignments answers an AlterPartitionReassignments request;
// allowed is the client's Alter on the cluster.
func (d *Directory) AlterReassignments(req *kmsg.AlterPartitionAssignmentsRequest, allowed bool) *kmsg.AlterPartitionAssignmentsResponse {
	resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	var targets []controller.ReassignTarget
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			targets = append(targets, controller.ReassignTarget{Partition: engine.Partition{Topic: rt.Topic, Partition: rp.Partition}, Replicas: rp.Replicas})
		}
	}
	if !allowed {
		// As Kafka's error response: the error at the top and on every
		// partition.
		msg := "Cluster authorization failed."
		resp.ErrorCode, resp.ErrorMessage = kerr.ClusterAuthorizationFailed.Code, &msg
		for _, rt := range req.Topics {
			st := kmsg.NewAlterPartitionAssignmentsResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				sp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
				sp.Partition, sp.ErrorCode, sp.ErrorMessage = rp.Partition, kerr.ClusterAuthorizationFailed.Code, &msg
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp
	}
	ctl := d.controller()
	if ctl == nil {
		resp.ErrorCode = kerr.NotController.Code
		return resp
	}
	ctx, cancel := d.closingContext(max(time.Duration(req.TimeoutMillis)*time.Millisecond, reassignTimeout))
	a, err := ctl.AlterReassignments(ctx, targets)
	cancel()
	if err != nil {
		resp.ErrorCode = kerr.RequestTimedOut.Code
		return resp
	}
	resp.ErrorCode = a.ErrorCode
	for _, res := range a.Results {
		i := len(resp.Topics) - 1
		for j := range resp.Topics {
			if resp.Topics[j].Topic == res.Partition.Topic {
				i = j
				break
			}
		}
		if i < 0 || resp.Topics[i].Topic != res.Partition.Topic {
			rt := kmsg.NewAlterPartitionAssignmentsResponseTopic()
			rt.Topic = res.Partition.Topic
			resp.Topics = append(resp.Topics, rt)
			i = len(resp.Topics) - 1
		}
		rp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
		rp.Partition, rp.ErrorCode, rp.ErrorMessage = res.Partition.Partition, res.ErrorCode, res.Message
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, rp)
	}
	return resp
}

// ListReassignments answers a ListPartitionReassignments request; allowed
// is the client's Describe on the cluster.
func (d *Directory) ListReassignments(req *kmsg.ListPartitionReassignmentsRequest, allowed bool) *kmsg.ListPartitionReassignmentsResponse {
	resp := req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
	if !allowed {
		msg := "Cluster authorization failed."
		resp.ErrorCode, resp.ErrorMessage = kerr.ClusterAuthorizationFailed.Code, &msg
		return resp
	}
	ctl := d.controller()
	if ctl == nil {
		resp.ErrorCode = kerr.NotController.Code
		return resp
	}
	ctx, cancel := d.closingContext(reassignTimeout)
	rs, ok, err := ctl.ListReassignments(ctx)
	cancel()
	switch {
	case err != nil:
		resp.ErrorCode = kerr.RequestTimedOut.Code
		return resp
	case !ok:
		resp.ErrorCode = kerr.NotController.Code
		return resp
	}
	var asked map[engine.Partition]bool
	if req.Topics != nil {
		asked = map[engine.Partition]bool{}
		for _, rt := range req.Topics {
			for _, p := range rt.Partitions {
				asked[engine.Partition{Topic: rt.Topic, Partition: p}] = true
			}
		}
	}
	for _, ra := range rs {
		if asked != nil && !asked[ra.Partition] {
			continue
		}
		if n := len(resp.Topics); n == 0 || resp.Topics[n-1].Topic != ra.Partition.Topic {
			rt := kmsg.NewListPartitionReassignmentsResponseTopic()
			rt.Topic = ra.Partition.Topic
			resp.Topics = append(resp.Topics, rt)
		}
		rp := kmsg.NewListPartitionReassignmentsResponseTopicPartition()
		rp.Partition = ra.Partition.Partition
		rp.Replicas = slices.Clone(ra.Replicas)
		rp.AddingReplicas, rp.RemovingReplicas = nonNil(ra.Adding), nonNil(ra.Removing)
		rt := &resp.Topics[len(resp.Topics)-1]
		rt.Partitions = append(rt.Partitions, rp)
	}
	return resp
}

func nonNil(rs []int32) []int32 {
	if rs == nil {
		return []int32{}
	}
	return rs
}
