package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	zkpath "github.com/sluice-io/sluice/coordinator/zk"
)

// A clean shutdown (SIGTERM) of a leader holding an acks=all produce that
// cannot complete, both followers stopped so that the high watermark
// cannot pass it, answers the produce at once (NOT_LEADER_OR_FOLLOWER) and
// exits, rather than holding the partition's leadership and its
// registration until the produce's timeout (a minute here) passes. The
// followers' registrations still exist when it has exited: their sessions
// had not expired, so nothing else (the ISR shrinking once a new controller
// dropped them) let the produce end. Once the followers continue, one of
// them leads and the idempotent producer's retry is acknowledged there,
// once: a follower may hold the batch already (a fetch it sent before it
// stopped was answered with it, and it appends that answer once
// continued), and the new leader then knows the batch's sequence.
// Controlled shutdown is off: with both followers stopped (one of them may
// be the controller) it could only wait; this is the shutdown without it,
// or after it gave up.
func TestClusterCleanShutdownAnswersParkedProduce(t *testing.T) {
	c := startClusterWith(t, 3, "zookeeper.session.timeout.ms=4000\ncontrolled.shutdown.enable=false\n")
	ctx, cancel := context.WithTimeout(context.Background(), 4*testWait)
	defer cancel()
	const topic = "parked"
	createReplicated(ctx, t, c, topic, 1)
	leader, _ := c.waitISR(topic, 0, c.ids()...)
	followers := c.others(leader)
	// Idempotent, with its producer id from a first record: an
	// InitProducerID sent later could go to a stopped broker.
	cl := c.client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProduceRequestTimeout(time.Minute))
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("first")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	c.waitLogsEqual(topic, 0, c.ids(), wantEnd(1))
	for _, id := range followers {
		c.pause(id)
	}
	acked := make(chan error, 1)
	cl.Produce(ctx, &kgo.Record{Topic: topic, Value: []byte("parked")}, func(_ *kgo.Record, err error) { acked <- err })
	poll(t, fmt.Sprintf("the record in broker %d's log", leader), func() error {
		l, err := c.logOf(leader, topic, 0)
		if err == nil && l.end() != 2 {
			err = fmt.Errorf("log end %d", l.end())
		}
		return err
	})
	began := time.Now()
	if err := c.brokers[leader].proc.stop(testWait); err != nil {
		t.Fatalf("broker %d, holding an acks=all produce its stopped followers cannot complete, on SIGTERM: %v", leader, exitText(err))
	}
	took := time.Since(began)
	for _, id := range followers {
		if _, st := c.znode(zkpath.BrokerPath(id)); st == nil {
			t.Fatalf("broker %d exited %v after SIGTERM, after its stopped follower %d's session expired: not shown to answer its parked produce itself", leader, took, id)
		}
	}
	t.Logf("broker %d exited %v after SIGTERM", leader, took)
	for _, id := range followers {
		c.resume(id)
	}
	select {
	case err := <-acked:
		if err != nil {
			t.Fatalf("the produce, retried after the leader's shutdown: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("the produce was never answered")
	}
	c.restart(leader)
	c.waitISR(topic, 0, c.ids()...)
	final := readToEnds(ctx, t, c, topic, map[int32]int64{0: 2})
	if len(final) != 2 || final[0].value != "first" || final[1].value != "parked" {
		t.Fatalf("the partition holds %v, want the two records once each", final)
	}
	c.waitLogsEqual(topic, 0, c.ids(), wantEnd(2))
}
