package engine

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// With flush.messages=1 every Append returns only once its records are
// durable, and concurrent appenders share sync rounds.
func TestGroupCommit(t *testing.T) {
	l := mustOpen(t, t.TempDir(), Options{FlushMessages: 1})
	defer l.Close()
	const appenders, each = 32, 20
	batch := testBatch(t, 1, 100, 1)
	var wg sync.WaitGroup
	errs := make(chan error, appenders)
	for range appenders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := append([]byte(nil), batch...)
			for range each {
				res, err := l.Append(b)
				if err != nil {
					errs <- err
					return
				}
				if rp := l.RecoveryPoint(); rp <= res.LastOffset {
					errs <- fmt.Errorf("append of %d returned with the recovery point at %d", res.LastOffset, rp)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	rounds := l.syncRounds.Load()
	t.Logf("%d appends, %d sync rounds (%.3f fsyncs per append)", appenders*each, rounds, float64(rounds)/float64(appenders*each))
	if rounds >= appenders*each/2 {
		t.Fatalf("%d sync rounds for %d concurrent appends: appends did not share rounds", rounds, appenders*each)
	}
}

// Options.OnFlush hears of each flush that synced appends, with its time,
// and stays across SetOptions (fixed at open); a flush with nothing to
// sync is not one.
func TestOnFlush(t *testing.T) {
	var calls atomic.Int64
	var took atomic.Int64
	onFlush := func(d time.Duration) { calls.Add(1); took.Add(int64(d)) }
	l := mustOpen(t, t.TempDir(), Options{FlushMessages: 1, OnFlush: onFlush})
	defer l.Close()
	batch := testBatch(t, 1, 100, 1)
	for range 3 {
		if _, err := l.Append(batch); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.SetOptions(Options{FlushMessages: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(batch); err != nil {
		t.Fatal(err)
	}
	if err := l.Flush(); err != nil { // nothing left to sync
		t.Fatal(err)
	}
	if n, rounds := calls.Load(), l.syncRounds.Load(); n != 4 || rounds != 4 || took.Load() <= 0 {
		t.Fatalf("OnFlush called %d times (%v in all) for 4 durable appends and %d sync rounds", n, time.Duration(took.Load()), rounds)
	}
}

// The child side of TestProcessCrash: appends with flush.messages=1 and
// prints each offset once Append has returned it durable, until killed.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv("SLUICE_CRASH_CHILD")
	if dir == "" {
		return // only run as the child of TestProcessCrash
	}
	l, err := OpenLog(dir, Options{FlushMessages: 1, SegmentBytes: 64 << 10})
	if err != nil {
		fmt.Printf("error %v\n", err)
		os.Exit(1)
	}
	out := bufio.NewWriter(os.Stdout)
	for {
		off := l.EndOffset()
		var b BatchBuilder
		b.Add(Record{Timestamp: 1, Value: []byte(crashValue(off))})
		res, err := l.Append(b.Build())
		if err != nil {
			fmt.Fprintf(out, "error %v\n", err)
			out.Flush()
			os.Exit(1)
		}
		fmt.Fprintf(out, "durable %d\n", res.LastOffset)
		out.Flush()
	}
}

func crashValue(off int64) string {
	return fmt.Sprintf("record-%d-%s", off, strings.Repeat("x", int(off%97)))
}

// Process crash: a child appending with flush.messages=1 is killed with
// SIGKILL at random moments; after each, every offset it reported durable is
// present and intact, and the log accepts appends.
func TestProcessCrash(t *testing.T) {
	if os.Getenv("SLUICE_CRASH_CHILD") != "" {
		return
	}
	dir := filepath.Join(t.TempDir(), "crash-0")
	rng := rand.New(rand.NewPCG(1, 2))
	reported := int64(-1)
	const kills = 24
	for i := range kills {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), "SLUICE_CRASH_CHILD="+dir)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		want := 1 + rng.IntN(40) // kill after this many durable reports, mid-append
		sc := bufio.NewScanner(stdout)
		got := 0
		deadline := time.AfterFunc(30*time.Second, func() { cmd.Process.Kill() })
		for got < want && sc.Scan() {
			line := sc.Text()
			if off, ok := strings.CutPrefix(line, "durable "); ok {
				n, err := strconv.ParseInt(off, 10, 64)
				if err != nil {
					t.Fatalf("child said %q", line)
				}
				reported = max(reported, n)
				got++
			} else if strings.HasPrefix(line, "error") {
				t.Fatalf("child: %s", line)
			}
		}
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		deadline.Stop()
		if got < want {
			t.Fatalf("kill %d: the child stopped after %d reports", i, got)
		}

		// Everything reported is there and intact.
		l, err := OpenLog(dir, Options{SegmentBytes: 64 << 10})
		if err != nil {
			t.Fatalf("kill %d: reopen: %v", i, err)
		}
		if l.EndOffset() <= reported {
			t.Fatalf("kill %d: log ends at %d, offset %d was reported durable", i, l.EndOffset(), reported)
		}
		for _, r := range readAll(t, l, 0, 1<<20) {
			if string(r.Value) != crashValue(r.Offset) {
				t.Fatalf("kill %d: offset %d holds %q", i, r.Offset, r.Value)
			}
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d kills, %d offsets reported durable, all present", kills, reported+1)
}
