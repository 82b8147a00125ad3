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
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/security/acl"
	"github.com/sluice-io/sluice/wire"
)

func init() { register(43, 0, 2, handleElectLeaders) }

func handleElectLeaders(c *conn, h wire.Header, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.ElectLeadersRequest)
	return c.b.plane.dir.ElectLeaders(req, c.authorizedCluster(acl.OpAlter)), nil // broker/cluster/controlleradmin.go
}
