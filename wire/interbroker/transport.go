package interbroker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Sender is one client of the other brokers, as New makes: a request to a
// broker and its response, concurrent calls allowed (one at a time per
// broker), until Close.
type Sender interface {
	Send(ctx context.Context, broker int32, req kmsg.Request) (kmsg.Response, error)
	Close()
}

// Transport opens a broker's clients of the other brokers: the controller's,
// the follower fetchers', the ISR changes', the transaction markers', the
// verification's and the lag sampler's. A broker opens every one through
// the single Transport it is given, so that a test or a simulation that
// gives it another (an in-memory network, a partition between two brokers)
// sees and shapes all its traffic to the others.
type Transport interface {
	Open(self int32, book AddressBook, o Options) Sender
}

// TCP is the transport of a real broker: a Client (New) per Open.
type TCP struct{}

// Open implements Transport.
func (TCP) Open(self int32, book AddressBook, o Options) Sender { return New(self, book, o) }
