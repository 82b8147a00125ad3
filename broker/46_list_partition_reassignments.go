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
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/security/acl"
	"github.com/sluice-io/sluice/wire"
)

func init() { register(46, 0, 0, handleListPartitionReassignments) }

func handleListPartitionReassignments(c *conn, h wire.Header, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.ListPartitionReassignmentsRequest)
	return c.b.plane.dir.ListReassignments(req, c.authorizedCluster(acl.OpDescribe)), nil // broker/cluster/controlleradmin.go
}
