package host

// Sending the transaction coordinator's markers (Kafka's
// TransactionMarkerChannelManager): the markers of one Ready are grouped by
// the leader of their partition, as the metadata cache names it, and each
// leader gets one WriteTxnMarkers request (v1), with one entry per
// transaction outcome (producer id, epoch, commit or abort, coordinator
// epoch) listing its partitions. This broker's own partitions are written
// by a call (Options.WriteMarkers), others' over the
// network. Each partition's answer becomes the MarkerResult of its marker:
//   - a partition whose topic the cache no longer has is Gone (its topic was
//     deleted), as Kafka drops it from the transaction — but only once the
//     cache has __transaction_state itself: a broker that just started may
//     be made a leader (LeaderAndIsr) before it learns the topics
//     (UpdateMetadata), and a marker dropped then would leave its
//     transaction open in the partition forever;
//   - one without a live leader, or whose request failed, is retried
//     (reported after retryBackoff with REQUEST_TIMED_OUT or
//     LEADER_NOT_AVAILABLE, which the core retries);
//   - the leader's code otherwise (the core stops on INVALID_PRODUCER_EPOCH
//     and TRANSACTION_COORDINATOR_FENCED, retries the rest).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/coordinator/txn"
	"github.com/sluice-io/sluice/engine"
)

// markerKey is one transaction outcome: the entry of a WriteTxnMarkers
// request.
type markerKey struct {
	producerID       int64
	epoch            int16
	commit           bool
	coordinatorEpoch int32
}

// markerRef finds a marker in a leader's answer.
type markerRef struct {
	producerID int64
	partition  engine.Partition
}

func (d *Driver) sendMarkers(ms []txn.Marker) {
	md := d.cs.opts.Metadata()
	byLeader := map[int32][]txn.Marker{}
	for _, m := range ms {
		leader, known := md.Leader(m.Partition.Topic, m.Partition.Partition)
		switch {
		case !known && md.TopicDeleted(m.Partition.Topic):
			d.report(txn.MarkerResult{ID: m.ID, Gone: true})
		case !known: // not known yet: partitions never go but with their topic
			d.reportLater(txn.MarkerResult{ID: m.ID, Code: kerr.UnknownTopicOrPartition.Code})
		case leader < 0:
			d.reportLater(txn.MarkerResult{ID: m.ID, Code: kerr.LeaderNotAvailable.Code})
		default:
			byLeader[leader] = append(byLeader[leader], m)
		}
	}
	for leader, ms := range byLeader {
		go d.sendMarkersTo(leader, ms)
	}
}

// sendMarkersTo writes markers at one leader and reports each.
func (d *Driver) sendMarkersTo(leader int32, ms []txn.Marker) {
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	req.Version = 1
	entry := map[markerKey]int{}
	ids := map[markerRef]uint64{}
	for _, m := range ms {
		k := markerKey{m.ProducerID, m.Epoch, m.Commit, m.CoordinatorEpoch}
		i, ok := entry[k]
		if !ok {
			rm := kmsg.NewWriteTxnMarkersRequestMarker()
			rm.ProducerID, rm.ProducerEpoch, rm.Committed, rm.CoordinatorEpoch = m.ProducerID, m.Epoch, m.Commit, m.CoordinatorEpoch
			req.Markers = append(req.Markers, rm)
			i = len(req.Markers) - 1
			entry[k] = i
		}
		rm := &req.Markers[i]
		j := len(rm.Topics) - 1
		if j < 0 || rm.Topics[j].Topic != m.Partition.Topic {
			rt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
			rt.Topic = m.Partition.Topic
			rm.Topics = append(rm.Topics, rt)
			j++
		}
		rm.Topics[j].Partitions = append(rm.Topics[j].Partitions, m.Partition.Partition)
		ids[markerRef{m.ProducerID, m.Partition}] = m.ID
	}
	ctx, cancel := context.WithTimeout(context.Background(), markerTimeout)
	defer cancel()
	var resp *kmsg.WriteTxnMarkersResponse
	cs := d.cs
	if cs.holdMarkers.Load() {
		// Held: every marker is retried.
	} else if leader == cs.opts.Self {
		resp = cs.opts.WriteMarkers(ctx, req)
	} else if s := cs.markerSender(); s != nil {
		r, err := s.Send(ctx, leader, req)
		if err != nil {
			cs.opts.Logger.Debug("sending transaction markers", "leader", leader, "err", err)
		} else {
			resp = r.(*kmsg.WriteTxnMarkersResponse)
		}
	}
	answered := map[uint64]bool{}
	if resp != nil {
		md := cs.opts.Metadata()
		for _, rm := range resp.Markers {
			for _, rt := range rm.Topics {
				for _, rp := range rt.Partitions {
					id, ok := ids[markerRef{rm.ProducerID, engine.Partition{Topic: rt.Topic, Partition: rp.Partition}}]
					if !ok || answered[id] {
						continue
					}
					answered[id] = true
					switch {
					case rp.ErrorCode == 0:
						d.report(txn.MarkerResult{ID: id})
					case rp.ErrorCode == kerr.UnknownTopicOrPartition.Code && md.TopicDeleted(rt.Topic):
						d.report(txn.MarkerResult{ID: id, Gone: true})
					default:
						d.reportLater(txn.MarkerResult{ID: id, Code: rp.ErrorCode})
					}
				}
			}
		}
	}
	for _, m := range ms {
		if !answered[m.ID] {
			d.reportLater(txn.MarkerResult{ID: m.ID, Code: kerr.RequestTimedOut.Code})
		}
	}
}
