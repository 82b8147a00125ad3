package zk

import (
	"bytes"
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/config"
	"github.com/sluice-io/sluice/coordinator/controller"
	"github.com/sluice-io/sluice/coordinator/zk/zktest"
	"github.com/sluice-io/sluice/engine"
)

// logBuffer collects a logger's text output.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// electCluster starts brokers of ids on a fresh chroot with the driver's
// options o, and waits for a controller.
func electCluster(t *testing.T, f *fakeBrokers, o LoopOptions, ids ...int32) (string, []*testBroker, *testBroker) {
	t.Helper()
	chroot := zktest.Chroot()
	var bs []*testBroker
	for _, id := range ids {
		bs = append(bs, startTestBrokerWith(t, chroot, id, f, o))
	}
	return chroot, bs, waitController(t, bs, 0)
}

// writeTopic writes a topic of explicit replicas with configs, as
// CreateTopics does, and returns its id.
func writeTopic(t *testing.T, c *Client, name string, configs map[string]string, replicas ...[]int32) engine.TopicID {
	t.Helper()
	a := TopicAssignment{ID: engine.NewTopicID(), Replicas: replicas}
	if err := c.WriteTopic(name, a, configs); err != nil {
		t.Fatal(err)
	}
	return a.ID
}

// state reads a partition's state znode and its version.
func state(t *testing.T, c *Client, tp engine.Partition) (PartitionState, int32) {
	t.Helper()
	data, st, err := c.Get(PartitionStatePath(tp.Topic, tp.Partition))
	if err != nil {
		t.Fatal(err)
	}
	s, err := DecodePartitionState(tp.Topic, tp.Partition, data)
	if err != nil {
		t.Fatal(err)
	}
	return s, st.Version
}

// setISR has tp's leader ask the controller for isr.
func setISR(t *testing.T, ctl *testBroker, id engine.TopicID, tp engine.Partition, isr ...int32) {
	t.Helper()
	s, version := state(t, ctl.client, tp)
	req := kmsg.NewPtrAlterPartitionRequest()
	req.Version = 3
	req.BrokerID, req.BrokerEpoch = s.Leader, brokerEpoch(t, ctl.client, s.Leader)
	rp := kmsg.AlterPartitionRequestTopicPartition{Partition: tp.Partition, LeaderEpoch: s.LeaderEpoch, PartitionEpoch: version}
	for _, r := range isr {
		rp.NewEpochISR = append(rp.NewEpochISR, kmsg.AlterPartitionRequestTopicPartitionNewEpochISR{BrokerID: r, BrokerEpoch: brokerEpoch(t, ctl.client, r)})
	}
	req.Topics = []kmsg.AlterPartitionRequestTopic{{TopicID: id, Partitions: []kmsg.AlterPartitionRequestTopicPartition{rp}}}
	ctx, cancel := context.WithTimeout(context.Background(), waitDeadline)
	defer cancel()
	resp, err := ctl.loop.AlterPartition(ctx, req)
	if err != nil || resp.ErrorCode != 0 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("AlterPartition %v to %v: %+v, %v", tp, isr, resp, err)
	}
}

// led waits until every broker of ids has UpdateMetadata from the
// controller of epoch with tp led by leader.
func led(t *testing.T, f *fakeBrokers, epoch int32, tp engine.Partition, leader int32, ids ...int32) {
	t.Helper()
	f.waitFor(t, "UpdateMetadata with the new leader", func(got []delivered) bool {
		for _, b := range ids {
			if um, _, _ := views(got, b, epoch); um[tp].leader != leader {
				return false
			}
		}
		return true
	})
}

// electedLog records what LoopOptions.Elected reports.
type electedLog struct {
	mu  sync.Mutex
	got []LeaderElection
}

func (l *electedLog) add(e LeaderElection) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.got = append(l.got, e)
}

// want checks that the elections reported are exactly want, in any order,
// with their times left out.
func (l *electedLog) want(t *testing.T, want ...LeaderElection) {
	t.Helper()
	l.mu.Lock()
	got := slices.Clone(l.got)
	l.mu.Unlock()
	for i := range got {
		got[i].Took = 0
	}
	byTopic := func(a, b LeaderElection) int { return strings.Compare(a.Topic, b.Topic) }
	slices.SortFunc(got, byTopic)
	slices.SortFunc(want, byTopic)
	if !slices.Equal(got, want) {
		t.Errorf("elections reported %+v, want %+v", got, want)
	}
}

func elect(t *testing.T, via *testBroker, typ controller.ElectionType, tps ...engine.Partition) []controller.ElectionResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitDeadline)
	defer cancel()
	res, err := via.loop.ElectLeaders(ctx, typ, tps)
	if err != nil {
		t.Fatal(err)
	}
	distinct := map[engine.Partition]bool{}
	for _, tp := range tps {
		distinct[tp] = true
	}
	if len(res) != len(distinct) {
		t.Fatalf("results %+v for %v", res, tps)
	}
	return res
}

// Three brokers on a real ZooKeeper: a preferred election through the
// driver moves a partition's leadership back to its first replica once it
// is in the ISR (not before; a broker not the controller answers
// NOT_CONTROLLER), and is not needed after. It alone is reported to
// LoopOptions.Elected (not the first leader of a new partition, nor an ISR
// change).
func TestControllerLoopPreferredElection(t *testing.T) {
	requireZK(t)
	f := newFakeBrokers()
	off := false
	var elected electedLog
	o := LoopOptions{Logger: quietLogger(), AutoLeaderRebalance: &off, Elected: elected.add}
	chroot, bs, ctl := electCluster(t, f, o, 1, 2)
	epoch := ctl.loop.Epoch()
	tp := engine.Partition{Topic: "p", Partition: 0}
	id := writeTopic(t, ctl.client, "p", nil, []int32{3, 1, 2}) // 3 not yet registered: 1 leads
	led(t, f, epoch, tp, 1, 1, 2)
	if r := elect(t, ctl, controller.PreferredElection, tp)[0]; r.ErrorCode != kerr.PreferredLeaderNotAvailable.Code {
		t.Fatalf("preferred replica not live: %+v", r)
	}
	other := bs[0]
	if other == ctl {
		other = bs[1]
	}
	if r := elect(t, other, controller.PreferredElection, tp)[0]; r.ErrorCode != kerr.NotController.Code {
		t.Fatalf("a broker not the controller: %+v", r)
	}
	startTestBrokerWith(t, chroot, 3, f, o)
	f.waitFor(t, "LeaderAndIsr of p-0 to broker 3", func(got []delivered) bool {
		_, lisr, _ := views(got, 3, epoch)
		_, ok := lisr[tp]
		return ok
	})
	if r := elect(t, ctl, controller.PreferredElection, tp)[0]; r.ErrorCode != kerr.PreferredLeaderNotAvailable.Code {
		t.Fatalf("preferred replica out of the ISR: %+v", r)
	}
	setISR(t, ctl, id, tp, 1, 2, 3)
	before, _ := state(t, ctl.client, tp)
	if r := elect(t, ctl, controller.PreferredElection, tp)[0]; r.ErrorCode != 0 || r.Leader != 3 {
		t.Fatalf("preferred election: %+v", r)
	}
	after, _ := state(t, ctl.client, tp)
	if after.Leader != 3 || after.LeaderEpoch != before.LeaderEpoch+1 || !slices.Equal(after.ISR, []int32{1, 2, 3}) {
		t.Fatalf("state %+v after the election, %+v before", after, before)
	}
	led(t, f, epoch, tp, 3, 1, 2, 3)
	if r := elect(t, ctl, controller.PreferredElection, tp, tp)[0]; r.ErrorCode != kerr.ElectionNotNeeded.Code {
		t.Fatalf("again: %+v", r)
	}
	elected.want(t, LeaderElection{Topic: "p", Partition: 0, Leader: 3})
}

// The automatic rebalance, at a short interval, moves leadership back to
// the first replica by itself once it is in the ISR.
func TestControllerLoopAutoRebalance(t *testing.T) {
	requireZK(t)
	f := newFakeBrokers()
	o := LoopOptions{Logger: quietLogger(), ImbalanceCheckInterval: 50 * time.Millisecond}
	chroot, _, ctl := electCluster(t, f, o, 1, 2)
	epoch := ctl.loop.Epoch()
	tp := engine.Partition{Topic: "r", Partition: 0}
	id := writeTopic(t, ctl.client, "r", nil, []int32{3, 1, 2})
	led(t, f, epoch, tp, 1, 1, 2)
	startTestBrokerWith(t, chroot, 3, f, o)
	f.waitFor(t, "LeaderAndIsr of r-0 to broker 3", func(got []delivered) bool {
		_, lisr, _ := views(got, 3, epoch)
		_, ok := lisr[tp]
		return ok
	})
	setISR(t, ctl, id, tp, 1, 2, 3)
	led(t, f, epoch, tp, 3, 1, 2, 3)
}

// With every ISR member of a partition gone: a topic with
// unclean.leader.election.enable leads it by an out-of-sync replica at
// once (the ISR that replica alone, RECOVERING, and a WARN); one without
// stays offline until the setting is changed (the driver follows
// /config/changes) or an ElectLeaders UNCLEAN, which ignores the setting.
// Each is reported to LoopOptions.Elected as unclean; going offline is not
// an election.
func TestControllerLoopUncleanElection(t *testing.T) {
	requireZK(t)
	f := newFakeBrokers()
	var logs logBuffer
	var elected electedLog
	o := LoopOptions{Logger: slog.New(slog.NewTextHandler(&logs, nil)), Elected: elected.add}
	_, bs, ctl := electCluster(t, f, o, 1, 2, 3)
	epoch := ctl.loop.Epoch()
	var rest []int32
	for _, b := range bs {
		if b != ctl {
			rest = append(rest, b.id)
		}
	}
	gone, lagging := rest[0], rest[1]
	ids := map[string]engine.TopicID{}
	for name, cfg := range map[string]map[string]string{"v": {config.UncleanLeaderElectionKey: "true"}, "u": nil, "w": nil} {
		ids[name] = writeTopic(t, ctl.client, name, cfg, []int32{gone, lagging})
		tp := engine.Partition{Topic: name, Partition: 0}
		led(t, f, epoch, tp, gone, ctl.id)
		setISR(t, ctl, ids[name], tp, gone) // lagging falls behind
	}
	watcher := WatchConfigChanges(context.Background(), ctl.client, ctl.loop.ConfigChanged)
	defer watcher.Close()
	for _, b := range bs {
		if b.id == gone {
			f.setDown(gone)
			b.loop.Close()
			b.client.Close()
		}
	}
	v := engine.Partition{Topic: "v", Partition: 0}
	led(t, f, epoch, v, lagging, ctl.id, lagging)
	if s, _ := state(t, ctl.client, v); s.Leader != lagging || !slices.Equal(s.ISR, []int32{lagging}) || s.LeaderRecoveryState != Recovering {
		t.Fatalf("v-0 after its ISR died: %+v", s)
	}
	if out := logs.String(); !strings.Contains(out, "level=WARN msg=\"unclean leader election") || !strings.Contains(out, "topic=v") {
		t.Errorf("no WARN of the unclean election in:\n%s", out)
	}

	u, w := engine.Partition{Topic: "u", Partition: 0}, engine.Partition{Topic: "w", Partition: 0}
	f.waitFor(t, "u-0 and w-0 offline", func(got []delivered) bool {
		um, _, _ := views(got, ctl.id, epoch)
		return um[u].leader == NoLeader && um[w].leader == NoLeader
	})
	if s, _ := state(t, ctl.client, u); s.Leader != NoLeader || !slices.Equal(s.ISR, []int32{gone}) {
		t.Fatalf("u-0 without unclean election: %+v", s)
	}
	if err := ctl.client.SetConfig(ConfigTopics, "u", map[string]string{config.UncleanLeaderElectionKey: "true"}); err != nil {
		t.Fatal(err)
	}
	led(t, f, epoch, u, lagging, ctl.id, lagging)

	r := elect(t, ctl, controller.UncleanElection, w, v, engine.Partition{Topic: "w", Partition: 1})
	if r[0].ErrorCode != 0 || r[0].Leader != lagging || r[1].ErrorCode != kerr.ElectionNotNeeded.Code || r[2].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("ElectLeaders UNCLEAN: %+v", r)
	}
	if s, _ := state(t, ctl.client, w); s.Leader != lagging || !slices.Equal(s.ISR, []int32{lagging}) || s.LeaderRecoveryState != Recovering {
		t.Fatalf("w-0 after ElectLeaders UNCLEAN: %+v", s)
	}
	var want []LeaderElection
	for _, topic := range []string{"u", "v", "w"} {
		want = append(want, LeaderElection{Topic: topic, Leader: lagging, Unclean: true})
	}
	elected.want(t, want...)
}
