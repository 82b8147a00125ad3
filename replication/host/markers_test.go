package host

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestWriteTxnMarkers: a marker is appended to a partition this broker
// leads and reported completed once replicated; one for a partition it
// does not host is UNKNOWN_TOPIC_OR_PARTITION, and one it follows
// NOT_LEADER_OR_FOLLOWER, neither completed.
func TestWriteTxnMarkers(t *testing.T) {
	leader := leaderPartition(t, nil)
	follower := followerPartition(t)
	m := leader.m
	follower.Index = 1
	m.SetTopic(&Topic{Name: "t", Partitions: []*Partition{leader, follower}})
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	mk := kmsg.NewWriteTxnMarkersRequestMarker()
	mk.ProducerID, mk.ProducerEpoch, mk.Committed = 7, 0, true
	mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
	mt.Topic, mt.Partitions = "t", []int32{0, 1, 9}
	mk.Topics = append(mk.Topics, mt)
	req.Markers = append(req.Markers, mk)
	var completed []int32
	resp := m.WriteTxnMarkers(context.Background(), req, func(p *Partition, pid int64, committed bool) {
		if pid == 7 && committed {
			completed = append(completed, p.Index)
		}
	})
	ps := resp.Markers[0].Topics[0].Partitions
	if ps[0].ErrorCode != 0 || ps[1].ErrorCode != kerr.NotLeaderForPartition.Code || ps[2].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("answers: %+v", ps)
	}
	if len(completed) != 1 || completed[0] != 0 || leader.Log.EndOffset() != 1 {
		t.Fatalf("completed %v, leader's log end %d", completed, leader.Log.EndOffset())
	}
}
