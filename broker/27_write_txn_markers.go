package broker

// WriteTxnMarkers (key 27), versions 0-1: a transaction coordinator asks
// the leaders of a transaction's partitions to end it there.
//
// Behavior, as Kafka 3.9's KafkaApis.handleWriteTxnMarkersRequest and the
// leader's append with origin COORDINATOR:
//   - Each marker names a producer id and epoch, commit or abort, the
//     coordinator's epoch and partitions; each partition is answered
//     apart. A partition this broker does not host is
//     UNKNOWN_TOPIC_OR_PARTITION (Kafka's getMagic finds no log), one it
//     hosts as a follower NOT_LEADER_OR_FOLLOWER.
//   - The leader appends a control batch (engine.AppendControlBatch: one
//     record, the marker's type and coordinator epoch, stamped with the
//     broker's time) as the coordinator's append (appendAsLeader with
//     host.AppendHow.Coordinator, replication/host/owner.go and markers.go), so it is not refused as a
//     client's control batch, internal topics included. An epoch below the
//     producer's in that partition is INVALID_PRODUCER_EPOCH, a coordinator
//     epoch below the one of the producer's last marker there
//     TRANSACTION_COORDINATOR_FENCED. A marker for a producer with no open
//     transaction is written (Kafka writes it; it ends nothing).
//   - The markers wait for acks=all: fewer in-sync replicas than
//     min.insync.replicas is NOT_ENOUGH_REPLICAS before the append and
//     NOT_ENOUGH_REPLICAS_AFTER_APPEND after it; REQUEST_TIMED_OUT after
//     request.timeout.ms (30 s, Kafka's default) or the caller's deadline.
//     Every partition is appended before any waits.
//   - A marker written to a partition of __consumer_offsets then ends the
//     producer's pending transactional offsets there (group.Coordinator
//     .CompleteTxn: committed or dropped), before the answer, as Kafka
//     completes them before it responds.
//   - The marker's append moves the partition's last stable offset and
//     wakes the partition's waiting fetches (read_committed ones wait for
//     it).
//
// writeTxnMarkers is the same for the in-process caller, the transaction
// coordinator's driver writing markers to partitions this broker leads.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/replication/host"
	"github.com/sluice-io/sluice/security/acl"
	"github.com/sluice-io/sluice/wire"
)

func init() { register(27, 0, 1, handleWriteTxnMarkers) }

func handleWriteTxnMarkers(c *conn, h wire.Header, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.WriteTxnMarkersRequest)
	if !c.authorizedCluster(acl.OpClusterAction) {
		resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
		for _, m := range req.Markers {
			rm := kmsg.NewWriteTxnMarkersResponseMarker()
			rm.ProducerID = m.ProducerID
			for _, t := range m.Topics {
				rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
					rp.Partition, rp.ErrorCode = p, kerr.ClusterAuthorizationFailed.Code
					rt.Partitions = append(rt.Partitions, rp)
				}
				rm.Topics = append(rm.Topics, rt)
			}
			resp.Markers = append(resp.Markers, rm)
		}
		return resp, nil
	}
	return c.b.writeTxnMarkers(context.Background(), req), nil
}

// writeTxnMarkers writes every marker of req to the partitions it names
// (replication/host/markers.go) and ends the producers' transactional
// offsets in the partitions of __consumer_offsets it reached.
func (b *Broker) writeTxnMarkers(ctx context.Context, req *kmsg.WriteTxnMarkersRequest) *kmsg.WriteTxnMarkersResponse {
	return b.replicas.WriteTxnMarkers(ctx, req, func(p *host.Partition, producerID int64, committed bool) {
		if p.Topic == offsetsTopic {
			b.coords.groups.Existing().CompleteTxn(p.Index, producerID, committed)
		}
	})
}
