package engine

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// pbatch is the header of a data batch of n records from producer pid.
func pbatch(pid int64, epoch int16, seq int32, n int32) BatchHeader {
	return BatchHeader{ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq, LastOffsetDelta: n - 1, NumRecords: n, Magic: 2}
}

// pmarker is the header of a one-record control batch (a transaction
// marker) from producer pid.
func pmarker(pid int64, epoch int16) BatchHeader {
	return BatchHeader{ProducerID: pid, ProducerEpoch: epoch, BaseSequence: -1, NumRecords: 1, Attributes: attrControl | attrTransactional, Magic: 2}
}

// psim plays a partition: it checks each batch, appends the accepted ones
// at the next offsets and keeps their headers as the log would hold them.
type psim struct {
	s       *producerState
	next    int64
	clock   int64
	written []BatchHeader
}

func newPsim() *psim { return &psim{s: newProducerState(), clock: 1000} }

// produce checks h and, when it is neither a duplicate nor refused,
// appends it. It returns the duplicate's metadata or the error.
func (p *psim) produce(h BatchHeader) (*batchMeta, error) {
	dup, err := p.s.check(&h, false, 0)
	if dup != nil || err != nil {
		return dup, err
	}
	p.clock += 10
	h.BaseOffset = p.next
	h.MaxTimestamp = p.clock
	p.s.update(&h, h.BaseOffset, h.MaxTimestamp)
	p.written = append(p.written, h)
	p.next += int64(h.LastOffsetDelta) + 1
	return nil, nil
}

func (p *psim) mustProduce(t *testing.T, h BatchHeader) {
	t.Helper()
	if dup, err := p.produce(h); dup != nil || err != nil {
		t.Fatalf("batch %+v: dup %+v, err %v", h, dup, err)
	}
}

func wantSeqErr(t *testing.T, err error, expected, got int32) {
	t.Helper()
	var se *SequenceError
	if !errors.Is(err, ErrOutOfOrderSequence) || !errors.As(err, &se) || se.Expected != expected || se.Got != got {
		t.Fatalf("err %v, want a SequenceError expecting %d, got %d", err, expected, got)
	}
}

func TestProducerStateDuplicates(t *testing.T) {
	p := newPsim()
	p.mustProduce(t, pbatch(1, 0, 0, 10)) // another producer in between
	var sent []BatchHeader
	for i := range int32(6) {
		h := pbatch(7, 2, 3*i, 3)
		p.mustProduce(t, h)
		sent = append(sent, p.written[len(p.written)-1])
	}
	// The last five are recognised with their original offsets.
	for _, h := range sent[1:] {
		retry := pbatch(7, 2, h.BaseSequence, 3)
		dup, err := p.s.check(&retry, false, 0)
		if err != nil || dup == nil {
			t.Fatalf("retry of seq %d: dup %v, err %v", h.BaseSequence, dup, err)
		}
		want := batchMeta{h.BaseSequence, h.BaseSequence + 2, h.BaseOffset, h.BaseOffset + 2, h.MaxTimestamp}
		if *dup != want {
			t.Fatalf("retry of seq %d: %+v, want %+v", h.BaseSequence, *dup, want)
		}
	}
	// The sixth most recent is forgotten: out of order.
	retry := pbatch(7, 2, 0, 3)
	_, err := p.s.check(&retry, false, 0)
	wantSeqErr(t, err, 18, 0)
	// Same first sequence, other last sequence: not a duplicate.
	partial := pbatch(7, 2, 9, 2)
	_, err = p.s.check(&partial, false, 0)
	wantSeqErr(t, err, 18, 9)
	// The same sequences in a newer epoch are not duplicates.
	newer := pbatch(7, 3, 12, 3)
	_, err = p.s.check(&newer, false, 0)
	wantSeqErr(t, err, 0, 12)
}

func TestProducerStateSequences(t *testing.T) {
	p := newPsim()
	// Not idempotent: never checked.
	h := pbatch(-1, -1, -1, 4)
	if dup, err := p.s.check(&h, false, 0); dup != nil || err != nil {
		t.Fatalf("%v %v", dup, err)
	}
	p.s.update(&h, 0, 0)
	if len(p.s.producers) != 0 {
		t.Fatal("a batch without a producer id made state")
	}
	// A producer unknown to the partition starts anywhere.
	p.mustProduce(t, pbatch(9, 0, 42, 3))
	_, err := p.produce(pbatch(9, 0, 46, 1)) // a gap
	wantSeqErr(t, err, 45, 46)
	_, err = p.produce(pbatch(9, 0, 44, 2)) // overlaps the last batch
	wantSeqErr(t, err, 45, 44)
	p.mustProduce(t, pbatch(9, 0, 45, 1))
	p.mustProduce(t, pbatch(9, 0, 46, 5))
	// A batch without a sequence from a known producer is out of order.
	_, err = p.produce(pbatch(9, 0, -1, 1))
	wantSeqErr(t, err, 51, -1)
	// The state does not change on refusal.
	if e := p.s.producers[9]; e.lastSeq() != 50 || e.n != 3 {
		t.Fatalf("%+v", e)
	}
}

func TestProducerStateFencing(t *testing.T) {
	p := newPsim()
	p.mustProduce(t, pbatch(5, 3, 0, 2))
	for _, h := range []BatchHeader{pbatch(5, 2, 2, 1), pbatch(5, 2, 0, 2), pbatch(5, 0, 0, 1), pmarker(5, 2)} {
		_, err := p.produce(h)
		if !errors.Is(err, ErrInvalidProducerEpoch) || !strings.Contains(err.Error(), "producer 5 sent epoch") {
			t.Fatalf("%+v: err %v", h, err)
		}
	}
}

func TestProducerStateEpochBump(t *testing.T) {
	p := newPsim()
	p.mustProduce(t, pbatch(3, 0, 0, 10))
	p.mustProduce(t, pbatch(3, 0, 10, 10))
	// KIP-360: a bumped epoch restarts at sequence 0, and only there (Kafka
	// 3.9 ProducerAppendInfo.checkSequence).
	_, err := p.produce(pbatch(3, 1, 20, 5))
	wantSeqErr(t, err, 0, 20)
	_, err = p.produce(pbatch(3, 5, 1, 5))
	wantSeqErr(t, err, 0, 1)
	p.mustProduce(t, pbatch(3, 1, 0, 5))
	// The old epoch's batches are forgotten: a retry of one is fenced.
	_, err = p.produce(pbatch(3, 0, 10, 10))
	if !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Fatalf("err %v", err)
	}
	if dup, err := p.produce(pbatch(3, 1, 0, 5)); dup == nil || err != nil {
		t.Fatalf("retry in the new epoch: %v %v", dup, err)
	}
	p.mustProduce(t, pbatch(3, 1, 5, 1))

	// A transaction marker of a newer epoch moves the producer to it with no
	// batches: the next data batch starts at 0.
	if dup, err := p.produce(pmarker(3, 2)); dup != nil || err != nil {
		t.Fatalf("marker: %v %v", dup, err)
	}
	if e := p.s.producers[3]; e.epoch != 2 || e.n != 0 {
		t.Fatalf("after the marker: %+v", e)
	}
	_, err = p.produce(pbatch(3, 2, 6, 1))
	wantSeqErr(t, err, 0, 6)
	p.mustProduce(t, pbatch(3, 2, 0, 1))

	// A producer whose epoch is unknown (-1) is accepted at any sequence.
	p.s.update(&BatchHeader{ProducerID: 4, ProducerEpoch: -1, BaseSequence: -1, NumRecords: 1}, p.next, 5)
	p.mustProduce(t, pbatch(4, 0, 17, 1))
}

func TestProducerStateWrapAround(t *testing.T) {
	h := pbatch(1, 0, math.MaxInt32-2, 5)
	if got := lastSequence(&h); got != 1 {
		t.Fatalf("lastSequence %d, want 1", got)
	}
	h = pbatch(1, 0, math.MaxInt32-1, 2)
	if got := lastSequence(&h); got != math.MaxInt32 {
		t.Fatalf("lastSequence %d, want MaxInt32", got)
	}

	p := newPsim()
	p.mustProduce(t, pbatch(1, 0, math.MaxInt32-4, 3)) // ends at MaxInt32-2
	p.mustProduce(t, pbatch(1, 0, math.MaxInt32-1, 2)) // ends at MaxInt32
	_, err := p.produce(pbatch(1, 0, 1, 1))
	wantSeqErr(t, err, 0, 1)
	p.mustProduce(t, pbatch(1, 0, 0, 3))               // wraps to 0
	p.mustProduce(t, pbatch(1, 0, 3, 1))               // 3
	p.mustProduce(t, pbatch(2, 0, math.MaxInt32-2, 5)) // a batch across the wrap: MaxInt32-2 .. 1
	p.mustProduce(t, pbatch(2, 0, 2, 1))
	for _, h := range []BatchHeader{pbatch(1, 0, math.MaxInt32-1, 2), pbatch(1, 0, 0, 3), pbatch(2, 0, math.MaxInt32-2, 5)} {
		if dup, err := p.s.check(&h, false, 0); dup == nil || err != nil {
			t.Fatalf("retry of %+v: %v %v", h, dup, err)
		}
	}
}

func TestProducerStateExpire(t *testing.T) {
	s := newProducerState()
	a, b := pbatch(1, 0, 0, 1), pbatch(2, 0, 0, 1)
	s.update(&a, 0, 1000)
	s.update(&b, 1, 5000)
	if n := s.expire(5999, 5000); n != 0 || len(s.producers) != 2 {
		t.Fatalf("expired %d", n)
	}
	if n := s.expire(6000, 5000); n != 1 || s.producers[1] != nil || s.producers[2] == nil {
		t.Fatalf("expired %d, left %v", n, s.producers)
	}
	// Expired, the producer is unknown again: any sequence.
	late := pbatch(1, 0, 77, 1)
	if dup, err := s.check(&late, false, 0); dup != nil || err != nil {
		t.Fatalf("%v %v", dup, err)
	}
}

// randomProduce drives a partition with producers that retry, skip
// sequences, bump epochs and end transactions.
func randomProduce(seed uint64, steps int) *psim {
	rng := rand.New(rand.NewPCG(seed, 7))
	p := newPsim()
	type prod struct {
		epoch int16
		seq   int32
		sent  []BatchHeader
	}
	prods := map[int64]*prod{}
	for range steps {
		id := int64(rng.IntN(6))
		pr := prods[id]
		if pr == nil {
			pr = &prod{seq: int32(rng.IntN(3)) * (math.MaxInt32 / 2)}
			prods[id] = pr
		}
		switch r := rng.IntN(20); {
		case r == 0: // epoch bump
			pr.epoch++
			pr.seq = 0
			pr.sent = nil
		case r == 1: // a transaction marker
			p.produce(pmarker(id, pr.epoch))
			pr.seq, pr.sent = 0, nil
		case r <= 4 && len(pr.sent) > 0: // a retry
			p.produce(pr.sent[rng.IntN(len(pr.sent))])
		case r == 5: // out of order
			p.produce(pbatch(id, pr.epoch, pr.seq+int32(1+rng.IntN(3)), 1))
		default:
			n := int32(1 + rng.IntN(5))
			h := pbatch(id, pr.epoch, pr.seq, n)
			if _, err := p.produce(h); err == nil {
				pr.sent = append(pr.sent, h)
				pr.seq = incrementSequence(pr.seq, n)
			}
		}
	}
	return p
}

func TestProducerStateRebuildEqualsUpdates(t *testing.T) {
	for seed := range uint64(5) {
		p := randomProduce(seed, 2000)
		r := newProducerState()
		r.rebuildFrom(p.written...)
		if !reflect.DeepEqual(r.producers, p.s.producers) {
			t.Fatalf("seed %d: rebuilt state differs", seed)
		}
		if !bytes.Equal(r.appendSnapshot(nil, 5), p.s.appendSnapshot(nil, 5)) {
			t.Fatalf("seed %d: rebuilt snapshot differs", seed)
		}
		// From a snapshot in the middle, replaying the rest.
		half := len(p.written) / 2
		mid := newProducerState()
		mid.rebuildFrom(p.written[:half]...)
		dir := t.TempDir()
		off := p.written[half].BaseOffset
		if err := mid.writeSnapshot(OSFS, dir, off); err != nil {
			t.Fatal(err)
		}
		loaded, got, err := loadLatestSnapshot(OSFS, dir, nil)
		if err != nil || got != off {
			t.Fatalf("load: %d, %v", got, err)
		}
		loaded.rebuildFrom(p.written[half:]...)
		if !reflect.DeepEqual(loaded.producers, p.s.producers) {
			t.Fatalf("seed %d: snapshot + replay differs", seed)
		}
	}
}

func TestProducerSnapshotRoundTrip(t *testing.T) {
	dir := t.TempDir()
	p := randomProduce(11, 500)
	if len(p.s.producers) < 3 {
		t.Fatalf("%d producers", len(p.s.producers))
	}
	empty := newProducerState()
	if err := empty.writeSnapshot(OSFS, dir, 10); err != nil {
		t.Fatal(err)
	}
	if err := p.s.writeSnapshot(OSFS, dir, 1234); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "00000000000000001234.snapshot")); err != nil {
		t.Fatal(err)
	}
	s, off, err := loadLatestSnapshot(OSFS, dir, nil)
	if err != nil || off != 1234 {
		t.Fatalf("%d, %v", off, err)
	}
	if !reflect.DeepEqual(s.producers, p.s.producers) {
		t.Fatal("loaded state differs")
	}
	// The older one loads too.
	if err := removeSnapshotsAbove(OSFS, dir, 1233); err != nil {
		t.Fatal(err)
	}
	s, off, err = loadLatestSnapshot(OSFS, dir, nil)
	if err != nil || off != 10 || len(s.producers) != 0 {
		t.Fatalf("%d, %d producers, %v", off, len(s.producers), err)
	}
	// No snapshot: empty state, offset -1.
	s, off, err = loadLatestSnapshot(OSFS, t.TempDir(), nil)
	if err != nil || off != -1 || s == nil || len(s.producers) != 0 {
		t.Fatalf("%v, %d, %v", s, off, err)
	}
}

func TestProducerSnapshotCorruptSkipped(t *testing.T) {
	dir := t.TempDir()
	p := randomProduce(3, 300)
	older := newProducerState()
	older.rebuildFrom(p.written[:10]...)
	if err := older.writeSnapshot(OSFS, dir, 100); err != nil {
		t.Fatal(err)
	}
	if err := p.s.writeSnapshot(OSFS, dir, 200); err != nil {
		t.Fatal(err)
	}
	path := snapshotPath(dir, 200)
	data, _ := os.ReadFile(path)
	data[len(data)-3] ^= 0x10
	os.WriteFile(path, data, 0o644)

	var logs bytes.Buffer
	s, off, err := loadLatestSnapshot(OSFS, dir, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil || off != 100 || !reflect.DeepEqual(s.producers, older.producers) {
		t.Fatalf("%d, %v", off, err)
	}
	if !strings.Contains(logs.String(), "skipping corrupt producer snapshot") || !strings.Contains(logs.String(), "CRC") {
		t.Fatalf("log: %s", logs.String())
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("the corrupt snapshot is still there")
	}

	// Every corrupt one: an empty state.
	os.WriteFile(snapshotPath(dir, 100), []byte("junk"), 0o644)
	s, off, err = loadLatestSnapshot(OSFS, dir, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil || off != -1 || len(s.producers) != 0 {
		t.Fatalf("%d, %v", off, err)
	}
}

func TestDecodeSnapshotDefects(t *testing.T) {
	p := randomProduce(5, 200)
	good := p.s.appendSnapshot(nil, 77)
	if _, err := decodeSnapshot("x", 77, good); err != nil {
		t.Fatal(err)
	}
	// Every truncation and every single-bit flip fails with ErrCorrupt.
	for n := range len(good) {
		if _, err := decodeSnapshot("x", 77, good[:n]); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("truncated to %d: %v", n, err)
		}
	}
	for i := range good {
		b := bytes.Clone(good)
		b[i] ^= 0x04
		if _, err := decodeSnapshot("x", 77, b); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("byte %d flipped: %v", i, err)
		}
	}
	// Checks behind the CRC: a snapshot encoded wrongly but with its CRC
	// recomputed.
	recrc := func(b []byte) []byte {
		binary.BigEndian.PutUint32(b[2:], crc32.Checksum(b[snapshotCRCStart:], castagnoli))
		return b
	}
	for _, tc := range []struct {
		name string
		b    []byte
		want string
	}{
		{"wrong offset", good, "offset 77, the file is named for 78"},
		{"version", recrc(append([]byte{0, 4}, good[2:]...)), "version 4"},
		{"trailing bytes", recrc(append(bytes.Clone(good), 0)), "1 bytes after the last producer"},
	} {
		want := int64(77)
		if tc.name == "wrong offset" {
			want = 78
		}
		_, err := decodeSnapshot("snap", want, tc.b)
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "snap") {
			t.Fatalf("%s: %v", tc.name, err)
		}
	}
	// Producer ids out of order.
	s := newProducerState()
	s.producers[2] = &producerEntry{}
	s.producers[1] = &producerEntry{}
	b := s.appendSnapshot(nil, 0)
	copy(b[snapshotHeaderSize:], b[snapshotHeaderSize+snapshotProducer:snapshotHeaderSize+2*snapshotProducer])
	if _, err := decodeSnapshot("x", 0, recrc(b)); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "must be >= 0 and increase") {
		t.Fatalf("%v", err)
	}
}

func TestRemoveSnapshots(t *testing.T) {
	dir := t.TempDir()
	s := newProducerState()
	for _, off := range []int64{0, 100, 200, 300} {
		if err := s.writeSnapshot(OSFS, dir, off); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(dir, "00000000000000000400.log"), nil, 0o644) // not a snapshot
	if err := removeSnapshotsAbove(OSFS, dir, 200); err != nil {
		t.Fatal(err)
	}
	if got, _ := snapshotOffsets(OSFS, dir); !slices.Equal(got, []int64{0, 100, 200}) {
		t.Fatalf("%v", got)
	}
	if err := removeSnapshotsBelow(OSFS, dir, 100); err != nil {
		t.Fatal(err)
	}
	if got, _ := snapshotOffsets(OSFS, dir); !slices.Equal(got, []int64{100, 200}) {
		t.Fatalf("%v", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "00000000000000000400.log")); err != nil {
		t.Fatal("removed a file that is not a snapshot")
	}
}

func TestProducerStateAllocs(t *testing.T) {
	p := newPsim()
	p.mustProduce(t, pbatch(1, 0, 0, 1))
	seq := int32(1)
	off := int64(1)
	if allocs := testing.AllocsPerRun(100, func() {
		h := pbatch(1, 0, seq, 4)
		if dup, err := p.s.check(&h, false, 0); dup != nil || err != nil {
			t.Fatal(dup, err)
		}
		p.s.update(&h, off, 5)
		seq += 4
		off += 4
	}); allocs != 0 {
		t.Fatalf("check and update allocate %.1f times", allocs)
	}
}
