package broker

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type fetchResult struct {
	resp *kmsg.FetchResponse
	err  error
	took time.Duration
}

// fetchAsync issues req through a kgo client's Request in a goroutine.
func fetchAsync(ctx context.Context, tb *testBroker, t *testing.T, req *kmsg.FetchRequest) <-chan fetchResult {
	cl := tb.client(t)
	res := make(chan fetchResult, 1)
	go func() {
		start := time.Now()
		resp, err := req.RequestWith(ctx, cl)
		res <- fetchResult{resp, err, time.Since(start)}
	}()
	return res
}

// notAnswered checks that a fetch stays parked for a while.
func notAnswered(t *testing.T, res <-chan fetchResult, d time.Duration) {
	t.Helper()
	select {
	case r := <-res:
		t.Fatalf("fetch answered after %v, before any data arrived (err %v)", r.took, r.err)
	case <-time.After(d):
	}
}

func fetchedValues(t *testing.T, r fetchResult) []string {
	t.Helper()
	if r.err != nil {
		t.Fatalf("fetch: %v", r.err)
	}
	var out []string
	for _, rt := range r.resp.Topics {
		for _, p := range rt.Partitions {
			if p.ErrorCode != 0 {
				t.Fatalf("fetch partition %d: %v", p.Partition, kerr.ErrorForCode(p.ErrorCode))
			}
			_, vs := valuesIn(t, p.RecordBatches)
			out = append(out, vs...)
		}
	}
	return out
}

// TestLongPollWokenByProduce parks a fetch (MaxWait 30 s, MinBytes 1) and
// checks a produce answers it at once.
func TestLongPollWokenByProduce(t *testing.T) {
	tb := startBroker(t, t.TempDir(), nil)
	id := tb.createTopic(t, "lp", 3)
	req := fetchReq("lp", id, 0, 0, 1<<20)
	// Two more partitions: a produce to any of them wakes the fetch.
	for _, p := range []int32{1, 2} {
		rp := req.Topics[0].Partitions[0]
		rp.Partition = p
		req.Topics[0].Partitions = append(req.Topics[0].Partitions, rp)
	}
	req.MaxWaitMillis, req.MinBytes = 30000, 1
	res := fetchAsync(ctxTimeout(t, 40*time.Second), tb, t, req)
	notAnswered(t, res, 300*time.Millisecond)

	rc := dialRaw(t, tb.addr)
	if code, _ := rc.produceCode(11, "lp", 2, batch("wake up")); code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	select {
	case r := <-res:
		if got := fetchedValues(t, r); !slices.Equal(got, []string{"wake up"}) {
			t.Fatalf("fetched %q", got)
		}
		if r.took > 5*time.Second {
			t.Fatalf("fetch took %v", r.took)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a produce did not answer the parked fetch within 5s")
	}

	// Again, now parked at the log end of a partition with data.
	req.Topics[0].Partitions = req.Topics[0].Partitions[2:]
	req.Topics[0].Partitions[0].FetchOffset = 1
	res = fetchAsync(ctxTimeout(t, 40*time.Second), tb, t, req)
	notAnswered(t, res, 300*time.Millisecond)
	// A produce to another partition leaves it parked.
	if code, _ := rc.produceCode(11, "lp", 0, batch("elsewhere")); code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	notAnswered(t, res, 300*time.Millisecond)
	if code, _ := rc.produceCode(11, "lp", 2, batch("second")); code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	select {
	case r := <-res:
		if got := fetchedValues(t, r); !slices.Equal(got, []string{"second"}) {
			t.Fatalf("fetched %q", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a produce did not answer the parked fetch within 5s")
	}
}

// TestLongPollMaxWait: with less than MinBytes available the fetch returns
// after MaxWait with what there is.
func TestLongPollMaxWait(t *testing.T) {
	tb := startBroker(t, t.TempDir(), nil)
	id := tb.createTopic(t, "mw", 1)
	rc := dialRaw(t, tb.addr)
	if code, _ := rc.produceCode(11, "mw", 0, batch("small")); code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	for _, offset := range []int64{0, 1} { // some data; none
		req := fetchReq("mw", id, 0, offset, 1<<20)
		req.MaxWaitMillis, req.MinBytes = 200, 1<<20
		res := fetchAsync(ctxTimeout(t, 20*time.Second), tb, t, req)
		select {
		case r := <-res:
			got := fetchedValues(t, r)
			if want := []string{"small"}[:1-offset]; !slices.Equal(got, want) {
				t.Errorf("offset %d: fetched %q, want %q", offset, got, want)
			}
			if r.took < 200*time.Millisecond {
				t.Errorf("offset %d: answered after %v, before MaxWait (200ms)", offset, r.took)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("offset %d: a fetch with MaxWait 200ms was not answered within 5s", offset)
		}
	}
	// MinBytes reached: no wait at all.
	req := fetchReq("mw", id, 0, 0, 1<<20)
	req.MaxWaitMillis, req.MinBytes = 30000, 1
	select {
	case r := <-fetchAsync(ctxTimeout(t, 20*time.Second), tb, t, req):
		if got := fetchedValues(t, r); !slices.Equal(got, []string{"small"}) {
			t.Errorf("fetched %q", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a fetch with MinBytes available waited")
	}
}

// TestLongPollAnsweredAtClose: closing the broker answers a parked fetch at
// once, and Close returns promptly.
func TestLongPollAnsweredAtClose(t *testing.T) {
	tb := startBroker(t, t.TempDir(), nil)
	tb.createTopic(t, "close", 1)
	rc := dialRaw(t, tb.addr)
	req := fetchReq("close", [16]byte{}, 0, 0, 1<<20)
	req.MaxWaitMillis, req.MinBytes = 30000, 1
	req.SetVersion(12)
	corr := rc.send(req)
	// Parked: no answer yet.
	if _, err := rc.readFrame(300 * time.Millisecond); err == nil {
		t.Fatal("the fetch was answered before any data arrived")
	}
	closed := make(chan error, 1)
	start := time.Now()
	go func() { closed <- tb.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return within 5s with a fetch parked for 30s")
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("Close took %v with a parked fetch", took)
	}
	resp := kmsg.NewPtrFetchResponse()
	resp.SetVersion(12)
	rc.readResponse(corr, resp, 2*time.Second)
	if p := resp.Topics[0].Partitions[0]; p.ErrorCode != 0 || len(p.RecordBatches) != 0 {
		t.Errorf("fetch answered at close: %v, %d bytes", kerr.ErrorForCode(p.ErrorCode), len(p.RecordBatches))
	}
}
