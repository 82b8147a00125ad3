package broker

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/sluice-io/sluice/config"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DeleteTopics racing a broker's first group request (which creates
// __consumer_offsets and the group coordinator) and CreateTopics: every
// request is answered. deleteTopic once took the group coordinator's lock
// under Broker.admin while the first FindCoordinator held it and waited
// for Broker.admin, stopping both and every admin request after them.
func TestDeleteTopicsRacesFirstGroupRequest(t *testing.T) {
	for i := range 25 {
		dir := t.TempDir()
		tb := startBroker(t, dir, func(c *config.Config) { c.Groups.OffsetsPartitions = 1 })
		cl := tb.client(t)
		ctx := ctxTimeout(t, 5*time.Second)
		doomed := fmt.Sprintf("doomed-%d", i)
		create := kmsg.NewPtrCreateTopicsRequest()
		ct := kmsg.NewCreateTopicsRequestTopic()
		ct.Topic, ct.NumPartitions, ct.ReplicationFactor = doomed, 8, 1
		create.Topics = append(create.Topics, ct)
		if _, err := create.RequestWith(ctx, cl); err != nil {
			t.Fatal(err)
		}

		requests := []kmsg.Request{
			func() kmsg.Request {
				r := kmsg.NewPtrDeleteTopicsRequest()
				r.TopicNames = []string{doomed}
				dt := kmsg.NewDeleteTopicsRequestTopic()
				dt.Topic = &doomed
				r.Topics = append(r.Topics, dt)
				return r
			}(),
			func() kmsg.Request {
				r := kmsg.NewPtrFindCoordinatorRequest()
				r.CoordinatorKey, r.CoordinatorKeys = "g", []string{"g"}
				return r
			}(),
			func() kmsg.Request {
				r := kmsg.NewPtrCreateTopicsRequest()
				ct := kmsg.NewCreateTopicsRequestTopic()
				ct.Topic, ct.NumPartitions, ct.ReplicationFactor = fmt.Sprintf("other-%d", i), 2, 1
				r.Topics = append(r.Topics, ct)
				return r
			}(),
		}
		// Each request on its own connection, so none waits behind another
		// in a connection's request order.
		var wg sync.WaitGroup
		errs := make(chan error, len(requests))
		for _, r := range requests {
			c := tb.client(t)
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := c.Request(ctx, r); err != nil {
					errs <- fmt.Errorf("%s: %w", kmsg.NameForKey(r.Key()), err)
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if ctx.Err() != nil {
				// Stopping a deadlocked broker would hang the test too:
				// fail the binary with the stacks that show the cycle.
				buf := make([]byte, 1<<20)
				panic(fmt.Sprintf("round %d: requests not answered within 5s (deadlock?): %v\n%s", i, err, buf[:runtime.Stack(buf, true)]))
			}
			t.Fatalf("round %d: %v", i, err)
		}
		tb.stop(t)
	}
}
