package engine

import (
	"bytes"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// descriptorsUnder counts the process's open descriptors on files under
// dir.
func descriptorsUnder(tb testing.TB, dir string) int {
	tb.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		tb.Skip(err)
	}
	n := 0
	for _, e := range ents {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err == nil && strings.HasPrefix(target, dir+"/") {
			n++
		}
	}
	return n
}

// A Store of many partitions holds at most OpenFiles log descriptors and
// its lock, however they are used: appends round robin over every
// partition (each reopening a descriptor the cache closed), index files
// growing, rolls, views of every partition held at once as a fetch holds
// them and then sent with sendfile, a restart, and reads of every segment.
// Every record reads back.
func TestStoreDescriptorBound(t *testing.T) {
	dir := t.TempDir()
	const parts, bound, rounds = 200, 16, 80
	opts := StoreOptions{OpenFiles: bound, Log: Options{Logger: discardLogger, SegmentBytes: 64 << 10, IndexIntervalBytes: 1024}}
	// The bound and the lock, once the rolls' background flushes (which
	// open a snapshot and index files for a moment) are done.
	var logs []*Log
	check := func(when string) {
		t.Helper()
		for _, l := range logs {
			l.bg.Wait()
		}
		if n := descriptorsUnder(t, dir); n > bound+1 {
			t.Fatalf("%s: %d descriptors open under the data directory, want at most %d (the bound and the lock)", when, n, bound+1)
		}
	}
	st, err := OpenStore(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { st.Close() }()
	id := NewTopicID()
	logs = make([]*Log, parts)
	for p := range logs {
		if logs[p], err = st.CreateLog(Partition{"many", int32(p)}, id); err != nil {
			t.Fatal(err)
		}
	}
	check("after creating the partitions")
	batch := testBatch(t, 4, 250, 1)
	b := make([]byte, len(batch))
	for r := range rounds {
		for p, l := range logs {
			copy(b, batch)
			if res, err := l.Append(b); err != nil || res.FirstOffset != int64(4*r) {
				t.Fatalf("round %d, partition %d: append %+v %v", r, p, res, err)
			}
		}
		check("appending")
	}
	if n := logs[0].segmentCount(); n < 2 {
		t.Fatalf("a partition has %d segments, want the rolls the test needs", n)
	}

	// Views of every partition at once, then sent on a TCP connection.
	views := make([]View, parts)
	var want []byte
	for p, l := range logs {
		if views[p], err = l.Read(0, 1<<20, l.EndOffset()); err != nil || views[p].Len() == 0 {
			t.Fatalf("partition %d: read %d bytes, %v", p, views[p].Len(), err)
		}
	}
	check("holding a view of every partition")
	for p := range views {
		if want, err = views[p].AppendTo(want); err != nil {
			t.Fatal(err)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan []byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- nil
			return
		}
		b, _ := io.ReadAll(c)
		c.Close()
		got <- b
	}()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	for p := range views {
		if _, err := views[p].WriteTo(conn); err != nil {
			t.Fatalf("sending partition %d: %v", p, err)
		}
		check("sending views")
	}
	conn.Close()
	if sent := <-got; !bytes.Equal(sent, want) {
		t.Fatalf("sent %d bytes, not the %d the views hold", len(sent), len(want))
	}
	for p := range views {
		views[p].Release()
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if n := descriptorsUnder(t, dir); n != 0 {
		t.Fatalf("%d descriptors open after Close", n)
	}

	st, err = OpenStore(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	logs = nil
	check("after the restart")
	for p := range int32(parts) {
		l, _, ok := st.Log(Partition{"many", p})
		if !ok {
			t.Fatalf("partition %d missing after the restart", p)
		}
		checkSequence(t, readAll(t, l, 0, 4<<10), 0, 4*rounds)
		check("reading every segment")
	}
}

// Appenders and readers on many partitions at once through a cache of two
// descriptors: every append and read may reopen a descriptor another just
// closed, and views held across them still read their batches.
func TestDescriptorCacheConcurrent(t *testing.T) {
	dir := t.TempDir()
	const parts, bound, appenders, readers = 8, 2, 4, 4
	rounds := 300
	if testing.Short() {
		rounds = 100
	}
	st, err := OpenStore(dir, StoreOptions{OpenFiles: bound, Log: Options{Logger: discardLogger, SegmentBytes: 8 << 10, IndexIntervalBytes: 512}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	id := NewTopicID()
	logs := make([]*Log, parts)
	for p := range logs {
		if logs[p], err = st.CreateLog(Partition{"c", int32(p)}, id); err != nil {
			t.Fatal(err)
		}
	}
	errs := make(chan error, appenders+readers)
	var wg sync.WaitGroup
	for a := range appenders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				// Each appender writes its own partitions: offsets are its.
				l := logs[(a+appenders*(i%2))%parts]
				if _, err := l.Append(testBatch(t, 3, 100, int64(i))); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for r := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var held [3]View
			for i := range rounds {
				for j := range held {
					l := logs[(r+i+j)%parts]
					end := l.EndOffset()
					if end == 0 {
						continue
					}
					v, err := l.Read((int64(i)*7)%end, 1, end)
					if err != nil {
						errs <- err
						return
					}
					held[j] = v
				}
				for j := range held {
					if held[j].Len() == 0 {
						continue
					}
					b, err := held[j].AppendTo(nil)
					held[j].Release()
					if err == nil {
						_, err = checkStoredBatch(b)
					}
					if err != nil {
						errs <- err
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for p, l := range logs {
		if got := len(readAll(t, l, 0, 1<<20)); int64(got) != l.EndOffset() {
			t.Fatalf("partition %d: %d records read, the log ends at %d", p, got, l.EndOffset())
		}
	}
}

// A partition never written reserves no disk: its .log is empty and it has
// no index files, before and after a restart; the first small append
// reserves one chunk of log and still no index.
func TestEmptyPartitionReservesNothing(t *testing.T) {
	dir := t.TempDir()
	opts := StoreOptions{Log: Options{Logger: discardLogger}}
	st, err := OpenStore(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	tps := []Partition{{"e", 0}, {"e", 1}}
	logs, err := st.CreateLogs(NewTopicID(), tps...)
	if err != nil {
		t.Fatal(err)
	}
	pdir := func(p int) string { return filepath.Join(dir, tps[p].dirName()) }
	check := func(when string, p int, maxLog int64) {
		t.Helper()
		blocks, _ := allocatedBytes(t, filepath.Join(pdir(p), "00000000000000000000.log"))
		if blocks > maxLog {
			t.Fatalf("%s: partition %d's log has %d bytes allocated, want at most %d", when, p, blocks, maxLog)
		}
		for _, suf := range []string{indexSuffix, timeIndexSuffix} {
			if _, err := os.Stat(segmentName(pdir(p), 0, suf)); !os.IsNotExist(err) {
				t.Fatalf("%s: partition %d has a %s file (%v)", when, p, suf, err)
			}
		}
	}
	check("created", 0, 0)
	if _, err := logs[1].Append(testBatch(t, 1, 100, 1)); err != nil {
		t.Fatal(err)
	}
	check("after an append", 1, preallocMin)
	check("after an append to another", 0, 0)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if st, err = OpenStore(dir, opts); err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	check("restarted", 0, 0)
	check("restarted", 1, 4096) // trimmed to its batch: one block
}
