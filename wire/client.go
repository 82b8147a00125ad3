package wire

// The client's side of the framing (doc.go shows both headers): requests
// out, responses in, for the broker's own requests to other brokers (the
// controller's LeaderAndIsr, UpdateMetadata and StopReplica).

import (
	"encoding/binary"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// AppendRequest appends a whole request frame: size, request header (v1,
// or v2 with an empty tagged-field section for flexible versions) with
// req's key and version, correlationID and clientID, and the body.
func AppendRequest(dst []byte, correlationID int32, clientID string, req kmsg.Request) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = binary.BigEndian.AppendUint16(dst, uint16(req.Key()))
	dst = binary.BigEndian.AppendUint16(dst, uint16(req.GetVersion()))
	dst = binary.BigEndian.AppendUint32(dst, uint32(correlationID))
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(clientID)))
	dst = append(dst, clientID...)
	if req.IsFlexible() {
		dst = append(dst, 0) // no header tags
	}
	dst = req.AppendTo(dst)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}

// ParseResponse decodes a response frame (as ReadFrame returns it, without
// the size) into resp, whose version must be the request's: the frame's
// correlation id must be correlationID (ErrCorrelationMismatch otherwise),
// the header's tagged fields are skipped where the response header is v1
// (flexible versions except ApiVersions), and the body must decode
// (ErrBadResponse). Byte fields of resp alias frame.
func ParseResponse(frame []byte, correlationID int32, resp kmsg.Response) error {
	if len(frame) < 4 {
		return fmt.Errorf("%w: %d-byte frame has no room for a header", ErrBadResponse, len(frame))
	}
	if got := int32(binary.BigEndian.Uint32(frame)); got != correlationID {
		return fmt.Errorf("%w: got %d, want %d", ErrCorrelationMismatch, got, correlationID)
	}
	rest := frame[4:]
	if resp.IsFlexible() && resp.Key() != ApiVersionsKey {
		var err error
		if rest, err = skipTags(rest); err != nil {
			return fmt.Errorf("%w: %s v%d header: %v", ErrBadResponse, kmsg.NameForKey(resp.Key()), resp.GetVersion(), err)
		}
	}
	if err := resp.ReadFrom(rest); err != nil {
		return fmt.Errorf("%w: %s v%d: %v", ErrBadResponse, kmsg.NameForKey(resp.Key()), resp.GetVersion(), err)
	}
	return nil
}
