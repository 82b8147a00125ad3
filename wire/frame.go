package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// DefaultMaxFrame is Kafka's socket.request.max.bytes default (100 MiB).
const DefaultMaxFrame = 100 << 20

// ReadFrame reads one size-prefixed frame from r into buf (grown if
// needed) and returns the frame's bytes, which alias buf. The size is
// checked against max before any allocation. io.EOF means the peer closed
// between frames; a frame cut short is ErrBadFrame.
func ReadFrame(r io.Reader, buf []byte, max int32) ([]byte, error) {
	var sz [4]byte
	if _, err := io.ReadFull(r, sz[:]); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("%w: size prefix cut short", ErrBadFrame)
		}
		return nil, err
	}
	n, err := FrameSize(sz[:], max)
	if err != nil {
		return nil, err
	}
	if int32(cap(buf)) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, fmt.Errorf("%w: %d-byte frame cut short: %v", ErrBadFrame, n, err)
	}
	return buf, nil
}

// FrameSize decodes a frame's 4-byte size prefix (a big-endian int32, the
// length of the frame after it) and checks it: a negative size is
// ErrBadFrame, one above max ErrFrameTooLarge.
func FrameSize(prefix []byte, max int32) (int32, error) {
	n := int32(binary.BigEndian.Uint32(prefix))
	if n < 0 {
		return 0, fmt.Errorf("%w: negative size %d", ErrBadFrame, n)
	}
	if n > max {
		return 0, fmt.Errorf("%w: %d bytes, the limit is %d", ErrFrameTooLarge, n, max)
	}
	return n, nil
}
