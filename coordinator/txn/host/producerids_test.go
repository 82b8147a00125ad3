package host

import (
	"errors"
	"fmt"
	"log/slog"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-io/sluice/coordinator"
)

// TestProducerIDs: ids come from blocks of 1000, taken as one is used up;
// a failed allocation hands out nothing and the next call asks again;
// InitProducerId's codes for a backend that cannot record a block
// (COORDINATOR_LOAD_IN_PROGRESS, retried by clients) and for exhausted ids
// (UNKNOWN_SERVER_ERROR).
func TestProducerIDs(t *testing.T) {
	next, fail := int64(5000), error(nil)
	var asked []int64
	p := NewProducerIDs(func(n int64) (int64, error) {
		asked = append(asked, n)
		if fail != nil {
			return -1, fail
		}
		first := next
		next += n
		return first, nil
	}, slog.New(slog.DiscardHandler))
	for i := range int64(producerIDBlockSize) {
		if id, err := p.Next(); err != nil || id != 5000+i {
			t.Fatalf("id %d: %d, %v", i, id, err)
		}
	}
	if len(asked) != 1 || asked[0] != producerIDBlockSize {
		t.Fatalf("blocks asked: %v", asked)
	}
	fail = errors.New("disk full")
	if id, code := p.ID(); id != -1 || code != kerr.CoordinatorLoadInProgress.Code {
		t.Fatalf("failed block: %d, %v", id, kerr.ErrorForCode(code))
	}
	fail = fmt.Errorf("block: %w", coordinator.ErrProducerIDsExhausted)
	if _, code := p.ID(); code != kerr.UnknownServerError.Code {
		t.Fatalf("exhausted: %v", kerr.ErrorForCode(code))
	}
	fail = nil
	if id, code := p.ID(); code != 0 || id != 6000 {
		t.Fatalf("after failures: %d, %v", id, kerr.ErrorForCode(code))
	}
	if len(asked) != 4 {
		t.Fatalf("blocks asked: %v", asked)
	}
}
