package cluster

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/coordinator/controller"
	"github.com/sluice-io/sluice/engine"
)

// fakeController elects leader for every partition asked, and lists
// ongoing reassignments.
type fakeController struct {
	leader  int32
	ongoing []controller.Reassignment
}

func (f *fakeController) ElectLeaders(_ context.Context, _ controller.ElectionType, ps []engine.Partition) ([]controller.ElectionResult, error) {
	var out []controller.ElectionResult
	for _, p := range ps {
		out = append(out, controller.ElectionResult{Partition: p, Leader: f.leader})
	}
	return out, nil
}

func (f *fakeController) AlterReassignments(context.Context, []controller.ReassignTarget) (controller.ReassignAnswer, error) {
	return controller.ReassignAnswer{}, nil
}

func (f *fakeController) ListReassignments(context.Context) ([]controller.Reassignment, bool, error) {
	return f.ongoing, true, nil
}

// TestElectLeaders: without Alter every partition named fails; without a
// controller here NOT_CONTROLLER; an election is answered once the cache
// shows the leader elected, REQUEST_TIMED_OUT when it does not by the
// request's timeout.
func TestElectLeaders(t *testing.T) {
	ctl := &fakeController{leader: 2}
	var here Controller
	d, _ := newDirectory(t, DirectoryOptions{Controller: func() Controller { return here }})
	req := kmsg.NewPtrElectLeadersRequest()
	req.Version, req.TimeoutMillis = 2, 50
	rt := kmsg.NewElectLeadersRequestTopic()
	rt.Topic, rt.Partitions = "t", []int32{0, 1}
	req.Topics = append(req.Topics, rt)
	code := func(resp *kmsg.ElectLeadersResponse, i int) int16 { return resp.Topics[0].Partitions[i].ErrorCode }
	if resp := d.ElectLeaders(req, false); resp.ErrorCode != kerr.ClusterAuthorizationFailed.Code || code(resp, 1) != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("unauthorized: %+v", resp)
	}
	if resp := d.ElectLeaders(req, true); code(resp, 0) != kerr.NotController.Code {
		t.Fatalf("no controller here: %+v", resp)
	}
	here = ctl // partition 0 is led by 2 in the cache, partition 1 by 7
	resp := d.ElectLeaders(req, true)
	if code(resp, 0) != 0 || code(resp, 1) != kerr.RequestTimedOut.Code {
		t.Fatalf("elected: %+v", resp.Topics)
	}
}

// TestListReassignments: the ongoing reassignments, those asked for only,
// with empty (not null) adding and removing lists.
func TestListReassignments(t *testing.T) {
	ctl := &fakeController{ongoing: []controller.Reassignment{
		{Partition: engine.Partition{Topic: "t", Partition: 0}, Replicas: []int32{1, 2, 3}, Adding: []int32{3}},
		{Partition: engine.Partition{Topic: "t", Partition: 1}, Replicas: []int32{1, 2}},
	}}
	d, _ := newDirectory(t, DirectoryOptions{Controller: func() Controller { return ctl }})
	req := kmsg.NewPtrListPartitionReassignmentsRequest()
	rt := kmsg.NewListPartitionReassignmentsRequestTopic()
	rt.Topic, rt.Partitions = "t", []int32{1}
	req.Topics = append(req.Topics, rt)
	resp := d.ListReassignments(req, true)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("asked for t-1: %+v", resp.Topics)
	}
	if p := resp.Topics[0].Partitions[0]; p.Partition != 1 || p.AddingReplicas == nil || p.RemovingReplicas == nil {
		t.Fatalf("t-1: %+v", p)
	}
	if resp := d.ListReassignments(req, false); resp.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("unauthorized: %d", resp.ErrorCode)
	}
}
