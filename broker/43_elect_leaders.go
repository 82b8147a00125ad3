package broker

// ElectLeaders (key 43), versions 0-2: an administrator asks the
// controller for preferred or unclean leader elections (KIP-183, KIP-460).
//
// Behavior, as Kafka 3.9's ZooKeeper-mode broker (KafkaApis.handleElectLeaders,
// ReplicaManager.electLeaders, DelayedElectLeader):
//   - Clients send it to the controller (the admin client's
//     ControllerNodeProvider). A broker that is not the controller does not
//     forward it: every partition is answered NOT_CONTROLLER.
//   - A null topic list names every partition of this broker's metadata;
//     the partitions that needed no election are then left out of the
//     answer.
//   - The elections are the decision core's (coordinator/controller/
//     elect.go): PREFERRED moves leadership to the first replica when it is
//     live and in the ISR (ELECTION_NOT_NEEDED if it leads already,
//     PREFERRED_LEADER_NOT_AVAILABLE otherwise); UNCLEAN elects a leader for
//     a partition without a live one, from outside the ISR if need be,
//     whatever the topic's unclean.leader.election.enable (records the new
//     leader lacks are lost); UNKNOWN_TOPIC_OR_PARTITION and
//     INVALID_TOPIC_EXCEPTION (a topic being deleted) as Kafka.
//   - A partition whose leader was elected is answered once this broker's
//     metadata shows that leader, or REQUEST_TIMED_OUT at the request's
//     timeout_ms.
//   - An election type other than 0 and 1 fails the request as Kafka's
//     parse of it does: UNKNOWN_SERVER_ERROR for the request and every
//     partition named.
//
// Version notes: v0 has no election type (PREFERRED) and no top-level
// error code; v1 adds both; v2 is the flexible version.
//
// Authorization: Alter on the cluster; without it CLUSTER_AUTHORIZATION_FAILED
// at the top and on every partition named.

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/broker/cluster"
	"github.com/sluice-io/sluice/coordinator"
	"github.com/sluice-io/sluice/coordinator/controller"
	"github.com/sluice-io/sluice/coordinator/zk"
	"github.com/sluice-io/sluice/engine"
	"github.com/sluice-io/sluice/security/acl"
	"github.com/sluice-io/sluice/wire"
)

func init() { register(43, 0, 2, handleElectLeaders) }

// electLeadersTimeout bounds the wait for the controller's decisions (as
// AlterPartition's); the wait for this broker's metadata is the
// request's own timeout.
const electLeadersTimeout = 30 * time.Second

func handleElectLeaders(c *conn, h wire.Header, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.ElectLeadersRequest)
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
	if !c.authorizedCluster(acl.OpAlter) {
		// Every partition named fails; none for an election of all.
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		fillElections(resp, controller.RefuseElection(tps, kerr.ClusterAuthorizationFailed.Code))
		return resp, nil
	}
	if typ != controller.PreferredElection && typ != controller.UncleanElection {
		resp.ErrorCode = kerr.UnknownServerError.Code
		fillElections(resp, controller.RefuseElection(tps, kerr.UnknownServerError.Code))
		return resp, nil
	}
	all := req.Topics == nil
	if all {
		tps = c.b.ctl.Cache.Load().Partitions()
	}
	results := controller.RefuseElection(tps, kerr.NotController.Code)
	if elect := c.b.electLeadersDriver(); elect != nil {
		ctx, cancel := c.b.closingContext(electLeadersTimeout)
		out, err := elect(ctx, typ, tps)
		cancel()
		if err != nil {
			out = controller.RefuseElection(tps, kerr.RequestTimedOut.Code)
		}
		results = out
		c.b.awaitElected(results, deadline)
	}
	if all {
		results = slices.DeleteFunc(results, func(r controller.ElectionResult) bool { return r.ErrorCode == kerr.ElectionNotNeeded.Code })
	}
	fillElections(resp, results)
	return resp, nil
}

// awaitElected waits until this broker's metadata shows the leader of
// every partition elected (error 0), as Kafka's DelayedElectLeader, and
// answers those it does not show by deadline REQUEST_TIMED_OUT.
func (b *Broker) awaitElected(results []controller.ElectionResult, deadline time.Time) {
	shows := func(s *cluster.Snapshot, r controller.ElectionResult) bool {
		t := s.Topics[r.Partition.Topic]
		if t == nil {
			return false
		}
		p, ok := t.Partitions[r.Partition.Partition]
		return ok && p.Leader == r.Leader
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	b.ctl.Cache.Wait(ctx, func(s *cluster.Snapshot) bool {
		for _, r := range results {
			if r.ErrorCode == 0 && !shows(s, r) {
				return false
			}
		}
		return true
	})
	s := b.ctl.Cache.Load()
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

// electLeadersDriver returns the controller driver's ElectLeaders, nil
// when no controller driver runs here (controllerEntry).
func (b *Broker) electLeadersDriver() func(context.Context, controller.ElectionType, []engine.Partition) ([]controller.ElectionResult, error) {
	type elect = func(context.Context, controller.ElectionType, []engine.Partition) ([]controller.ElectionResult, error)
	return controllerEntry(b, func(l *zk.ControllerLoop) elect { return l.ElectLeaders }, func(e *coordinator.Embedded) elect { return e.ElectLeaders })
}
