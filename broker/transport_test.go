package broker

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/config"
	"github.com/sluice-io/sluice/wire/interbroker"
)

// cutTransport is a broker's Config.Transport over TCP that records what
// the broker sends to the others, by API key, and refuses every request
// to a broker it is cut from.
type cutTransport struct {
	mu   sync.Mutex
	sent map[int16]int
	cut  map[int32]bool
}

var errCut = errors.New("test: the link is cut")

func (x *cutTransport) Open(self int32, book interbroker.AddressBook, o interbroker.Options) interbroker.Sender {
	return &cutSender{x: x, next: interbroker.TCP{}.Open(self, book, o)}
}

func (x *cutTransport) setCut(broker int32, cut bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.cut[broker] = cut
}

func (x *cutTransport) count(key int16) int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.sent[key]
}

type cutSender struct {
	x    *cutTransport
	next interbroker.Sender
}

func (s *cutSender) Send(ctx context.Context, broker int32, req kmsg.Request) (kmsg.Response, error) {
	s.x.mu.Lock()
	cut := s.x.cut[broker]
	if !cut {
		s.x.sent[req.Key()]++
	}
	s.x.mu.Unlock()
	if cut {
		return nil, errCut
	}
	return s.next.Send(ctx, broker, req)
}

func (s *cutSender) Close() { s.next.Close() }

// Every request a broker sends to another goes through the one transport
// it is given: the controller's LeaderAndIsr and UpdateMetadata, the
// followers' fetches, a leader's AlterPartition. Cutting a follower's link
// to its leader there takes it out of the ISR (acks=all produces go on
// with the rest); healed, it catches up and joins again.
func TestClusterTransportCarriesEveryRequest(t *testing.T) {
	var mu sync.Mutex
	transports := map[int32]*cutTransport{}
	transport := func(id int32) *cutTransport {
		mu.Lock()
		defer mu.Unlock()
		return transports[id]
	}
	c := startCluster(t, 3, func(cfg *config.Config) {
		x := &cutTransport{sent: map[int16]int{}, cut: map[int32]bool{}}
		mu.Lock()
		transports[cfg.ID] = x
		mu.Unlock()
		cfg.Transport = x
		cfg.Cluster.ReplicaLagTimeMax = 2 * time.Second
	})
	ctx := ctxTimeout(t, 90*time.Second)
	c.createTopic(ctx, "cut", 3, 3)
	all := []int32{0, 1, 2}
	c.waitAgree("every replica in the ISR", func(md *kmsg.MetadataResponse) bool {
		return slices.Equal(isrOf(md, "cut", 0), all) && slices.Equal(isrOf(md, "cut", 1), all) && slices.Equal(isrOf(md, "cut", 2), all)
	})
	md := metadataOf(t, c.broker(0))
	controller := md.ControllerID
	for _, k := range []kmsg.Key{kmsg.LeaderAndISR, kmsg.UpdateMetadata} {
		if transport(controller).count(int16(k)) == 0 {
			t.Errorf("the controller's transport carried no %v", k)
		}
	}
	// A partition another broker than the controller leads, so that its
	// ISR change is a request over the leader's transport.
	var partition, leader int32 = -1, -1
	for _, p := range topicOf(md, "cut").Partitions {
		if p.Leader != controller {
			partition, leader = p.Partition, p.Leader
			break
		}
	}
	if partition < 0 {
		t.Fatalf("the controller leads every partition: %s", describeMetadata(md))
	}
	// The follower that is not the controller, so that the cut stops its
	// fetches only (the controller's requests to the leader go on).
	victim := 3 - leader - controller
	deadline := time.Now().Add(30 * time.Second)
	for transport(victim).count(int16(kmsg.Fetch)) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("broker %d follows partition %d but fetched nothing through its transport", victim, partition)
		}
		time.Sleep(10 * time.Millisecond)
	}
	transport(victim).setCut(leader, true)
	// A follower that fetches nothing falls out of the ISR once it is
	// behind: a produce (acks=all) waits for the ISR to shrink.
	prod := clusterClient(t, c.bootstrap(), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	rec := &kgo.Record{Topic: "cut", Partition: partition, Value: []byte("while cut")}
	done := make(chan error, 1)
	go func() { done <- prod.ProduceSync(ctx, rec).FirstErr() }()
	var rest []int32
	for _, id := range all {
		if id != victim {
			rest = append(rest, id)
		}
	}
	c.waitAgree("the cut follower out of the ISR", func(md *kmsg.MetadataResponse) bool { return slices.Equal(isrOf(md, "cut", partition), rest) })
	if err := <-done; err != nil {
		t.Fatalf("produce while the follower is cut: %v", err)
	}
	if transport(leader).count(int16(kmsg.AlterPartition)) == 0 {
		t.Error("the leader's ISR change did not go through its transport")
	}
	transport(victim).setCut(leader, false)
	c.waitAgree("the follower back in the ISR", func(md *kmsg.MetadataResponse) bool { return slices.Equal(isrOf(md, "cut", partition), all) })
}
