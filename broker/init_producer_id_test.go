package broker

// InitProducerId through raw requests at each version and through
// franz-go: fresh ids, never reused, also across restarts and under
// concurrent requests; its error answers.

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func initProducerIDReq(txnID *string, pid int64, epoch int16) *kmsg.InitProducerIDRequest {
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionalID = txnID
	req.TransactionTimeoutMillis = 60000
	req.ProducerID, req.ProducerEpoch = pid, epoch
	return req
}

// producerIDSet collects the ids InitProducerId answers and checks each
// is new.
type producerIDSet struct {
	mu  sync.Mutex
	ids map[int64]bool
	max int64
}

func (s *producerIDSet) add(t testing.TB, what string, resp *kmsg.InitProducerIDResponse) {
	t.Helper()
	if resp.ErrorCode != 0 || resp.ProducerID < 0 || resp.ProducerEpoch != 0 {
		t.Errorf("%s: %v, producer id %d epoch %d; want a new id at epoch 0", what, kerr.ErrorForCode(resp.ErrorCode), resp.ProducerID, resp.ProducerEpoch)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ids == nil {
		s.ids = map[int64]bool{}
	}
	if s.ids[resp.ProducerID] {
		t.Errorf("%s: producer id %d handed out twice", what, resp.ProducerID)
	}
	s.ids[resp.ProducerID] = true
	s.max = max(s.max, resp.ProducerID)
}

func TestInitProducerID(t *testing.T) {
	dir := t.TempDir()
	tb := startBroker(t, dir, nil)
	var ids producerIDSet

	t.Run("each version", func(t *testing.T) {
		rc := dialRaw(t, tb.addr)
		for v := int16(0); v <= 5; v++ {
			resp := rc.roundTrip(initProducerIDReq(nil, -1, -1), v).(*kmsg.InitProducerIDResponse)
			ids.add(t, fmt.Sprintf("v%d", v), resp)
		}
		// KIP-360: a producer that has an id and epoch (v3+) still gets a
		// fresh id at epoch 0 when it has no transactional id, as Kafka's
		// coordinator "blindly accepts" the request.
		for v := int16(3); v <= 5; v++ {
			resp := rc.roundTrip(initProducerIDReq(nil, ids.max, 7), v).(*kmsg.InitProducerIDResponse)
			ids.add(t, fmt.Sprintf("v%d with producer %d epoch 7", v, ids.max), resp)
		}
	})

	t.Run("errors", func(t *testing.T) {
		rc := dialRaw(t, tb.addr)
		check := func(what string, resp *kmsg.InitProducerIDResponse, want *kerr.Error) {
			t.Helper()
			wantCode(t, what, resp.ErrorCode, want)
			if resp.ProducerID != -1 || resp.ProducerEpoch != -1 {
				t.Errorf("%s: producer id %d epoch %d, want -1 and -1", what, resp.ProducerID, resp.ProducerEpoch)
			}
		}
		for v := int16(3); v <= 5; v++ {
			for _, c := range [][2]int64{{-1, 3}, {5, -1}} {
				resp := rc.roundTrip(initProducerIDReq(nil, c[0], int16(c[1])), v).(*kmsg.InitProducerIDResponse)
				check(fmt.Sprintf("v%d producer %d epoch %d", v, c[0], c[1]), resp, kerr.InvalidRequest)
			}
		}
		for v := int16(0); v <= 5; v++ {
			// A transactional id before __transaction_state exists: no
			// coordinator yet (FindCoordinator creates it; txn_test.go).
			resp := rc.roundTrip(initProducerIDReq(kmsg.StringPtr("txn"), -1, -1), v).(*kmsg.InitProducerIDResponse)
			check(fmt.Sprintf("v%d transactional id", v), resp, kerr.NotCoordinator)
			resp = rc.roundTrip(initProducerIDReq(kmsg.StringPtr(""), -1, -1), v).(*kmsg.InitProducerIDResponse)
			check(fmt.Sprintf("v%d empty transactional id", v), resp, kerr.InvalidRequest)
		}
	})

	t.Run("concurrent", func(t *testing.T) {
		// 2400 ids from 8 clients at once: they span three blocks.
		var wg sync.WaitGroup
		for c := range 8 {
			cl := tb.client(t)
			wg.Go(func() {
				for i := range 300 {
					resp, err := initProducerIDReq(nil, -1, -1).RequestWith(ctxTimeout(t, 10*time.Second), cl)
					if err != nil {
						t.Errorf("client %d request %d: %v", c, i, err)
						return
					}
					ids.add(t, fmt.Sprintf("client %d request %d", c, i), resp)
				}
			})
		}
		wg.Wait()
	})

	t.Run("restart never reuses", func(t *testing.T) {
		before := ids.max
		tb.stop(t)
		tb := startBroker(t, dir, nil)
		rc := dialRaw(t, tb.addr)
		for i := range 5 {
			resp := rc.roundTrip(initProducerIDReq(nil, -1, -1), 5).(*kmsg.InitProducerIDResponse)
			ids.add(t, fmt.Sprintf("after the restart, request %d", i), resp)
			if resp.ProducerID <= before {
				t.Errorf("after the restart: producer id %d, at or below %d handed out before", resp.ProducerID, before)
			}
		}
	})
}

// When the coordinator cannot record a block, InitProducerId hands out no
// id and answers a retriable error; the next request, once the record can be
// written, gets an id. Exhausted ids are a server error.
func TestInitProducerIDAllocationFailure(t *testing.T) {
	dir := t.TempDir()
	tb := startBroker(t, dir, nil)
	rc := dialRaw(t, tb.addr)
	// The temporary file of the record's atomic replace cannot be created.
	tmp := filepath.Join(dir, "producer-id-block.tmp")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	resp := rc.roundTrip(initProducerIDReq(nil, -1, -1), 5).(*kmsg.InitProducerIDResponse)
	wantCode(t, "the block cannot be recorded", resp.ErrorCode, kerr.CoordinatorLoadInProgress)
	if resp.ProducerID != -1 || resp.ProducerEpoch != -1 {
		t.Errorf("error answer carries producer id %d epoch %d", resp.ProducerID, resp.ProducerEpoch)
	}
	if err := os.Remove(tmp); err != nil {
		t.Fatal(err)
	}
	resp = rc.roundTrip(initProducerIDReq(nil, -1, -1), 5).(*kmsg.InitProducerIDResponse)
	if resp.ErrorCode != 0 || resp.ProducerID != 0 {
		t.Errorf("once the block is recorded: %v, producer id %d; want the first block's first id, 0", kerr.ErrorForCode(resp.ErrorCode), resp.ProducerID)
	}
	tb.stop(t)

	rec := `{"version":1,"broker":0,"block_start":"9223372036854775000","block_end":"9223372036854775807"}`
	if err := os.WriteFile(filepath.Join(dir, "producer-id-block"), []byte(rec), 0o644); err != nil {
		t.Fatal(err)
	}
	tb = startBroker(t, dir, nil)
	rc = dialRaw(t, tb.addr)
	resp = rc.roundTrip(initProducerIDReq(nil, -1, -1), 5).(*kmsg.InitProducerIDResponse)
	wantCode(t, "ids exhausted", resp.ErrorCode, kerr.UnknownServerError)
}
