package coordinator

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/sluice-io/sluice/engine"
)

func openTest(t *testing.T, dir string) *Embedded {
	t.Helper()
	e, err := OpenEmbedded(dir, Broker{ID: 3, Host: "localhost", Port: 9092})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func mustAllocate(t *testing.T, e *Embedded, n int64) int64 {
	t.Helper()
	first, err := e.AllocateProducerIDs(n)
	if err != nil {
		t.Fatalf("AllocateProducerIDs(%d): %v", n, err)
	}
	return first
}

func TestAllocateProducerIDsNeverReuses(t *testing.T) {
	dir := t.TempDir()
	e := openTest(t, dir)
	if first := mustAllocate(t, e, 1000); first != 0 {
		t.Fatalf("first block starts at %d, want 0 (as Kafka's)", first)
	}
	if first := mustAllocate(t, e, 10); first != 1000 {
		t.Fatalf("second block starts at %d, want 1000", first)
	}
	data, err := os.ReadFile(filepath.Join(dir, producerIDBlockFile))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"version":1,"broker":3,"block_start":"1000","block_end":"1009"}` + "\n"; string(data) != want {
		t.Fatalf("%s holds %q, want %q", producerIDBlockFile, data, want)
	}
	e.Close()
	if _, err := e.AllocateProducerIDs(1); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}

	// A restart continues after the last block handed out.
	e = openTest(t, dir)
	if first := mustAllocate(t, e, 1000); first != 1010 {
		t.Fatalf("after a restart the block starts at %d, want 1010", first)
	}

	// Concurrent allocations get disjoint blocks.
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		firsts []int64
	)
	for range 16 {
		wg.Go(func() {
			first, err := e.AllocateProducerIDs(100)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			firsts = append(firsts, first)
			mu.Unlock()
		})
	}
	wg.Wait()
	slices.Sort(firsts)
	for i, f := range firsts {
		if want := int64(2010 + 100*i); f != want {
			t.Fatalf("concurrent blocks start at %v, want 2010, 2110, …", firsts)
		}
	}
	if _, err := e.AllocateProducerIDs(0); err == nil {
		t.Fatal("a block of 0 ids was allocated")
	}
}

// A block whose record could not be written is not handed out, and the
// next allocation still starts after the last recorded block.
func TestAllocateProducerIDsWriteFailure(t *testing.T) {
	dir := t.TempDir()
	e := openTest(t, dir)
	mustAllocate(t, e, 1000)
	// The temporary file of the atomic replace cannot be created.
	tmp := filepath.Join(dir, producerIDBlockFile+".tmp")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	if first, err := e.AllocateProducerIDs(1000); err == nil {
		t.Fatalf("allocated from %d without recording it", first)
	}
	os.Remove(tmp)
	if first := mustAllocate(t, e, 1000); first != 1000 {
		t.Fatalf("after the failure the block starts at %d, want 1000", first)
	}
}

func TestAllocateProducerIDsBadRecord(t *testing.T) {
	for _, c := range []struct {
		name, content string
		want          error
	}{
		{"not JSON", `{"version":1,"block_start":"0","block_e`, engine.ErrCorrupt},
		{"number as JSON number", `{"version":1,"block_start":0,"block_end":999}`, engine.ErrCorrupt},
		{"unknown version", `{"version":2,"block_start":"0","block_end":"999"}`, engine.ErrCorrupt},
		{"negative start", `{"version":1,"block_start":"-5","block_end":"999"}`, engine.ErrCorrupt},
		{"end before start", `{"version":1,"block_start":"1000","block_end":"999"}`, engine.ErrCorrupt},
		{"empty", ``, engine.ErrCorrupt},
		{"last block ends at the largest id", `{"version":1,"block_start":"9223372036854775000","block_end":"9223372036854775807"}`, ErrProducerIDsExhausted},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			e := openTest(t, dir)
			if err := os.WriteFile(filepath.Join(dir, producerIDBlockFile), []byte(c.content), 0o644); err != nil {
				t.Fatal(err)
			}
			if first, err := e.AllocateProducerIDs(1000); !errors.Is(err, c.want) {
				t.Fatalf("allocated from %d, err %v; want %v", first, err, c.want)
			}
		})
	}
}

func TestAllocateProducerIDsExhausted(t *testing.T) {
	dir := t.TempDir()
	e := openTest(t, dir)
	end := int64(math.MaxInt64 - 1000)
	rec := `{"version":1,"block_start":"0","block_end":"` + strconv.FormatInt(end, 10) + `"}`
	if err := os.WriteFile(filepath.Join(dir, producerIDBlockFile), []byte(rec), 0o644); err != nil {
		t.Fatal(err)
	}
	// Exactly the last 1000 ids remain.
	if _, err := e.AllocateProducerIDs(1001); !errors.Is(err, ErrProducerIDsExhausted) {
		t.Fatalf("a block past the largest id: %v", err)
	}
	if first := mustAllocate(t, e, 1000); first != end+1 {
		t.Fatalf("the last block starts at %d, want %d", first, end+1)
	}
	if _, err := e.AllocateProducerIDs(1); !errors.Is(err, ErrProducerIDsExhausted) {
		t.Fatalf("after the last block: %v", err)
	}
}
