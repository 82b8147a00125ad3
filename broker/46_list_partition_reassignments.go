package broker

// ListPartitionReassignments (key 46), version 0: the ongoing partition
// reassignments (KIP-455), as the controller has them.
//
// Behavior, as Kafka 3.9's (KafkaController.processListPartitionReassignments):
//   - Clients send it to the controller; a broker that is not answers
//     NOT_CONTROLLER.
//   - A null topic list asks for every ongoing reassignment; named
//     partitions that are not moving (or do not exist) are left out.
//   - Each partition carries its replicas (the target ones first, then
//     the original ones), and the adding and removing ones.
//
// Version notes: v0 only, flexible.
//
// Authorization: Describe on the cluster (CLUSTER_AUTHORIZATION_FAILED).

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/engine"
	"github.com/sluice-io/sluice/security/acl"
	"github.com/sluice-io/sluice/wire"
)

func init() { register(46, 0, 0, handleListPartitionReassignments) }

func handleListPartitionReassignments(c *conn, h wire.Header, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.ListPartitionReassignmentsRequest)
	resp := req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
	if !c.authorizedCluster(acl.OpDescribe) {
		msg := "Cluster authorization failed."
		resp.ErrorCode, resp.ErrorMessage = kerr.ClusterAuthorizationFailed.Code, &msg
		return resp, nil
	}
	list := c.b.listReassignmentsDriver()
	if list == nil {
		resp.ErrorCode = kerr.NotController.Code
		return resp, nil
	}
	ctx, cancel := c.b.closingContext(reassignTimeout)
	rs, ok, err := list(ctx)
	cancel()
	switch {
	case err != nil:
		resp.ErrorCode = kerr.RequestTimedOut.Code
		return resp, nil
	case !ok:
		resp.ErrorCode = kerr.NotController.Code
		return resp, nil
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
	return resp, nil
}

func nonNil(rs []int32) []int32 {
	if rs == nil {
		return []int32{}
	}
	return rs
}
