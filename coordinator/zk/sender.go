package zk

// The controller driver's channel to the brokers, Kafka's
// ControllerChannelManager: one queue and one goroutine per broker, so a
// broker's requests reach it in the order the decision core gave them
// while brokers are served independently (a slow broker delays only its
// own). A request that fails is sent again, after a pause, for as long as
// the registration it was meant for is the broker's live one (Kafka's
// RequestSendThread retries until the broker is removed); then it is
// dropped and answered with an error, which the core ignores.

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/coordinator/controller"
)

// Sender delivers a control request to a broker over its listener and
// returns the broker's response. It must honour ctx (the driver cancels it
// when it stops being controller) and may be called from several
// goroutines at once, never twice at once for one broker.
type Sender interface {
	Send(ctx context.Context, broker int32, req kmsg.Request) (kmsg.Response, error)
}

// sendRetryBackoff is the pause before a failed request is sent again
// (Kafka's controller waits 100 ms).
const sendRetryBackoff = 100 * time.Millisecond

// errBrokerGone answers requests dropped because their broker's
// registration went.
var errBrokerGone = errors.New("zk: broker's registration is gone")

// channels are the queues to the brokers of one controller term.
type channels struct {
	ctx    context.Context
	send   Sender
	answer func(controller.Response)
	wg     *sync.WaitGroup

	mu struct {
		sync.Mutex
		queues map[int32]*brokerQueue
	}
}

// brokerQueue is one broker's requests not yet answered, in order.
type brokerQueue struct {
	wake chan struct{} // capacity 1: work was added or the epoch changed

	mu struct {
		sync.Mutex
		reqs []controller.Request
		// epoch is the broker's live registration's epoch, -1 once gone.
		epoch int64
	}
}

func newChannels(ctx context.Context, s Sender, wg *sync.WaitGroup, answer func(controller.Response)) *channels {
	ch := &channels{ctx: ctx, send: s, answer: answer, wg: wg}
	ch.mu.queues = map[int32]*brokerQueue{}
	return ch
}

// queue appends rs to their brokers' queues.
func (ch *channels) queue(rs []controller.Request) {
	for _, r := range rs {
		q := ch.brokerQueue(r.Broker, r.BrokerEpoch)
		q.mu.Lock()
		q.mu.epoch = r.BrokerEpoch // the core sends only to live registrations
		q.mu.reqs = append(q.mu.reqs, r)
		q.mu.Unlock()
		q.signal()
	}
}

func (q *brokerQueue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// brokerQueue returns broker's queue, starting its goroutine when new.
func (ch *channels) brokerQueue(broker int32, epoch int64) *brokerQueue {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	q := ch.mu.queues[broker]
	if q == nil {
		q = &brokerQueue{wake: make(chan struct{}, 1)}
		q.mu.epoch = epoch
		ch.mu.queues[broker] = q
		ch.wg.Add(1)
		go ch.run(broker, q)
	}
	return q
}

// live sets the brokers' live epochs (absent ones are gone): requests for
// other registrations are dropped.
func (ch *channels) live(epochs map[int32]int64) {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	for id, q := range ch.mu.queues {
		e, ok := epochs[id]
		if !ok {
			e = -1
		}
		q.mu.Lock()
		q.mu.epoch = e
		q.mu.Unlock()
		q.signal()
	}
}

// run sends broker's requests one at a time until ctx ends.
func (ch *channels) run(broker int32, q *brokerQueue) {
	defer ch.wg.Done()
	for {
		q.mu.Lock()
		for len(q.mu.reqs) > 0 && q.mu.reqs[0].BrokerEpoch != q.mu.epoch {
			r := q.mu.reqs[0]
			q.mu.reqs = q.mu.reqs[1:]
			q.mu.Unlock()
			ch.answer(controller.Response{Request: r, Err: errBrokerGone})
			q.mu.Lock()
		}
		var r controller.Request
		has := len(q.mu.reqs) > 0
		if has {
			r = q.mu.reqs[0]
		}
		q.mu.Unlock()
		if !has {
			select {
			case <-q.wake:
				continue
			case <-ch.ctx.Done():
				return
			}
		}
		resp, err := ch.send.Send(ch.ctx, broker, r.Msg)
		if ch.ctx.Err() != nil {
			return
		}
		if err != nil {
			t := time.NewTimer(sendRetryBackoff)
			select {
			case <-t.C:
			case <-q.wake:
				t.Stop()
			case <-ch.ctx.Done():
				t.Stop()
				return
			}
			continue // the same request again, unless its broker went
		}
		q.mu.Lock()
		q.mu.reqs = q.mu.reqs[1:]
		q.mu.Unlock()
		ch.answer(controller.Response{Request: r, Response: resp})
	}
}
