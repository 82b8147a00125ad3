package broker

// Consumer groups driven by clients other than franz-go: kafka-go's
// Reader and sarama's ConsumerGroup, through a groupTap that records what
// each member sent and received. Through several rebalances, every
// assignment a member receives is, byte for byte, the one its leader sent,
// and DescribeGroups (raw, and decoded by each client's own admin API)
// reports each member's metadata and assignment as the member and leader
// sent them. Both once failed: the coordinator kept views into request
// frames that the next request on the connection overwrote.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/IBM/sarama"
	kafkago "github.com/segmentio/kafka-go"
	"github.com/sluice-io/sluice/config"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// startTappedBroker starts a broker that advertises a groupTap in front of
// it, with a topic of n partitions holding a few records each.
func startTappedBroker(t *testing.T, topic string, n int32) (*testBroker, *groupTap) {
	t.Helper()
	tap := startGroupTap(t)
	tb := startBroker(t, t.TempDir(), func(c *config.Config) {
		groupTimeouts(c)
		c.Advertise = tap.addr()
	})
	tap.target.Store(&tb.addr)
	if _, err := tb.admin(t).CreateTopic(ctxTimeout(t, 10*time.Second), n, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	produceN(t, tb, topic, 60)
	return tb, tap
}

// describeGroup asks the broker directly (not through the tap).
func describeGroup(t testing.TB, tb *testBroker, group string) (kmsg.DescribeGroupsResponseGroup, error) {
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups = []string{group}
	resp, err := req.RequestWith(ctxTimeout(t, 5*time.Second), tb.client(t))
	if err != nil {
		return kmsg.DescribeGroupsResponseGroup{}, err
	}
	if len(resp.Groups) != 1 {
		return kmsg.DescribeGroupsResponseGroup{}, fmt.Errorf("%d groups described", len(resp.Groups))
	}
	return resp.Groups[0], nil
}

// waitStable waits until the group is Stable with members members, every
// assignment received so far matches its leader's, DescribeGroups matches
// what the members sent, and the client's own decoding of the group (check)
// succeeds. The conditions can lag each other briefly (the tap records an
// answer as it forwards it), so they are polled together to a deadline and
// the last failure is reported.
func waitStable(t *testing.T, tb *testBroker, tap *groupTap, group string, members int, check func() error) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var last error
	for time.Now().Before(deadline) {
		last = func() error {
			d, err := describeGroup(t, tb, group)
			if err != nil {
				return err
			}
			if d.State != "Stable" || len(d.Members) != members {
				return fmt.Errorf("group is %s with %d members, want Stable with %d", d.State, len(d.Members), members)
			}
			if _, err := tap.checkReceived(); err != nil {
				return err
			}
			if err := tap.checkDescribed(d); err != nil {
				return err
			}
			return check()
		}()
		if last == nil {
			return
		}
		select {
		case <-time.After(20 * time.Millisecond):
		case <-t.Context().Done():
			return
		}
	}
	t.Fatalf("group %s never settled with %d members: %v", group, members, last)
}

// partitionsCovered reports an error unless the assignments give each of
// partitions 0..n-1 of topic to exactly one member.
func partitionsCovered(topic string, n int, assigned [][]int) error {
	seen := make([]int, n)
	for _, ps := range assigned {
		for _, p := range ps {
			if p < 0 || p >= n {
				return fmt.Errorf("partition %d of %s assigned; it has %d", p, topic, n)
			}
			seen[p]++
		}
	}
	for p, k := range seen {
		if k != 1 {
			return fmt.Errorf("partition %d of %s assigned to %d members: %v", p, topic, k, assigned)
		}
	}
	return nil
}

func TestKafkaGoGroupRebalances(t *testing.T) {
	const topic, group, parts = "kg-orders", "kg-readers", 6
	tb, tap := startTappedBroker(t, topic, parts)

	newReader := func() *kafkago.Reader {
		return kafkago.NewReader(kafkago.ReaderConfig{
			Brokers:           []string{tap.addr()},
			GroupID:           group,
			Topic:             topic,
			HeartbeatInterval: 100 * time.Millisecond,
			SessionTimeout:    10 * time.Second,
			RebalanceTimeout:  10 * time.Second,
			JoinGroupBackoff:  50 * time.Millisecond,
			StartOffset:       kafkago.FirstOffset,
			MaxWait:           100 * time.Millisecond,
		})
	}
	admin := &kafkago.Client{Addr: kafkago.TCP(tap.addr()), Timeout: 5 * time.Second}
	// kafka-go's own DescribeGroups decodes every member's metadata and
	// assignment; it failed with "failed to decode member metadata".
	check := func() error {
		resp, err := admin.DescribeGroups(ctxTimeout(t, 5*time.Second), &kafkago.DescribeGroupsRequest{GroupIDs: []string{group}})
		if err != nil {
			return err
		}
		if len(resp.Groups) != 1 {
			return fmt.Errorf("kafka-go described %d groups", len(resp.Groups))
		}
		g := resp.Groups[0]
		if g.Error != nil {
			return fmt.Errorf("kafka-go DescribeGroups: %w", g.Error)
		}
		var assigned [][]int
		for _, m := range g.Members {
			if !slices.Equal(m.MemberMetadata.Topics, []string{topic}) {
				return fmt.Errorf("member %s: metadata topics %v", m.MemberID, m.MemberMetadata.Topics)
			}
			for _, a := range m.MemberAssignments.Topics {
				if a.Topic != topic {
					return fmt.Errorf("member %s assigned topic %q", m.MemberID, a.Topic)
				}
				assigned = append(assigned, a.Partitions)
			}
		}
		return partitionsCovered(topic, parts, assigned)
	}

	// Members join one by one, then leave one by one: five rebalances.
	var readers []*kafkago.Reader
	defer func() {
		for _, r := range readers {
			r.Close()
		}
	}()
	for n := 1; n <= 3; n++ {
		readers = append(readers, newReader())
		waitStable(t, tb, tap, group, n, check)
	}
	for n := 2; n >= 1; n-- {
		if err := readers[0].Close(); err != nil {
			t.Fatalf("closing a reader: %v", err)
		}
		readers = readers[1:]
		waitStable(t, tb, tap, group, n, check)
	}
	// The remaining member owns every partition and reads every record.
	ctx := ctxTimeout(t, 20*time.Second)
	for i := range 60 {
		if _, err := readers[0].FetchMessage(ctx); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}
	if n, err := tap.checkReceived(); err != nil || n < 5 {
		t.Fatalf("%d assignments checked: %v", n, err)
	}
}

// saramaMember consumes nothing: it holds its claims until its context
// ends, so that the test drives the rebalances.
type saramaMember struct{}

func (saramaMember) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (saramaMember) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (saramaMember) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for {
		select {
		case _, ok := <-c.Messages():
			if !ok {
				return nil
			}
		case <-s.Context().Done():
			return nil
		}
	}
}

func TestSaramaGroupRebalances(t *testing.T) {
	const topic, group, parts = "sr-orders", "sr-readers", 6
	tb, tap := startTappedBroker(t, topic, parts)

	cfg := sarama.NewConfig()
	cfg.Version = sarama.V2_8_0_0
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Group.Heartbeat.Interval = 100 * time.Millisecond
	cfg.Consumer.Group.Session.Timeout = 10 * time.Second
	cfg.Consumer.Group.Rebalance.Timeout = 10 * time.Second
	cfg.Consumer.Group.Rebalance.Retry.Backoff = 50 * time.Millisecond
	cfg.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{sarama.NewBalanceStrategyRange()}
	cfg.Metadata.RefreshFrequency = 0

	admin, err := sarama.NewClusterAdmin([]string{tap.addr()}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	// sarama's admin decodes every member's metadata and assignment; the
	// assignment once failed to decode after a member left.
	check := func() error {
		ds, err := admin.DescribeConsumerGroups([]string{group})
		if err != nil {
			return err
		}
		if len(ds) != 1 {
			return fmt.Errorf("sarama described %d groups", len(ds))
		}
		var assigned [][]int
		for id, m := range ds[0].Members {
			md, err := m.GetMemberMetadata()
			if err != nil {
				return fmt.Errorf("member %s: metadata: %w", id, err)
			}
			if !slices.Equal(md.Topics, []string{topic}) {
				return fmt.Errorf("member %s: metadata topics %v", id, md.Topics)
			}
			a, err := m.GetMemberAssignment()
			if err != nil {
				return fmt.Errorf("member %s: assignment: %w", id, err)
			}
			for tp, ps := range a.Topics {
				if tp != topic {
					return fmt.Errorf("member %s assigned topic %q", id, tp)
				}
				ints := make([]int, len(ps))
				for i, p := range ps {
					ints[i] = int(p)
				}
				assigned = append(assigned, ints)
			}
		}
		return partitionsCovered(topic, parts, assigned)
	}

	type member struct {
		cg     sarama.ConsumerGroup
		cancel context.CancelFunc
		done   chan error
	}
	join := func() *member {
		cg, err := sarama.NewConsumerGroup([]string{tap.addr()}, group, cfg)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		m := &member{cg: cg, cancel: cancel, done: make(chan error, 1)}
		go func() {
			var err error
			for ctx.Err() == nil && err == nil {
				err = cg.Consume(ctx, []string{topic}, saramaMember{})
			}
			m.done <- err
		}()
		return m
	}
	leave := func(m *member) {
		m.cancel()
		if err := <-m.done; err != nil && !errors.Is(err, sarama.ErrClosedConsumerGroup) {
			t.Errorf("sarama member: %v", err)
		}
		if err := m.cg.Close(); err != nil {
			t.Errorf("closing a sarama member: %v", err)
		}
	}

	var members []*member
	defer func() {
		for _, m := range members {
			leave(m)
		}
	}()
	for n := 1; n <= 3; n++ {
		members = append(members, join())
		waitStable(t, tb, tap, group, n, check)
	}
	for n := 2; n >= 1; n-- {
		leave(members[0])
		members = members[1:]
		waitStable(t, tb, tap, group, n, check)
	}
	if n, err := tap.checkReceived(); err != nil || n < 5 {
		t.Fatalf("%d assignments checked: %v", n, err)
	}
}
