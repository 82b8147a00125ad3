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
//     host.AppendHow.Coordinator, replication/host/owner.go), so it is not refused as a
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
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/engine"
	"github.com/sluice-io/sluice/replication/host"
	"github.com/sluice-io/sluice/security/acl"
	"github.com/sluice-io/sluice/wire"
)

func init() { register(27, 0, 1, handleWriteTxnMarkers) }

// markerTimeout is how long a marker waits for its replicas: Kafka uses
// request.timeout.ms, 30 s by default.
const markerTimeout = 30 * time.Second

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
// and answers per partition (see the top of the file). ctx's deadline, if
// sooner than markerTimeout, bounds the wait for the replicas.
func (b *Broker) writeTxnMarkers(ctx context.Context, req *kmsg.WriteTxnMarkersRequest) *kmsg.WriteTxnMarkersResponse {
	resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	type written struct {
		p      *host.Partition
		end    int64
		mi     int // the marker's index
		ti, pi int
	}
	var done []written
	now := time.Now().UnixMilli()
	var buf []byte
	for mi := range req.Markers {
		m := &req.Markers[mi]
		rm := kmsg.NewWriteTxnMarkersResponseMarker()
		rm.ProducerID = m.ProducerID
		typ := engine.ControlAbort
		if m.Committed {
			typ = engine.ControlCommit
		}
		for _, t := range m.Topics {
			rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			rt.Topic = t.Topic
			for _, index := range t.Partitions {
				rp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				rp.Partition = index
				buf = engine.AppendControlBatch(buf[:0], m.ProducerID, m.ProducerEpoch, typ, m.CoordinatorEpoch, now)
				p, end, code := b.writeMarker(t.Topic, index, buf)
				if rp.ErrorCode = code; code == 0 {
					done = append(done, written{p, end, mi, len(rm.Topics), len(rt.Partitions)})
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			rm.Topics = append(rm.Topics, rt)
		}
		resp.Markers = append(resp.Markers, rm)
	}
	timeout := markerTimeout
	if d, ok := ctx.Deadline(); ok {
		timeout = min(timeout, max(time.Until(d), 0))
	}
	for _, w := range done {
		rp := &resp.Markers[w.mi].Topics[w.ti].Partitions[w.pi]
		if err := w.p.AwaitReplicated(w.end, timeout, b.closing); err != nil {
			rp.ErrorCode = host.ErrorCode(err)
			continue
		}
		if w.p.Topic == offsetsTopic {
			m := &req.Markers[w.mi]
			b.groups.Existing().CompleteTxn(w.p.Index, m.ProducerID, m.Committed)
		}
	}
	return resp
}

// writeMarker appends one marker batch to a partition this broker leads
// and returns the partition and its log end after the marker, or the
// partition's error code.
func (b *Broker) writeMarker(topic string, index int32, batch []byte) (*host.Partition, int64, int16) {
	p := b.partition(topic, index)
	switch {
	case p == nil:
		return nil, 0, kerr.UnknownTopicOrPartition.Code
	case !p.Leads():
		return nil, 0, kerr.NotLeaderForPartition.Code
	}
	if err := p.CheckAcksAll(); err != nil {
		return nil, 0, host.ErrorCode(err)
	}
	res, err := p.AppendAsLeader(batch, host.AppendHow{Coordinator: true, AcksAll: true})
	if err == nil {
		err = p.Log.AwaitFlushPolicy(res)
	}
	p.Notify()
	if err != nil {
		code, _ := p.AppendError(err) // logs a storage error
		return nil, 0, code
	}
	return p, res.LastOffset + 1, 0
}
