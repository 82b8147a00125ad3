package host

// Transaction markers as their partitions' leader writes them (Kafka's
// append with origin COORDINATOR, for WriteTxnMarkers: the rules are
// written in broker/27_write_txn_markers.go).

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/engine"
)

// markerTimeout is how long a marker waits for its replicas: Kafka uses
// request.timeout.ms, 30 s by default.
const markerTimeout = 30 * time.Second

// WriteTxnMarkers writes every marker of req to the partitions it names,
// every partition before any waits for acks=all, and answers per
// partition. ctx's deadline, if sooner than markerTimeout, bounds the
// wait for the replicas. completed, if set, is told of each marker once
// its partition's replicas have it (the group coordinator ends the
// producer's transactional offsets in __consumer_offsets), with no lock
// of the package held.
func (m *Manager) WriteTxnMarkers(ctx context.Context, req *kmsg.WriteTxnMarkersRequest, completed func(p *Partition, producerID int64, committed bool)) *kmsg.WriteTxnMarkersResponse {
	resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	type written struct {
		p      *Partition
		end    int64
		mi     int // the marker's index
		ti, pi int
	}
	var done []written
	now := time.Now().UnixMilli()
	var buf []byte
	for mi := range req.Markers {
		mk := &req.Markers[mi]
		rm := kmsg.NewWriteTxnMarkersResponseMarker()
		rm.ProducerID = mk.ProducerID
		typ := engine.ControlAbort
		if mk.Committed {
			typ = engine.ControlCommit
		}
		for _, t := range mk.Topics {
			rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			rt.Topic = t.Topic
			for _, index := range t.Partitions {
				rp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				rp.Partition = index
				buf = engine.AppendControlBatch(buf[:0], mk.ProducerID, mk.ProducerEpoch, typ, mk.CoordinatorEpoch, now)
				p, end, code := m.writeMarker(t.Topic, index, buf)
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
		if err := w.p.AwaitReplicated(w.end, timeout, m.o.Closing); err != nil {
			rp.ErrorCode = ErrorCode(err)
			continue
		}
		if completed != nil {
			mk := &req.Markers[w.mi]
			completed(w.p, mk.ProducerID, mk.Committed)
		}
	}
	return resp
}

// writeMarker appends one marker batch to a partition this broker leads
// and returns the partition and its log end after the marker, or the
// partition's error code.
func (m *Manager) writeMarker(topic string, index int32, batch []byte) (*Partition, int64, int16) {
	p := m.Partition(topic, index)
	switch {
	case p == nil:
		return nil, 0, kerr.UnknownTopicOrPartition.Code
	case !p.Leads():
		return nil, 0, kerr.NotLeaderForPartition.Code
	}
	if err := p.CheckAcksAll(); err != nil {
		return nil, 0, ErrorCode(err)
	}
	res, err := p.AppendAsLeader(batch, AppendHow{Coordinator: true, AcksAll: true})
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
