package host

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestLeaderOffsets: ListOffsets' earliest and latest, a fenced or
// unknown current epoch, an unknown special timestamp; the current
// epoch's end offset; DeleteRecords past the high watermark refused,
// at it moving the log start.
func TestLeaderOffsets(t *testing.T) {
	p := leaderPartition(t, nil)
	if _, code, _, _ := p.Produce(Produce{Records: batch("a", "b", "c"), Version: 9, Acks: 1}); code != 0 {
		t.Fatalf("append: %d", code)
	}
	hw := p.HighWatermark()
	if off, _, epoch, code := p.ListOffset(9, -1, -1, false, false); code != 0 || off != hw || epoch != 5 {
		t.Fatalf("latest: %d epoch %d code %d (high watermark %d)", off, epoch, code, hw)
	}
	if off, _, _, code := p.ListOffset(9, -2, -1, false, false); code != 0 || off != 0 {
		t.Fatalf("earliest: %d code %d", off, code)
	}
	if off, _, _, code := p.ListOffset(9, -1, -1, true, false); code != 0 || off != 3 {
		t.Fatalf("latest for a replica (log end): %d code %d", off, code)
	}
	if _, _, _, code := p.ListOffset(9, -1, 4, false, false); code != kerr.FencedLeaderEpoch.Code {
		t.Fatalf("older current epoch: %d", code)
	}
	if _, _, _, code := p.ListOffset(9, -7, -1, false, false); code != kerr.InvalidRequest.Code {
		t.Fatalf("timestamp -7: %d", code)
	}
	if e, end, code := p.OffsetForLeaderEpoch(4, -1, 5); code != 0 || e != 5 || end != 3 {
		t.Fatalf("end of epoch 5: %d %d code %d", e, end, code)
	}
	if _, code := p.DeleteRecords(hw + 1); code != kerr.OffsetOutOfRange.Code {
		t.Fatalf("delete past the high watermark: %d", code)
	}
	if low, code := p.DeleteRecords(-1); code != 0 || low != hw || p.Log.StartOffset() != hw {
		t.Fatalf("delete to the high watermark: low %d code %d start %d", low, code, p.Log.StartOffset())
	}
}
