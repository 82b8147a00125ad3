package cluster

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// plane is a ControlPlane of broker epoch 10 whose controller is broker 2
// at epoch 3 or later.
type plane struct{}

func (plane) BrokerEpoch() int64                      { return 10 }
func (plane) IsActiveController(id, epoch int32) bool { return id == 2 && epoch >= 3 }

// TestFence: an older broker epoch, a sender that is not the active
// controller, a KRaft controller and a controller epoch below the highest
// seen are refused without running the effect; the single node's own
// requests pass the epoch check alone.
func TestFence(t *testing.T) {
	s := NewControlState(plane{})
	ran := 0
	apply := func() { ran++ }
	for _, c := range []struct {
		what       string
		id, epoch  int32
		brokerEp   int64
		hasBrokerE bool
		kraft      bool
		want       int16
	}{
		{"older broker epoch", 2, 3, 9, true, false, kerr.StaleBrokerEpoch.Code},
		{"no broker epoch field", 2, 3, 9, false, false, 0},
		{"unknown broker epoch", 2, 4, UnknownBrokerEpoch, true, false, 0},
		{"newer broker epoch", 2, 4, 11, true, false, 0},
		{"not the controller", 1, 4, 10, true, false, kerr.StaleControllerEpoch.Code},
		{"KRaft controller", 2, 4, 10, true, true, kerr.StaleControllerEpoch.Code},
		{"epoch below the highest seen", 2, 3, 10, true, false, kerr.StaleControllerEpoch.Code},
	} {
		before := ran
		if got := s.Fence(c.id, c.epoch, c.brokerEp, c.hasBrokerE, c.kraft, apply); got != c.want {
			t.Errorf("%s: %v, want %v", c.what, kerr.ErrorForCode(got), kerr.ErrorForCode(c.want))
		}
		if (ran > before) != (c.want == 0) {
			t.Errorf("%s: effect ran %d times", c.what, ran-before)
		}
	}
	if e := s.ControllerEpoch(); e != 4 {
		t.Errorf("highest epoch %d, want 4", e)
	}
	single := NewControlState(nil)
	if got := single.Fence(0, 1, -1, false, false, apply); got != kerr.StaleControllerEpoch.Code {
		t.Errorf("a network request on the single node: %v", kerr.ErrorForCode(got))
	}
	if got := single.Local(0, 1, -1, false, false, apply); got != 0 {
		t.Errorf("the single node's own request: %v", kerr.ErrorForCode(got))
	}
}
