package broker

// Transactions on a compacted topic, cleaned by the background cleaner: a
// franz-go transactional producer commits and aborts writes of the same
// keys; once cleaned, the committed keys keep their latest committed
// values, the aborted records and (after their delete horizon) the abort
// markers are gone, and read_committed and read_uncommitted consumers read
// the same records.

import (
	"bytes"
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/config"
	"github.com/sluice-io/sluice/engine"
)

// consumeToKey reads partition 0 of topic from offset 0 at the given
// isolation level until it meets a record with key and value, and returns
// what it read.
func (tb *testBroker) consumeToKey(t testing.TB, ctx context.Context, topic string, committed bool, key, value string) []*kgo.Record {
	t.Helper()
	iso := kgo.ReadUncommitted()
	if committed {
		iso = kgo.ReadCommitted()
	}
	cl := tb.client(t, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(0)}}), kgo.FetchIsolationLevel(iso))
	defer cl.Close()
	var out []*kgo.Record
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consuming %s (read_committed %v): %d records, no %s=%s: %v", topic, committed, len(out), key, value, ctx.Err())
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("consuming %s: %v", topic, err) })
		for _, r := range fs.Records() {
			out = append(out, r)
			if string(r.Key) == key && string(r.Value) == value {
				return out
			}
		}
	}
}

func TestTxnCompactedTopic(t *testing.T) {
	tb := startBroker(t, t.TempDir(), func(c *config.Config) {
		backoff, zero, ratio := 10*time.Millisecond, time.Duration(0), 0.0
		c.Cleaner.Backoff, c.Cleaner.DeleteRetention, c.Cleaner.MinCleanableRatio = &backoff, &zero, &ratio
	})
	ctx := ctxTimeout(t, 60*time.Second)
	const topic = "txtable"
	// segment.bytes at its minimum: every batch rolls a segment, so all
	// but the last are cleanable.
	if _, err := tb.admin(t).CreateTopic(ctx, 1, 1, map[string]*string{
		"cleanup.policy": kadm.StringPtr("compact"), "segment.bytes": kadm.StringPtr("14"),
	}, topic); err != nil {
		t.Fatal(err)
	}
	cl := txnClient(t, tb.addr, "compacted-txn")
	txn := func(commit bool, kv ...string) {
		t.Helper()
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < len(kv); i += 2 {
			r := &kgo.Record{Topic: topic, Key: []byte(kv[i]), Value: []byte(kv[i+1])}
			if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatalf("produce %s=%s: %v", kv[i], kv[i+1], err)
			}
		}
		if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatalf("end transaction (commit %v): %v", commit, err)
		}
	}
	want := map[string]string{}
	for i := range 30 {
		k := "k" + strconv.Itoa(i%4)
		if i%3 == 1 { // aborted: a committed key overwritten, and a key only aborted writes hold
			txn(false, k, "bad"+strconv.Itoa(i), "a"+strconv.Itoa(i%5), "bad"+strconv.Itoa(i))
			continue
		}
		txn(true, k, "v"+strconv.Itoa(i))
		want[k] = "v" + strconv.Itoa(i)
	}

	// Commit more until the cleaner (which only cleans dirty data) has
	// dropped every aborted record and, past their horizon, every abort
	// marker below the active segment.
	l := tb.partition(topic, 0).Log
	clean := func() bool {
		if len(l.AbortedTxns(nil, 0, l.EndOffset())) > 0 {
			return false
		}
		for _, m := range tb.markers(t, topic, 0) {
			if m.Type == engine.ControlAbort {
				return false
			}
		}
		return !tb.holdsValue(t, topic, []byte("bad"))
	}
	end := ""
	for round := 0; !clean(); round++ {
		if ctx.Err() != nil {
			t.Fatalf("the cleaner left aborted records or markers after %d rounds: %+v", round, tb.markers(t, topic, 0))
		}
		end = "e" + strconv.Itoa(round)
		passes := tb.store.CleanerStats().Passes
		txn(true, "end", end)
		if err := l.Flush(); err != nil { // the cleaner stays below the recovery point
			t.Fatal(err)
		}
		pollUntil(t, "a cleaning pass", func() bool { return tb.store.CleanerStats().Passes > passes })
	}
	want["end"] = end

	uncommitted := tb.consumeToKey(t, ctx, topic, false, "end", end)
	committed := tb.consumeToKey(t, ctx, topic, true, "end", end)
	if len(committed) != len(uncommitted) {
		t.Fatalf("read_committed reads %d records, read_uncommitted %d", len(committed), len(uncommitted))
	}
	got := map[string]string{}
	for i, r := range committed {
		u := uncommitted[i]
		if r.Offset != u.Offset || !bytes.Equal(r.Key, u.Key) || !bytes.Equal(r.Value, u.Value) {
			t.Fatalf("record %d: read_committed %s=%s at %d, read_uncommitted %s=%s at %d", i, r.Key, r.Value, r.Offset, u.Key, u.Value, u.Offset)
		}
		got[string(r.Key)] = string(r.Value)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("key %s reads %q, want %q", k, got[k], v)
		}
	}
	for k, v := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("key %s=%s survives: only aborted transactions wrote it", k, v)
		}
	}
}

// holdsValue reports whether partition 0 of topic holds a data record
// whose value starts with prefix.
func (tb *testBroker) holdsValue(t testing.TB, topic string, prefix []byte) bool {
	t.Helper()
	l := tb.partition(topic, 0).Log
	end := l.EndOffset()
	for off := l.StartOffset(); off < end; {
		v, err := l.Read(off, 1<<20, end)
		if err != nil {
			t.Fatal(err)
		}
		buf, err := v.AppendTo(nil)
		v.Release()
		if err != nil {
			t.Fatal(err)
		}
		it := engine.NewRecordIterator(buf)
		for it.Next() {
			if bytes.HasPrefix(it.Record().Value, prefix) {
				return true
			}
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
		h, err := engine.ParseBatchHeader(buf[lastBatchAt(t, buf):])
		if err != nil {
			t.Fatal(err)
		}
		off = h.LastOffset() + 1
	}
	return false
}

// lastBatchAt is the position of the last batch in buf, whole batches.
func lastBatchAt(t testing.TB, buf []byte) int {
	t.Helper()
	last := 0
	for pos := 0; pos < len(buf); {
		h, err := engine.ParseBatchHeader(buf[pos:])
		if err != nil {
			t.Fatal(err)
		}
		last = pos
		pos += int(h.Size())
	}
	return last
}
