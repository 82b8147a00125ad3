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
			// The clock of the batches' timestamps: their producer does
			// not expire (producerIDExpiration) at the reopen.
			clock := &fakeClock{t: time.UnixMilli(1_700_000_000_000)}
			opts := Options{SegmentBytes: 2 << 10, Now: clock.now}
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

// An idle producer is forgotten once producer.id.expiration.ms has passed
// since its last write: retention (which the Store runs on every log,
// written to or not) expires it, and a restart does not bring it back from
// the snapshot. Forgotten, it is a producer the partition does not know,
// accepted at any sequence; known, a gap in its sequences is refused.
func TestProducerExpiry(t *testing.T) {
	const ts = 1_700_000_000_000 // idempotentBatch's record timestamps
	clock := &fakeClock{t: time.UnixMilli(ts)}
	opts := Options{ProducerIDExpiration: time.Hour, Now: clock.now}
	gap := func(l *Log, pid int64) error {
		_, err := l.Append(idempotentBatch(t, pid, 0, 42, 1))
		return err
	}

	t.Run("retention", func(t *testing.T) {
		clock.t = time.UnixMilli(ts)
		l := mustOpen(t, t.TempDir(), opts)
		defer l.Close()
		if _, err := l.Append(idempotentBatch(t, 7, 0, 0, 3)); err != nil {
			t.Fatal(err)
		}
		clock.t = time.UnixMilli(ts).Add(time.Hour - time.Millisecond)
		if _, err := l.ApplyRetention(); err != nil {
			t.Fatal(err)
		}
		if err := gap(l, 7); !errors.Is(err, ErrOutOfOrderSequence) {
			t.Fatalf("before expiry, a gap: %v", err)
		}
		clock.t = time.UnixMilli(ts).Add(time.Hour)
		if _, err := l.ApplyRetention(); err != nil {
			t.Fatal(err)
		}
		if err := gap(l, 7); err != nil {
			t.Fatalf("after expiry, the producer is unknown: %v", err)
		}
	})

	t.Run("store", func(t *testing.T) {
		clock.t = time.UnixMilli(ts)
		st, err := OpenStore(t.TempDir(), StoreOptions{Log: opts})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		busy, err := st.CreateLog(Partition{"busy", 0}, NewTopicID())
		if err != nil {
			t.Fatal(err)
		}
		idle, err := st.CreateLog(Partition{"idle", 0}, NewTopicID())
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range []*Log{busy, idle} {
			if _, err := l.Append(idempotentBatch(t, 7, 0, 0, 3)); err != nil {
				t.Fatal(err)
			}
		}
		clock.t = time.UnixMilli(ts).Add(2 * time.Hour)
		// The busy log's producer wrote again (its batch is stamped now).
		b := testBatch(t, 1, 20, clock.t.UnixMilli())
		copy(b[offProducerID:], idempotentBatch(t, 7, 0, 3, 1)[offProducerID:offRecordCount])
		binary.BigEndian.PutUint32(b[offCRC:], batchCRC(b))
		if _, err := busy.Append(b); err != nil {
			t.Fatal(err)
		}
		st.ApplyRetention()
		if err := gap(idle, 7); err != nil {
			t.Fatalf("the idle log's producer did not expire: %v", err)
		}
		if err := gap(busy, 7); !errors.Is(err, ErrOutOfOrderSequence) {
			t.Fatalf("the busy log's producer: %v", err)
		}
	})

	t.Run("restart", func(t *testing.T) {
		clock.t = time.UnixMilli(ts)
		dir := t.TempDir()
		l := mustOpen(t, dir, opts)
		if _, err := l.Append(idempotentBatch(t, 7, 0, 0, 3)); err != nil {
			t.Fatal(err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		// Reopened before the expiration: the snapshot's state holds.
		clock.t = time.UnixMilli(ts).Add(time.Hour - time.Millisecond)
		l = mustOpen(t, dir, opts)
		if err := gap(l, 7); !errors.Is(err, ErrOutOfOrderSequence) {
			t.Fatalf("reopened before expiry, a gap: %v", err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		// Reopened after it: the snapshot's producer is not loaded.
		clock.t = time.UnixMilli(ts).Add(time.Hour)
		l = mustOpen(t, dir, opts)
		defer l.Close()
		if err := gap(l, 7); err != nil {
			t.Fatalf("reopened after expiry, the producer is unknown: %v", err)
		}
	})
}

// A retried batch in a LogAppendTime log is answered with the time the
// original was stamped with; in a CreateTime log with none (-1).
func TestDuplicateLogAppendTime(t *testing.T) {
	for _, logAppendTime := range []bool{true, false} {
		clock := &fakeClock{t: time.UnixMilli(1_800_000_000_000)}
		l := mustOpen(t, t.TempDir(), Options{LogAppendTime: logAppendTime, Now: clock.now})
		first, err := l.Append(idempotentBatch(t, 7, 0, 0, 2))
		if err != nil {
			t.Fatal(err)
		}
		clock.t = clock.t.Add(time.Minute)
		retry, err := l.Append(idempotentBatch(t, 7, 0, 0, 2))
		if err != nil || !retry.Duplicate || retry.FirstOffset != first.FirstOffset || retry.LogAppendTime != first.LogAppendTime {
			t.Errorf("LogAppendTime %v: first %+v, retry %+v %v", logAppendTime, first, retry, err)
		}
		if logAppendTime && first.LogAppendTime != 1_800_000_000_000 || !logAppendTime && first.LogAppendTime != -1 {
			t.Errorf("LogAppendTime %v: first append %+v", logAppendTime, first)
		}
		l.Close()
	}
}
