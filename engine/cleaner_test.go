package engine

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// kv is one record of a keyed batch; a nil value is a tombstone.
type kv struct {
	key   string
	value []byte
}

func keyedBatch(tb testing.TB, ts int64, c Compression, recs ...kv) []byte {
	tb.Helper()
	var b BatchBuilder
	for _, r := range recs {
		var key []byte
		if r.key != "" {
			key = []byte(r.key)
		}
		b.Add(Record{Timestamp: ts, Key: key, Value: r.value})
	}
	out, err := b.BuildCompressed(c)
	if err != nil {
		tb.Fatal(err)
	}
	return append([]byte(nil), out...)
}

// logRecords reads the whole log from its start, batch by batch (stepping
// over gaps and empty batches), and returns its records and batch headers.
func logRecords(tb testing.TB, l *Log) ([]Record, []BatchHeader) {
	tb.Helper()
	var recs []Record
	var hs []BatchHeader
	for off := l.StartOffset(); off < l.EndOffset(); {
		v, err := l.Read(off, 1<<20, l.EndOffset())
		if err != nil {
			tb.Fatalf("Read(%d): %v", off, err)
		}
		if v.Len() == 0 {
			tb.Fatalf("Read(%d) returned nothing below the end %d", off, l.EndOffset())
		}
		data, err := v.AppendTo(nil)
		v.Release()
		if err != nil {
			tb.Fatal(err)
		}
		for p := 0; p < len(data); {
			h, err := checkStoredBatch(data[p:])
			if err != nil {
				tb.Fatalf("batch at %d of the read at %d: %v", p, off, err)
			}
			b := data[p : p+int(h.Size())]
			p += len(b)
			if h.LastOffset() < off {
				continue
			}
			hs = append(hs, h)
			it := NewRecordIterator(b)
			for it.Next() {
				r := it.Record()
				if r.Offset < off {
					continue
				}
				if len(recs) > 0 && r.Offset <= recs[len(recs)-1].Offset {
					tb.Fatalf("offset %d after %d", r.Offset, recs[len(recs)-1].Offset)
				}
				r.Key = bytes.Clone(r.Key)
				r.Value = bytes.Clone(r.Value)
				r.Headers = nil
				recs = append(recs, r)
			}
			if err := it.Err(); err != nil {
				tb.Fatal(err)
			}
			off = h.LastOffset() + 1
		}
	}
	return recs, hs
}

// model is what a compacted log must show: each key's latest record.
type model struct {
	latest map[string]int64  // key -> offset of its latest record
	value  map[string][]byte // key -> its latest value (nil: tombstone)
}

func newModel() *model { return &model{latest: map[string]int64{}, value: map[string][]byte{}} }

func (m *model) appended(res AppendResult, recs ...kv) {
	for i, r := range recs {
		if r.key == "" {
			continue
		}
		m.latest[r.key] = res.FirstOffset + int64(i)
		m.value[r.key] = r.value
	}
}

// check verifies that recs hold every key's latest record, with its offset
// and value, and, when compacted, nothing else below clean (tombstones kept
// unless dropTombs).
func (m *model) check(tb testing.TB, recs []Record, clean int64, dropTombs bool) {
	tb.Helper()
	seen := map[string]bool{}
	for _, r := range recs {
		k := string(r.Key)
		if r.Offset >= clean {
			continue
		}
		if r.Key == nil {
			tb.Fatalf("keyless record at offset %d survived cleaning", r.Offset)
		}
		if seen[k] {
			tb.Fatalf("key %q appears twice below the clean point %d (again at %d)", k, clean, r.Offset)
		}
		seen[k] = true
		if r.Offset != m.latest[k] {
			tb.Fatalf("key %q at offset %d, its latest is at %d", k, r.Offset, m.latest[k])
		}
		if r.Value == nil && dropTombs {
			tb.Fatalf("tombstone of %q at %d survived its delete horizon", k, r.Offset)
		}
	}
	for k, off := range m.latest {
		if m.value[k] == nil && dropTombs {
			continue
		}
		found := false
		for _, r := range recs {
			if r.Offset == off {
				found = string(r.Key) == k && bytes.Equal(r.Value, m.value[k])
				break
			}
		}
		if !found {
			tb.Fatalf("key %q: its latest record (offset %d, value %q) is missing", k, off, m.value[k])
		}
	}
}

func compactOpts(clock *fakeClock) Options {
	return Options{
		SegmentBytes: 4 << 10, IndexIntervalBytes: 256, Logger: discardLogger, Now: clock.now,
		Compaction: CompactionOptions{Policy: PolicyCompact, DeleteRetention: time.Hour},
	}
}

// settle makes everything appended cleanable: a roll ends the active
// segment and a flush passes the recovery point over it.
func settle(tb testing.TB, l *Log) {
	tb.Helper()
	if err := l.Roll(); err != nil {
		tb.Fatal(err)
	}
	if err := l.Flush(); err != nil {
		tb.Fatal(err)
	}
}

func mustClean(tb testing.TB, c *Cleaner, l *Log) CleanStats {
	tb.Helper()
	st, err := c.Clean(l)
	if err != nil {
		tb.Fatalf("Clean: %v", err)
	}
	return st
}

func TestCleanerLatestPerKey(t *testing.T) {
	for _, codec := range []Compression{CompressionNone, CompressionGzip, CompressionSnappy, CompressionLZ4, CompressionZstd} {
		t.Run(codec.String(), func(t *testing.T) {
			clock := &fakeClock{t: time.UnixMilli(1_700_000_000_000)}
			dir := fastTempDir(t)
			opts := compactOpts(clock)
			l := mustOpen(t, dir, opts)
			defer func() { l.Close() }()
			m := newModel()
			for i := range 400 {
				var recs []kv
				for j := range 5 {
					k := fmt.Sprintf("k%d", (i*5+j)%10)
					recs = append(recs, kv{k, []byte(fmt.Sprintf("%s=v%d", k, i*5+j))})
				}
				if i%50 == 7 {
					recs = append(recs, kv{"", []byte("keyless")})
				}
				res, err := l.Append(keyedBatch(t, clock.t.UnixMilli(), codec, recs...))
				if err != nil {
					t.Fatal(err)
				}
				m.appended(res, recs...)
			}
			settle(t, l)
			before := l.Size()
			segsBefore := len(l.SegmentBases())
			c := NewCleaner(CleanerOptions{DedupeBufferBytes: 1 << 20})
			st := mustClean(t, c, l)
			if st.End != l.EndOffset() || st.FirstDirty != 0 {
				t.Fatalf("cleaned [%d, %d), want [0, %d): %+v", st.FirstDirty, st.End, l.EndOffset(), st)
			}
			recs, _ := logRecords(t, l)
			if len(recs) != 10 {
				t.Fatalf("%d records after cleaning, want one per key (10)", len(recs))
			}
			m.check(t, recs, st.End, false)
			if l.Size() >= before/10 || len(l.SegmentBases()) >= segsBefore {
				t.Fatalf("size %d -> %d, segments %d -> %d", before, l.Size(), segsBefore, len(l.SegmentBases()))
			}
			if st.Keyless != 8 {
				t.Fatalf("%d keyless records removed, want 8", st.Keyless)
			}
			// Nothing dirty: a second pass does nothing.
			if st := mustClean(t, c, l); st.End != 0 || st.Groups != 0 {
				t.Fatalf("second pass: %+v", st)
			}
			// Reopen (clean and unclean): the gaps recover.
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			l = mustOpen(t, dir, opts)
			recs2, _ := logRecords(t, l)
			m.check(t, recs2, st.End, false)
			l.Close()
			os.Remove(filepath.Join(dir, cleanShutdownFile))
			os.WriteFile(filepath.Join(dir, recoveryPointFile), []byte("0\n0\n"), 0o644)
			l = mustOpen(t, dir, opts)
			recs3, _ := logRecords(t, l)
			m.check(t, recs3, st.End, false)
			if len(recs3) != 10 {
				t.Fatalf("%d records after an unclean reopen", len(recs3))
			}
			// Appends go on at the same end.
			res, err := l.Append(keyedBatch(t, clock.t.UnixMilli(), codec, kv{"k1", []byte("new")}))
			if err != nil || res.FirstOffset != m.latest["k9"]+2 && res.FirstOffset <= m.latest["k9"] {
				t.Fatalf("append after cleaning: %+v %v", res, err)
			}
		})
	}
}

func TestCleanerTombstones(t *testing.T) {
	clock := &fakeClock{t: time.UnixMilli(1_700_000_000_000)}
	dir := fastTempDir(t)
	opts := compactOpts(clock)
	l := mustOpen(t, dir, opts)
	defer l.Close()
	m := newModel()
	add := func(recs ...kv) {
		t.Helper()
		res, err := l.Append(keyedBatch(t, clock.t.UnixMilli(), CompressionNone, recs...))
		if err != nil {
			t.Fatal(err)
		}
		m.appended(res, recs...)
	}
	for i := range 200 {
		add(kv{fmt.Sprintf("k%d", i%20), []byte(fmt.Sprintf("v%d", i))})
	}
	add(kv{"k3", nil}, kv{"k4", nil})
	settle(t, l)
	c := NewCleaner(CleanerOptions{DedupeBufferBytes: 1 << 20})
	st := mustClean(t, c, l)
	recs, hs := logRecords(t, l)
	m.check(t, recs, st.End, false)
	if len(recs) != 20 {
		t.Fatalf("%d records, want 18 values and 2 tombstones", len(recs))
	}
	horizon := int64(-1)
	for _, h := range hs {
		if hasDeleteHorizon(&h) {
			horizon = h.BaseTimestamp
		}
	}
	if want := clock.t.Add(time.Hour).UnixMilli(); horizon != want {
		t.Fatalf("delete horizon %d, want now + delete.retention.ms = %d", horizon, want)
	}
	// Timestamps survive the rewrite against the horizon.
	for _, r := range recs {
		if r.Timestamp != clock.t.UnixMilli() {
			t.Fatalf("record at %d has timestamp %d, want %d", r.Offset, r.Timestamp, clock.t.UnixMilli())
		}
	}

	// Before the horizon: a pass keeps them.
	clock.t = clock.t.Add(59 * time.Minute)
	add(kv{"k5", []byte("later")})
	settle(t, l)
	st = mustClean(t, c, l)
	recs, _ = logRecords(t, l)
	m.check(t, recs, st.End, false)
	if st.Tombstones != 0 {
		t.Fatalf("%d tombstones removed before the horizon", st.Tombstones)
	}
	// After it: gone, and the keys with them.
	clock.t = clock.t.Add(2 * time.Minute)
	add(kv{"k6", []byte("later")})
	settle(t, l)
	st = mustClean(t, c, l)
	recs, _ = logRecords(t, l)
	m.check(t, recs, st.End, true)
	if st.Tombstones != 2 || len(recs) != 18 {
		t.Fatalf("after the horizon: %d tombstones removed, %d records left; want 2 and 18", st.Tombstones, len(recs))
	}
	for _, r := range recs {
		if k := string(r.Key); k == "k3" || k == "k4" {
			t.Fatalf("deleted key %s still at %d", k, r.Offset)
		}
	}
}

// The producer's last batch stays (empty) when its records are compacted
// away, so its retry is still recognised after the producer state is
// rebuilt from the log.
func TestCleanerKeepsProducerLastBatch(t *testing.T) {
	clock := &fakeClock{t: time.UnixMilli(1_700_000_000_000)}
	dir := fastTempDir(t)
	opts := compactOpts(clock)
	l := mustOpen(t, dir, opts)
	const pid, epoch = 77, 3
	batch := func(seq int32, recs ...kv) []byte {
		b := keyedBatch(t, clock.t.UnixMilli(), CompressionNone, recs...)
		binary.BigEndian.PutUint64(b[offProducerID:], pid)
		binary.BigEndian.PutUint16(b[offProducerEpoch:], epoch)
		binary.BigEndian.PutUint32(b[offBaseSequence:], uint32(seq))
		binary.BigEndian.PutUint32(b[offCRC:], batchCRC(b))
		return b
	}
	var last AppendResult
	for i := range 10 {
		res, err := l.Append(batch(int32(i*2), kv{"a", []byte(fmt.Sprint(i))}, kv{"b", []byte(fmt.Sprint(i))}))
		if err != nil {
			t.Fatal(err)
		}
		last = res
	}
	lastBatch := batch(18, kv{"a", []byte("9")}, kv{"b", []byte("9")})
	for i := range 50 { // someone else overwrites a and b
		if _, err := l.Append(keyedBatch(t, clock.t.UnixMilli(), CompressionNone, kv{"a", []byte(fmt.Sprint(i))}, kv{"b", []byte("x")})); err != nil {
			t.Fatal(err)
		}
	}
	settle(t, l)
	mustClean(t, NewCleaner(CleanerOptions{DedupeBufferBytes: 1 << 20}), l)
	recs, hs := logRecords(t, l)
	if len(recs) != 2 {
		t.Fatalf("%d records, want 2", len(recs))
	}
	var empty *BatchHeader
	for i := range hs {
		if hs[i].ProducerID == pid {
			if empty != nil {
				t.Fatalf("two batches of the producer survive: %+v and %+v", *empty, hs[i])
			}
			empty = &hs[i]
		}
	}
	if empty == nil || empty.NumRecords != 0 || empty.BaseOffset != last.FirstOffset || empty.LastOffset() != last.LastOffset || empty.BaseSequence != 18 || empty.ProducerEpoch != epoch {
		t.Fatalf("the producer's last batch after cleaning: %+v, want an empty batch at [%d, %d] sequence 18", empty, last.FirstOffset, last.LastOffset)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// Rebuild the producer state from the log alone.
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), snapshotSuffix) {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
	l = mustOpen(t, dir, opts)
	defer l.Close()
	res, err := l.Append(lastBatch)
	if err != nil || !res.Duplicate || res.FirstOffset != last.FirstOffset || res.LastOffset != last.LastOffset {
		t.Fatalf("retry of the last batch after cleaning and a rebuild: %+v %v; want a duplicate at [%d, %d]", res, err, last.FirstOffset, last.LastOffset)
	}
	if _, err := l.Append(batch(20, kv{"a", []byte("next")})); err != nil {
		t.Fatalf("the next sequence: %v", err)
	}
}

// The Store's cleaner threads pick a dirty compacted log by themselves,
// keep its clean point across a reopen, and leave delete-policy logs alone.
func TestStoreCleanerThreads(t *testing.T) {
	clock := &fakeClock{t: time.UnixMilli(1_700_000_000_000)}
	dir := fastTempDir(t)
	opts := StoreOptions{
		LogOptions: func(topic string) Options {
			o := compactOpts(clock)
			if topic == "plain" {
				o.Compaction.Policy = PolicyDelete
			}
			return o
		},
		Cleaner: CleanerOptions{Threads: 2, DedupeBufferBytes: 2 << 20, Backoff: time.Millisecond},
	}
	s, err := OpenStore(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	ms := map[string]*model{}
	logs := map[string]*Log{}
	for _, topic := range []string{"table", "plain"} {
		l, err := s.CreateLog(Partition{topic, 0}, NewTopicID())
		if err != nil {
			t.Fatal(err)
		}
		m := newModel()
		for i := range 300 {
			r := kv{fmt.Sprintf("k%d", i%7), []byte(fmt.Sprintf("v%d", i))}
			res, err := l.Append(keyedBatch(t, clock.t.UnixMilli(), CompressionNone, r))
			if err != nil {
				t.Fatal(err)
			}
			m.appended(res, r)
		}
		settle(t, l)
		ms[topic], logs[topic] = m, l
	}
	deadline := time.After(20 * time.Second)
	for {
		ch := s.cleaner.passedChan()
		if st, ok := logs["table"].LastClean(); ok && st.End == logs["table"].EndOffset() {
			break // passes may have run during the appends: wait for the one that reaches the end
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("no pass after 20 s: %+v", s.CleanerStats())
		}
	}
	if st, ok := logs["plain"].LastClean(); ok {
		t.Fatalf("a delete-policy log was cleaned: %+v", st)
	}
	recs, _ := logRecords(t, logs["table"])
	ms["table"].check(t, recs, logs["table"].EndOffset(), false)
	if len(recs) != 7 {
		t.Fatalf("%d records after the background pass, want 7", len(recs))
	}
	if tot := s.CleanerStats(); tot.Passes < 1 || tot.RecordsRemoved < 293 || tot.BytesRead == 0 || tot.BytesWritten == 0 {
		t.Fatalf("totals %+v", tot)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	cp, err := readCheckpoint(OSFS, filepath.Join(dir, cleanerCheckpointFile))
	if err != nil || cp["table-0"] != 300 || len(cp) != 1 {
		t.Fatalf("cleaner checkpoint %v %v, want table-0 at 300", cp, err)
	}

	// Reopen with the cleaner off: nothing is dirty, Compact does nothing;
	// new updates make the log dirty again and Compact cleans only them.
	opts.Cleaner.Disabled = true
	s, err = OpenStore(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if sts, err := s.Compact(); err != nil || len(sts) != 0 {
		t.Fatalf("Compact on a clean store: %+v %v", sts, err)
	}
	l, _, _ := s.Log(Partition{"table", 0})
	m := ms["table"]
	for i := range 30 {
		r := kv{fmt.Sprintf("k%d", i%3), []byte(fmt.Sprintf("again%d", i))}
		res, err := l.Append(keyedBatch(t, clock.t.UnixMilli(), CompressionNone, r))
		if err != nil {
			t.Fatal(err)
		}
		m.appended(res, r)
	}
	settle(t, l)
	sts, err := s.Compact()
	if err != nil || len(sts) != 1 || sts[0].FirstDirty != 300 || sts[0].End != l.EndOffset() {
		t.Fatalf("Compact: %+v %v", sts, err)
	}
	recs, _ = logRecords(t, l)
	m.check(t, recs, l.EndOffset(), false)
	if len(recs) != 7 {
		t.Fatalf("%d records, want 7", len(recs))
	}
	// Deleting the log forgets its clean point.
	if err := s.DeleteLog(Partition{"table", 0}); err != nil {
		t.Fatal(err)
	}
	if cp, _ := readCheckpoint(OSFS, filepath.Join(dir, cleanerCheckpointFile)); len(cp) != 0 {
		t.Fatalf("cleaner checkpoint after DeleteLog: %v", cp)
	}
}

// A compact-only log keeps old segments whatever retention.ms says; a
// compact,delete log applies it.
func TestCompactPolicyRetention(t *testing.T) {
	for _, p := range []CleanupPolicy{PolicyCompact, PolicyCompactDelete} {
		t.Run(p.String(), func(t *testing.T) {
			clock := &fakeClock{t: time.UnixMilli(1_700_000_000_000)}
			o := compactOpts(clock)
			o.Compaction.Policy = p
			o.Retention = time.Hour
			l := mustOpen(t, fastTempDir(t), o)
			defer l.Close()
			for i := range 100 {
				if _, err := l.Append(keyedBatch(t, clock.t.UnixMilli(), CompressionNone, kv{fmt.Sprint(i), bytes.Repeat([]byte{'x'}, 100)})); err != nil {
					t.Fatal(err)
				}
			}
			clock.t = clock.t.Add(2 * time.Hour)
			replicatedAll(l)
			n, err := l.ApplyRetention()
			if err != nil {
				t.Fatal(err)
			}
			if (n > 0) != (p == PolicyCompactDelete) {
				t.Fatalf("%v deleted %d segments", p, n)
			}
		})
	}
}

// Timestamp lookups, truncation and follower appends work over the gaps a
// cleaned log has.
func TestCleanedLogGaps(t *testing.T) {
	clock := &fakeClock{t: time.UnixMilli(1_700_000_000_000)}
	dir := fastTempDir(t)
	l := mustOpen(t, dir, compactOpts(clock))
	defer l.Close()
	m := newModel()
	for i := range 300 {
		r := kv{fmt.Sprintf("k%d", i%5), []byte(fmt.Sprint(i))}
		res, err := l.Append(keyedBatch(t, clock.t.UnixMilli()+int64(i), CompressionNone, r))
		if err != nil {
			t.Fatal(err)
		}
		m.appended(res, r)
	}
	settle(t, l)
	mustClean(t, NewCleaner(CleanerOptions{DedupeBufferBytes: 1 << 20}), l)
	recs, _ := logRecords(t, l)
	if len(recs) != 5 || recs[0].Offset != 295 {
		t.Fatalf("records %v", recs)
	}
	// The first record at or after a time in a gap is the next kept one.
	off, ts, err := l.OffsetForTimestamp(clock.t.UnixMilli() + 10)
	if err != nil || off != 295 || ts != clock.t.UnixMilli()+295 {
		t.Fatalf("OffsetForTimestamp: %d %d %v", off, ts, err)
	}
	if off, _, err := l.MaxTimestampOffset(); err != nil || off != 299 {
		t.Fatalf("MaxTimestampOffset: %d %v", off, err)
	}
	// A read inside a gap starts at the next batch.
	v, err := l.Read(100, 1<<20, l.EndOffset())
	if err != nil || v.Len() == 0 {
		t.Fatalf("Read(100): %v", err)
	}
	data, _ := v.AppendTo(nil)
	v.Release()
	if h := parseHeader(data); h.BaseOffset != 295 {
		t.Fatalf("Read(100) starts at %d", h.BaseOffset)
	}
	// Truncating inside a gap, then appending, keeps offsets increasing.
	if err := l.TruncateTo(297); err != nil {
		t.Fatal(err)
	}
	if l.EndOffset() != 297 {
		t.Fatalf("end %d after truncating to 297", l.EndOffset())
	}
	if cp, _ := l.clean.cp.get(l.name); cp > 297 {
		t.Fatalf("clean point %d above the truncated end", cp)
	}
	if res, err := l.Append(keyedBatch(t, clock.t.UnixMilli(), CompressionNone, kv{"k9", []byte("x")})); err != nil || res.FirstOffset != 297 {
		t.Fatalf("append after truncation: %+v %v", res, err)
	}
	// A follower copies the compacted batches, gaps and all.
	f := mustOpen(t, filepath.Join(fastTempDir(t), "follower"), compactOpts(clock))
	defer f.Close()
	v, err = l.Read(0, 1<<20, l.EndOffset())
	if err != nil {
		t.Fatal(err)
	}
	data, _ = v.AppendTo(nil)
	v.Release()
	if _, err := f.AppendReplicated(data); err != nil {
		t.Fatal(err)
	}
	frecs, _ := logRecords(t, f)
	if len(frecs) != 3 || frecs[0].Offset != 295 {
		t.Fatalf("follower records %v", frecs)
	}
}

// The picker's rules: the dirty ratio must exceed min.cleanable.dirty.ratio
// unless the dirty data is older than max.compaction.lag.ms, and segments
// younger than min.compaction.lag.ms are not cleaned.
func TestCleanerPicking(t *testing.T) {
	clock := &fakeClock{t: time.UnixMilli(1_700_000_000_000)}
	var comp CompactionOptions
	opts := StoreOptions{
		LogOptions: func(string) Options {
			o := compactOpts(clock)
			o.Compaction = comp
			return o
		},
		Cleaner: CleanerOptions{Disabled: true, DedupeBufferBytes: 1 << 20},
	}
	s, err := OpenStore(fastTempDir(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fill := func(l *Log, n int, ts int64) {
		t.Helper()
		for i := range n {
			if _, err := l.Append(keyedBatch(t, ts, CompressionNone, kv{fmt.Sprintf("k%d", i), bytes.Repeat([]byte{'x'}, 100)})); err != nil {
				t.Fatal(err)
			}
		}
		settle(t, l)
	}
	now := clock.t.UnixMilli()

	// Distinct keys: cleaning removes nothing, the clean point moves, and
	// the log is clean (ratio 0) until new data makes it dirty again.
	comp = CompactionOptions{Policy: PolicyCompact, MinCleanableDirtyRatio: 0.5}
	a, _ := s.CreateLog(Partition{"a", 0}, NewTopicID())
	fill(a, 100, now)
	if sts, err := s.Compact(); err != nil || len(sts) != 1 || sts[0].End != 100 {
		t.Fatalf("first Compact: %+v %v", sts, err)
	}
	fill(a, 50, now) // dirty ratio about 1/3
	if d := a.dirtyStats(); d.ratio < 0.3 || d.ratio > 0.4 {
		t.Fatalf("dirty stats %+v", d)
	}
	if sts, _ := s.Compact(); len(sts) != 0 {
		t.Fatalf("a log at ratio 1/3 was cleaned with min.cleanable.dirty.ratio 0.5: %+v", sts)
	}
	// max.compaction.lag.ms makes it overdue once its dirty data is old.
	s.DeleteLog(Partition{"a", 0})
	comp = CompactionOptions{Policy: PolicyCompact, MaxCompactionLag: time.Hour}
	b, _ := s.CreateLog(Partition{"b", 0}, NewTopicID())
	fill(b, 100, now)
	s.Compact()
	fill(b, 50, now)
	if sts, _ := s.Compact(); len(sts) != 0 {
		t.Fatalf("cleaned before max.compaction.lag.ms: %+v", sts)
	}
	clock.t = clock.t.Add(2 * time.Hour)
	if sts, err := s.Compact(); err != nil || len(sts) != 1 {
		t.Fatalf("not cleaned after max.compaction.lag.ms: %+v %v", sts, err)
	}

	// min.compaction.lag.ms holds back segments with young records.
	comp = CompactionOptions{Policy: PolicyCompact, MinCompactionLag: time.Hour}
	c, _ := s.CreateLog(Partition{"c", 0}, NewTopicID())
	fill(c, 100, clock.t.UnixMilli()-2*time.Hour.Milliseconds())
	fill(c, 100, clock.t.UnixMilli())
	st, err := NewCleaner(CleanerOptions{DedupeBufferBytes: 1 << 20}).Clean(c)
	if err != nil || st.End <= 0 || st.End > 100 {
		t.Fatalf("with min.compaction.lag.ms the pass cleaned to %d (%v), want only the old segments (<= 100)", st.End, err)
	}
}
