package engine

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// idempotentBatch is a batch of n records from producer pid/epoch starting
// at sequence seq.
func idempotentBatch(t *testing.T, pid int64, epoch int16, seq int32, n int) []byte {
	t.Helper()
	b := testBatch(t, n, 20, 1_700_000_000_000)
	binary.BigEndian.PutUint64(b[offProducerID:], uint64(pid))
	binary.BigEndian.PutUint16(b[offProducerEpoch:], uint16(epoch))
	binary.BigEndian.PutUint32(b[offBaseSequence:], uint32(seq))
	binary.BigEndian.PutUint32(b[offCRC:], batchCRC(b))
	return b
}

func TestIdempotentDuplicatesSurviveRestart(t *testing.T) {
	for _, how := range []string{"snapshot", "log scan"} {
		t.Run(how, func(t *testing.T) {
			dir := t.TempDir()
			opts := Options{SegmentBytes: 2 << 10}
			l := mustOpen(t, dir, opts)
			var firsts []int64
			seq := int32(0)
			for range 30 { // several rolls: snapshots at each
				res, err := l.Append(idempotentBatch(t, 7, 0, seq, 3))
				if err != nil || res.Duplicate {
					t.Fatalf("append: %+v %v", res, err)
				}
				firsts = append(firsts, res.FirstOffset)
				seq += 3
			}
			end := l.EndOffset()
			// A retry of one of the last five is acknowledged with its
			// original offsets and not appended again.
			res, err := l.Append(idempotentBatch(t, 7, 0, seq-6, 3))
			if err != nil || !res.Duplicate || res.FirstOffset != firsts[len(firsts)-2] || l.EndOffset() != end {
				t.Fatalf("retry: %+v %v (end %d -> %d)", res, err, end, l.EndOffset())
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			if how == "log scan" {
				snaps, _ := filepath.Glob(filepath.Join(dir, "*"+snapshotSuffix))
				if len(snaps) == 0 {
					t.Fatal("no producer snapshot was written")
				}
				for _, p := range snaps {
					os.Remove(p)
				}
			}
			l = mustOpen(t, dir, opts)
			defer l.Close()
			res, err = l.Append(idempotentBatch(t, 7, 0, seq-3, 3))
			if err != nil || !res.Duplicate || res.FirstOffset != firsts[len(firsts)-1] {
				t.Fatalf("retry after restart: %+v %v", res, err)
			}
			if _, err := l.Append(idempotentBatch(t, 7, 0, seq+5, 3)); !errors.Is(err, ErrOutOfOrderSequence) {
				t.Fatalf("a gap in sequences: %v", err)
			}
			if _, err := l.Append(idempotentBatch(t, 7, 0, seq, 3)); err != nil {
				t.Fatalf("the next sequence: %v", err)
			}
		})
	}
}

func TestLeaderEpochCacheFollowsTheLog(t *testing.T) {
	dir := t.TempDir()
	l := mustOpen(t, dir, Options{})
	for epoch := int32(0); epoch < 4; epoch++ {
		l.SetLeaderEpoch(epoch)
		for range 5 {
			if _, err := l.Append(testBatch(t, 2, 10, 1)); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Epoch e wrote [10e, 10e+10).
	for e := int32(0); e < 3; e++ {
		if got, end := l.EndOffsetForEpoch(e); got != e || end != int64(10*(e+1)) {
			t.Fatalf("end of epoch %d: %d, %d", e, got, end)
		}
	}
	if got, end := l.EndOffsetForEpoch(3); got != 3 || end != 40 {
		t.Fatalf("latest epoch: %d, %d", got, end)
	}
	if err := l.TruncateTo(25); err != nil {
		t.Fatal(err)
	}
	if l.LatestEpoch() != 2 {
		t.Fatalf("after truncating into epoch 2 the latest epoch is %d", l.LatestEpoch())
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = mustOpen(t, dir, Options{})
	defer l.Close()
	if got, end := l.EndOffsetForEpoch(1); got != 1 || end != 20 {
		t.Fatalf("after reopen, end of epoch 1: %d, %d", got, end)
	}
	if got, end := l.EndOffsetForEpoch(2); got != 2 || end != l.EndOffset() {
		t.Fatalf("after reopen, latest epoch 2 ends at %d (%d), log end %d", end, got, l.EndOffset())
	}
}

func TestLogAppendTime(t *testing.T) {
	clock := &fakeClock{t: time.UnixMilli(1_800_000_000_000)}
	l := mustOpen(t, t.TempDir(), Options{LogAppendTime: true, Now: clock.now})
	defer l.Close()
	res, err := l.Append(testBatch(t, 3, 10, 5))
	if err != nil || res.LogAppendTime != clock.t.UnixMilli() {
		t.Fatalf("append: %+v %v", res, err)
	}
	v, err := l.Read(0, 1<<20, l.EndOffset())
	if err != nil {
		t.Fatal(err)
	}
	data := viewBytes(t, &v)
	v.Release()
	h, err := checkStoredBatch(data)
	if err != nil || !h.LogAppendTime() || h.MaxTimestamp != clock.t.UnixMilli() {
		t.Fatalf("stored batch: %+v %v", h, err)
	}
	it := NewRecordIterator(data)
	for it.Next() {
		if ts := it.Record().Timestamp; ts != clock.t.UnixMilli() {
			t.Fatalf("record %d has timestamp %d, want the append time", it.Record().Offset, ts)
		}
	}
	if it.Err() != nil {
		t.Fatal(it.Err())
	}
	if off, ts, err := l.OffsetForTimestamp(clock.t.UnixMilli()); err != nil || off != 0 || ts != clock.t.UnixMilli() {
		t.Fatalf("OffsetForTimestamp: %d %d %v", off, ts, err)
	}
}
