package wire

import (
	"bytes"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// A request framed by AppendRequest is read back by the broker's own
// ParseRequest with its header and body, at flexible (header v2) and
// non-flexible (v1) versions.
func TestAppendRequestParses(t *testing.T) {
	for _, v := range []int16{1, 3, 4, 7} { // LeaderAndIsr is flexible from v4
		req := kmsg.NewPtrLeaderAndISRRequest()
		req.Version = v
		req.ControllerID, req.ControllerEpoch, req.BrokerEpoch = 3, 9, 1234
		req.LiveLeaders = []kmsg.LeaderAndISRRequestLiveLeader{{BrokerID: 3, Host: "h", Port: 9092}}
		frame := AppendRequest([]byte("keep"), 41, "sluice-controller-3", req)
		if !bytes.HasPrefix(frame, []byte("keep")) {
			t.Fatalf("v%d: the bytes before were overwritten", v)
		}
		frame = frame[4:]
		size, err := FrameSize(frame, DefaultMaxFrame)
		if err != nil || int(size) != len(frame)-4 {
			t.Fatalf("v%d: size prefix %d for %d bytes: %v", v, size, len(frame)-4, err)
		}
		h, got, err := ParseRequest(frame[4:])
		if err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		if h.Key != req.Key() || h.Version != v || h.CorrelationID != 41 || h.ClientID == nil || *h.ClientID != "sluice-controller-3" {
			t.Fatalf("v%d: header %+v", v, h)
		}
		lr := got.(*kmsg.LeaderAndISRRequest)
		if lr.ControllerID != 3 || lr.ControllerEpoch != 9 || len(lr.LiveLeaders) != 1 || lr.LiveLeaders[0].Port != 9092 {
			t.Fatalf("v%d: body %+v", v, lr)
		}
		if v >= 2 && lr.BrokerEpoch != 1234 {
			t.Fatalf("v%d: broker epoch %d", v, lr.BrokerEpoch)
		}
	}
}

// ParseResponse reads what AppendResponse writes, with the v0 and v1
// response headers (ApiVersions always v0), and refuses another request's
// correlation id and a body cut short.
func TestParseResponse(t *testing.T) {
	responses := []kmsg.Response{
		&kmsg.UpdateMetadataResponse{Version: 5, ErrorCode: 11}, // v0 header
		&kmsg.UpdateMetadataResponse{Version: 8, ErrorCode: 11}, // v1 header
		&kmsg.ApiVersionsResponse{Version: 3, ErrorCode: 11},    // flexible, v0 header
	}
	for _, resp := range responses {
		frame := AppendResponse(nil, 7, resp)[4:]
		got := resp.Key()
		into := kmsg.ResponseForKey(got)
		into.SetVersion(resp.GetVersion())
		if err := ParseResponse(frame, 7, into); err != nil {
			t.Fatalf("%s v%d: %v", kmsg.NameForKey(got), resp.GetVersion(), err)
		}
		var code int16
		switch r := into.(type) {
		case *kmsg.UpdateMetadataResponse:
			code = r.ErrorCode
		case *kmsg.ApiVersionsResponse:
			code = r.ErrorCode
		}
		if code != 11 {
			t.Fatalf("%s v%d: error code %d", kmsg.NameForKey(got), resp.GetVersion(), code)
		}
		if err := ParseResponse(frame, 8, into); !errors.Is(err, ErrCorrelationMismatch) {
			t.Fatalf("%s v%d: another correlation id: %v", kmsg.NameForKey(got), resp.GetVersion(), err)
		}
		if err := ParseResponse(frame[:len(frame)-1], 7, into); !errors.Is(err, ErrBadResponse) {
			t.Fatalf("%s v%d: a body cut short: %v", kmsg.NameForKey(got), resp.GetVersion(), err)
		}
	}
	if err := ParseResponse([]byte{0, 0}, 0, &kmsg.UpdateMetadataResponse{}); !errors.Is(err, ErrBadResponse) {
		t.Fatalf("a 2-byte frame: %v", err)
	}
}
