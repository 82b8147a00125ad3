package wire

import (
	"encoding/binary"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ApiVersionsKey is the API key of ApiVersions, whose framing is special.
const ApiVersionsKey = 18

// Header is a parsed request header.
type Header struct {
	Key           int16
	Version       int16
	CorrelationID int32
	ClientID      *string
}

// ParseHeader reads the fixed part of a request header (key, version,
// correlation id) from a frame.
func ParseHeader(frame []byte) (Header, error) {
	if len(frame) < 8 {
		return Header{}, fmt.Errorf("%w: %d-byte frame has no room for a header", ErrBadFrame, len(frame))
	}
	return Header{
		Key:           int16(binary.BigEndian.Uint16(frame[0:])),
		Version:       int16(binary.BigEndian.Uint16(frame[2:])),
		CorrelationID: int32(binary.BigEndian.Uint32(frame[4:])),
	}, nil
}

// ParseRequest decodes a whole request frame at the version in its header.
// The caller has checked that the key and version are served. Byte fields
// of the request (Produce records) alias frame.
func ParseRequest(frame []byte) (Header, kmsg.Request, error) {
	h, err := ParseHeader(frame)
	if err != nil {
		return h, nil, err
	}
	req := kmsg.RequestForKey(h.Key)
	if req == nil {
		return h, nil, fmt.Errorf("%w: %d", ErrUnknownAPIKey, h.Key)
	}
	req.SetVersion(h.Version)
	rest := frame[8:]
	// client_id: nullable string, int16 length.
	if len(rest) < 2 {
		return h, nil, fmt.Errorf("%w: no client id", ErrBadFrame)
	}
	l := int16(binary.BigEndian.Uint16(rest))
	rest = rest[2:]
	if l >= 0 {
		if len(rest) < int(l) {
			return h, nil, fmt.Errorf("%w: client id of %d bytes in %d", ErrBadFrame, l, len(rest))
		}
		id := string(rest[:l])
		h.ClientID = &id
		rest = rest[l:]
	}
	if req.IsFlexible() {
		if rest, err = skipTags(rest); err != nil {
			return h, nil, err
		}
	}
	if err := req.ReadFrom(rest); err != nil {
		return h, nil, fmt.Errorf("%w: %s v%d: %v", ErrBadRequest, kmsg.NameForKey(h.Key), h.Version, err)
	}
	return h, req, nil
}

// skipTags skips a tagged-field section.
func skipTags(b []byte) ([]byte, error) {
	n, sz := uvarint(b)
	if sz <= 0 {
		return nil, fmt.Errorf("%w: bad tagged field count", ErrBadFrame)
	}
	b = b[sz:]
	for range n {
		_, sz = uvarint(b) // tag
		if sz <= 0 {
			return nil, fmt.Errorf("%w: bad tag", ErrBadFrame)
		}
		b = b[sz:]
		l, sz := uvarint(b)
		if sz <= 0 || uint64(len(b)-sz) < l {
			return nil, fmt.Errorf("%w: bad tagged field length", ErrBadFrame)
		}
		b = b[sz+int(l):]
	}
	return b, nil
}

func uvarint(b []byte) (uint64, int) {
	var v uint64
	for i := 0; i < len(b) && i < 10; i++ {
		v |= uint64(b[i]&0x7f) << (7 * i)
		if b[i] < 0x80 {
			return v, i + 1
		}
	}
	return 0, -1
}

// AppendResponse appends a whole response frame: size, correlation id, the
// header's tagged fields where the response header is v1 (flexible versions
// except ApiVersions), and the body.
func AppendResponse(dst []byte, correlationID int32, resp kmsg.Response) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = binary.BigEndian.AppendUint32(dst, uint32(correlationID))
	if resp.IsFlexible() && resp.Key() != ApiVersionsKey {
		dst = append(dst, 0) // no header tags
	}
	dst = resp.AppendTo(dst)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}
