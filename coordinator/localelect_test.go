package coordinator

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-io/sluice/coordinator/controller"
	"github.com/sluice-io/sluice/engine"
)

// On the single node every partition's one replica leads it: an election
// of either type is not needed; an unknown partition is answered as a
// cluster's controller answers it, and without a controller every
// partition NOT_CONTROLLER.
func TestLocalControllerElectLeaders(t *testing.T) {
	self := Broker{ID: 0, Host: "localhost", Port: 9092}
	e, err := OpenEmbedded(t.TempDir(), self)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tps := []engine.Partition{{Topic: "t", Partition: 0}, {Topic: "t", Partition: 1}, {Topic: "t", Partition: 0}}
	elect := func(typ controller.ElectionType) []controller.ElectionResult {
		t.Helper()
		res, err := e.ElectLeaders(ctx, typ, tps)
		if err != nil {
			t.Fatal(err)
		}
		if len(res) != 2 {
			t.Fatalf("results %+v", res)
		}
		return res
	}
	if res := elect(controller.PreferredElection); res[0].ErrorCode != kerr.NotController.Code || res[1].ErrorCode != kerr.NotController.Code {
		t.Fatalf("without a controller: %+v", res)
	}
	startWithTopic(ctx, t, e, self, "t")
	for _, typ := range []controller.ElectionType{controller.PreferredElection, controller.UncleanElection} {
		res := elect(typ)
		if res[0].ErrorCode != kerr.ElectionNotNeeded.Code || res[1].ErrorCode != kerr.UnknownTopicOrPartition.Code {
			t.Errorf("%v: %+v", typ, res)
		}
	}
}
