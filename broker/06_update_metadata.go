package broker

// UpdateMetadata (key 6), versions 0-8: the controller sends this broker
// the live brokers and partition states, which it keeps in the metadata
// cache (broker/cluster) for Metadata, DescribeCluster and
// FindCoordinator in ZooKeeper mode.
//
// Behavior:
//   - Fenced as every control request (broker/cluster/control.go): a stale broker
//     epoch gets STALE_BROKER_EPOCH, a sender that is not the controller or
//     a controller epoch below the highest seen STALE_CONTROLLER_EPOCH
//     (Kafka's ControllerMovedException), the response's only field. The
//     single node refuses every request from the network this way.
//   - Accepted: the cache takes the request (the live brokers replaced, the
//     named partitions merged, those led by -2 removed) and the answer is
//     NONE. Kafka then also drops the deleted partitions' group offsets;
//     that comes with ZooKeeper mode's wiring.
//
// Version notes: v0 brokers with one host and port; v1+ endpoints; v2+
// racks; v3+ listener names; v4+ offline replicas; v5+ broker epoch and
// partitions grouped by topic; v6+ flexible; v7+ topic ids; v8
// IsKRaftController.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/broker/cluster"
	"github.com/sluice-io/sluice/engine"
	"github.com/sluice-io/sluice/security/acl"
	"github.com/sluice-io/sluice/wire"
)

func init() { register(6, 0, 8, handleUpdateMetadata) }

func handleUpdateMetadata(c *conn, h wire.Header, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.UpdateMetadataRequest)
	if !c.authorizedCluster(acl.OpClusterAction) {
		resp := req.ResponseKind().(*kmsg.UpdateMetadataResponse)
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	return c.b.updateMetadata(req, c.b.plane.state.Fence), nil
}

// updateMetadata handles an UpdateMetadata fenced by fence (see
// leaderAndIsr).
func (b *Broker) updateMetadata(req *kmsg.UpdateMetadataRequest, fence cluster.FenceFunc) *kmsg.UpdateMetadataResponse {
	resp := req.ResponseKind().(*kmsg.UpdateMetadataResponse)
	var deleted []engine.Partition
	resp.ErrorCode = fence(req.ControllerID, req.ControllerEpoch, req.BrokerEpoch, req.Version >= 5, req.IsKRaftController,
		func() { deleted = b.plane.state.Cache.Update(req) })
	if resp.ErrorCode == 0 {
		b.replicas.SetLiveBrokers(b.liveIDs()) // replicas.go
	}
	// The committed offsets of deleted topics go, on every broker for the
	// groups it coordinates, as Kafka's handleUpdateMetadataRequest has
	// its group coordinator handle deleted partitions.
	if g := b.coords.groups.Existing(); len(deleted) > 0 {
		done := map[string]bool{}
		for _, tp := range deleted {
			if !done[tp.Topic] {
				done[tp.Topic] = true
				if n := g.DeleteTopicOffsets(tp.Topic); n > 0 {
					b.log.Info("removed the committed offsets of a deleted topic", "topic", tp.Topic, "offsets", n)
				}
			}
		}
	}
	return resp
}
