package broker

// TEMPORARY (not committed): a minimal marker writer until branch txnpart lands.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/engine"
)

func (b *Broker) writeTxnMarkers(ctx context.Context, req *kmsg.WriteTxnMarkersRequest) *kmsg.WriteTxnMarkersResponse {
	resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	for _, m := range req.Markers {
		rm := kmsg.NewWriteTxnMarkersResponseMarker()
		rm.ProducerID = m.ProducerID
		for _, t := range m.Topics {
			rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			rt.Topic = t.Topic
			for _, pi := range t.Partitions {
				rp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				rp.Partition = pi
				p, code := b.leaderPartition(t.Topic, pi)
				if p == nil {
					rp.ErrorCode = code
				} else {
					ct := engine.ControlAbort
					if m.Committed {
						ct = engine.ControlCommit
					}
					res, err := p.appendNoWait(engine.AppendControlBatch(nil, m.ProducerID, m.ProducerEpoch, ct, m.CoordinatorEpoch, time.Now().UnixMilli()))
					if err == nil {
						err = p.log.AwaitFlushPolicy(res)
					}
					p.notify()
					if err == nil {
						err = p.awaitReplicated(res.LastOffset+1, 30*time.Second, b.closing)
					}
					if err != nil {
						rp.ErrorCode = errorCode(err)
					}
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			rm.Topics = append(rm.Topics, rt)
		}
		resp.Markers = append(resp.Markers, rm)
	}
	return resp
}
