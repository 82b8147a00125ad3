package main

// The fault-injection suite: the modes of Kafka's replication system test
// (clean and hard shutdown, clean and hard bounce, each aimed at a
// partition's leader and at the controller), the leader SIGKILLed five
// times in a 200,000-record run, a partition's whole ISR killed, and a
// leader cut off from ZooKeeper, each judged by the checker
// (checker_test.go) on 3 broker processes and one ZooKeeper. The session
// timeout is 2 s (ZooKeeper's tick is 200 ms in tests), so a SIGKILLed
// broker leaves within about 2 s.
//
// CI runs each mode once per target. The long tier runs each 5 times and
// then random faults for as long as asked (BENCHMARKS.md, "Failover: fault
// injection", has its result; -faults.seed replays a random run's
// choices, not its timing):
//
//	go test -count=1 -timeout 60m -run 'TestFaults' -v ./cmd/sluice -faults.rounds=5 -faults.chaos=10m

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	zkpath "github.com/sluice-io/sluice/coordinator/zk"
)

var (
	faultRounds = flag.Int("faults.rounds", 1, "times each fault mode is applied to each target (the long tier: 5)")
	faultChaos  = flag.Duration("faults.chaos", 0, "how long TestFaultsChaos injects random faults (the long tier); 0 skips it")
	faultSeed   = flag.Uint64("faults.seed", 0, "TestFaultsChaos's seed; 0 takes one from the clock")
)

// faultProps are the faults clusters' server.properties.
const faultProps = "zookeeper.session.timeout.ms=2000\n"

// faultRun bounds a faults test's produces and reads.
const faultRun = 10 * time.Minute

// The four modes, each its own test, each aimed at a partition's leader
// and then at the controller in one cluster: after every fault the
// cluster serves acks=all produces again, and at the end the checker
// finds no anomaly.
func TestFaultsCleanShutdown(t *testing.T) { testFaultMode(t, true, false) }
func TestFaultsHardShutdown(t *testing.T)  { testFaultMode(t, false, false) }
func TestFaultsCleanBounce(t *testing.T)   { testFaultMode(t, true, true) }
func TestFaultsHardBounce(t *testing.T)    { testFaultMode(t, false, true) }

// testFaultMode stops brokers cleanly (SIGTERM, waiting for the exit) or
// hard (SIGKILL), and bounces them (starts them again at once) or leaves
// them down. A shutdown broker stays down while the cluster serves and
// until the next target must go (a cluster of three with
// min.insync.replicas 2 cannot lose two), and the last one until the
// history is judged; it is then started so that its log can be compared
// too.
func testFaultMode(t *testing.T, clean, bounce bool) {
	c, ctx := startFaultCluster(t, faultProps)
	w := startWorkload(ctx, c, "modes", 3)
	p := w.produce("p", produceOpts{rate: 1000})
	p.waitAcked(t, 300)
	down := int32(-1)
	for round := range *faultRounds {
		for _, target := range []string{"leader", "controller"} {
			if down >= 0 {
				c.restart(down)
				w.waitInSync(t)
				down = -1
			}
			victim := w.target(t, target)
			began := time.Now()
			c.stopBroker(t, victim, clean)
			gone := time.Since(began)
			w.waitServed(t)
			served := time.Since(began)
			p.progress(t, 200)
			t.Logf("round %d: the %s, broker %d, %s: deregistered after %v, every partition led again after %v, 200 more records acknowledged after %v",
				round, target, victim, map[bool]string{true: "SIGTERM", false: "SIGKILL"}[clean], gone.Round(time.Millisecond), served.Round(time.Millisecond), time.Since(began).Round(time.Millisecond))
			if bounce {
				c.restart(victim)
				w.waitInSync(t)
				p.progress(t, 200)
			} else {
				down = victim
			}
		}
	}
	w.check(t)
	if down >= 0 {
		c.restart(down)
		w.waitInSync(t)
		w.replicasEqual(t)
	}
}

// The leader of a partition SIGKILLed five times while one producer
// writes as fast as its window of 2,000 records allows, until 200,000
// are acknowledged (the kills come at each sixth of them, or as soon as
// the last one is over): after each kill every partition takes records
// again before the broker is restarted, nothing acknowledged is lost or
// duplicated, and the producer sees only retriable errors.
func TestFaultsLeaderKilledFiveTimes(t *testing.T) {
	c, ctx := startFaultCluster(t, faultProps)
	const n, kills = 200_000, 5
	w := startWorkload(ctx, c, "kills", 3)
	p := w.produce("p", produceOpts{window: 2000})
	for k := 1; k <= kills; k++ {
		p.waitAcked(t, int64(n*k/(kills+1)))
		victim := w.leaderOf(t, 0)
		acked := p.acked.Load()
		c.stopBroker(t, victim, false)
		w.waitServed(t)
		p.progress(t, 100)
		served := p.acked.Load()
		c.restart(victim)
		w.waitInSync(t)
		t.Logf("kill %d: broker %d, leading partition 0, at %d records acknowledged; %d when every partition had taken 100 more, %d when it was back in sync", k, victim, acked, served, p.acked.Load())
	}
	p.waitAcked(t, n)
	rep := w.check(t)
	if rep.acked < n {
		t.Errorf("%d records acknowledged, want at least %d", rep.acked, n)
	}
}

// All three replicas of a partition in its ISR killed: with one replica
// out of the ISR (SIGSTOPped past replica.lag.time.max.ms, so its leader
// shrank the ISR to the other two) when the other two die, the partition
// goes offline (leader -1, its last ISR kept), a produce fails, and the
// live out-of-sync replica is not elected (unclean election is off). The
// controller is always one of the two killed (the stopped replica is
// chosen not to be, or no one would write the shrink), so the replica
// that lives on becomes controller and finds the partition offline. One
// of the last ISR restarted: it leads again, with every acknowledged
// record.
func TestFaultsWholeISRKilled(t *testing.T) {
	// Lag time 1 s; the session timeout is ZooKeeper's maximum of 4 s
	// (20 ticks), so that the stopped replica keeps its session.
	c, ctx := startFaultCluster(t, "replica.lag.time.max.ms=1000\nzookeeper.session.timeout.ms=4000\n")
	const topic = "offline"
	w := startWorkload(ctx, c, topic, 1)
	p := w.produce("p", produceOpts{rate: 500})
	p.waitAcked(t, 200)
	leader, _ := c.waitISR(topic, 0, c.ids()...)
	ctrl := controllerInZK(t, c)
	var lagging, other int32 = -1, -1
	for _, id := range c.others(leader) {
		if lagging < 0 && id != ctrl {
			lagging = id
		} else {
			other = id
		}
	}
	c.pause(lagging)
	poll(t, fmt.Sprintf("broker %d out of the ISR", lagging), func() error {
		if s := c.partitionState(topic, 0); slices.Contains(s.ISR, lagging) {
			return fmt.Errorf("ISR %v", s.ISR)
		}
		return nil
	})
	p.progress(t, 100)
	c.kill(other)
	c.kill(leader)
	c.resume(lagging)
	t.Logf("broker %d out of the ISR; brokers %d (leader) and %d killed; the controller was %d", lagging, leader, other, ctrl)

	var last []int32
	offline := func() error {
		s := c.partitionState(topic, 0)
		if s.Leader != -1 || len(s.ISR) == 0 || slices.Contains(s.ISR, lagging) {
			return fmt.Errorf("leader %d, ISR %v", s.Leader, s.ISR)
		}
		last = s.ISR
		m, err := metadataOf(ctx, c.brokers[lagging].addr)
		if err != nil {
			return err
		}
		if pm := partitionOf(m, topic, 0); pm == nil || pm.Leader != -1 {
			return fmt.Errorf("broker %d's metadata: %+v", lagging, pm)
		}
		return nil
	}
	poll(t, fmt.Sprintf("%s-0 offline, its last ISR without broker %d", topic, lagging), offline)
	probe := w.produce("probe", produceOpts{total: 1, opts: []kgo.Opt{kgo.RecordDeliveryTimeout(3 * time.Second), kgo.RecordRetries(2)}})
	probe.finish(t)
	if probe.acked.Load() != 0 {
		t.Fatalf("a produce to the offline partition was acknowledged")
	}
	if err := offline(); err != nil { // after the probe's seconds of retries: no unclean election
		t.Fatalf("%s-0 after a produce failed on it: %v; broker %d, out of sync, must not lead", topic, err, lagging)
	}
	back := last[0]
	c.restart(back)
	poll(t, fmt.Sprintf("broker %d of the last ISR %v leads again", back, last), func() error {
		if s := c.partitionState(topic, 0); s.Leader != back {
			return fmt.Errorf("leader %d, ISR %v", s.Leader, s.ISR)
		}
		return nil
	})
	p.progress(t, 100) // with broker back in the ISR, min.insync.replicas 2
	for _, id := range []int32{leader, other} {
		if id != back {
			c.restart(id)
		}
	}
	w.waitInSync(t)
	w.check(t)
}

// A leader cut off from ZooKeeper (SIGSTOPped past its session timeout,
// as a long GC pause does) while producers write: the controller moves
// its leadership; once continued, the old leader learns its session
// expired, re-registers and follows. Two producers know only the old
// leader's address: one from before the pause, whose requests wait at it
// while it is stopped, and one started while it is stopped, which gets
// its first metadata from it when it continues. Whatever they and the
// main producer are acknowledged, by the old leader or the new, is in the
// final log.
func TestFaultsLeaderCutOffFromZooKeeper(t *testing.T) {
	c, ctx := startFaultCluster(t, faultProps)
	w := startWorkload(ctx, c, "cutoff", 3)
	p := w.produce("p", produceOpts{rate: 1000})
	old := w.target(t, "leader")
	led := partitionsLedBy(w.metadata(t), w.topic, old)
	onlyOld := []kgo.Opt{kgo.SeedBrokers(c.brokers[old].addr)}
	early := w.produce("early", produceOpts{partitions: led, rate: 300, opts: onlyOld})
	p.waitAcked(t, 300)
	early.waitAcked(t, 100)
	c.pause(old)
	waitZnode(t, c, zkpath.BrokerPath(old), "gone: the session expired", func(st *zk.Stat) bool { return st == nil })
	poll(t, fmt.Sprintf("the partitions %v of broker %d led by another", led, old), func() error {
		for _, part := range led {
			if s := c.partitionState(w.topic, part); s.Leader == old || s.Leader < 0 {
				return fmt.Errorf("%s-%d: leader %d", w.topic, part, s.Leader)
			}
		}
		return nil
	})
	late := w.produce("late", produceOpts{partitions: led, total: 200, window: 50, opts: onlyOld})
	before := early.acked.Load()
	c.resume(old)
	waitZnode(t, c, zkpath.BrokerPath(old), "back: registered again", func(st *zk.Stat) bool { return st != nil })
	w.waitInSync(t)
	p.progress(t, 200)
	early.progress(t, 100)
	late.finish(t)
	t.Logf("producers seeded with the cut-off broker %d alone: %d acknowledged before it continued and %d after; %d of %d started during it",
		old, before, early.acked.Load()-before, late.acked.Load(), late.sent.Load())
	w.check(t)
}

// Random faults for -faults.chaos (the long tier; skipped without it): in
// segments of ten faults, each segment a new workload judged by the
// checker, brokers are SIGKILLed and restarted, SIGTERMed and restarted,
// and SIGSTOPped past the session timeout or briefly, each aimed at a
// partition's leader, the controller or any broker; after each the cluster
// must serve and be in sync again.
func TestFaultsChaos(t *testing.T) {
	if *faultChaos <= 0 {
		t.Skip("the long tier: -faults.chaos=<duration>")
	}
	seed := *faultSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (-faults.seed=%d replays the choices)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	c, _ := startFaultCluster(t, faultProps)
	ctx, cancel := context.WithTimeout(context.Background(), *faultChaos+faultRun)
	defer cancel()
	end := time.Now().Add(*faultChaos)
	counts := map[string]int{}
	leaderKills, acked, lost := 0, 0, 0
	for seg := 0; time.Now().Before(end); seg++ {
		w := startWorkload(ctx, c, fmt.Sprintf("chaos-%d", seg), 3)
		p := w.produce("p", produceOpts{rate: 1000})
		p.waitAcked(t, 200)
		for range 10 {
			if !time.Now().Before(end) {
				break
			}
			var victim int32
			switch x := rng.IntN(10); {
			case x < 6:
				victim = w.leaderOf(t, rng.Int32N(w.partitions))
			case x < 9:
				victim = controllerInZK(t, c)
			default:
				victim = c.ids()[rng.IntN(len(c.ids()))]
			}
			leads := len(partitionsLedBy(w.metadata(t), w.topic, victim)) > 0
			var fault string
			switch x := rng.IntN(10); {
			case x < 5:
				fault = "hard bounce"
				if leads {
					leaderKills++
				}
				c.stopBroker(t, victim, false)
				w.waitServed(t)
				c.restart(victim)
			case x < 7:
				fault = "clean bounce"
				c.stopBroker(t, victim, true)
				w.waitServed(t)
				c.restart(victim)
			case x < 9:
				fault = "pause past the session"
				c.pause(victim)
				waitZnode(t, c, zkpath.BrokerPath(victim), "gone: the session expired", func(st *zk.Stat) bool { return st == nil })
				w.waitServed(t)
				c.resume(victim)
			default:
				fault = "short pause"
				c.pause(victim)
				d := time.Duration(rng.IntN(1000)) * time.Millisecond
				t.Logf("pausing broker %d for %v", victim, d)
				time.Sleep(d) // the fault itself: how long the broker is stopped
				c.resume(victim)
			}
			counts[fault]++
			t.Logf("segment %d: %s of broker %d (leading a partition: %v)", seg, fault, victim, leads)
			w.waitInSync(t)
			p.progress(t, 200)
		}
		rep := w.check(t)
		acked += rep.acked
		lost += len(rep.lost)
		if t.Failed() {
			break
		}
	}
	t.Logf("chaos for %v: faults %v; %d leader kills; %d records acknowledged, %d lost", *faultChaos, counts, leaderKills, acked, lost)
}

// startFaultCluster starts 3 brokers with the extra server.properties and
// returns them with a context that bounds the test's produces and reads
// (faultRun).
func startFaultCluster(t *testing.T, extra string) (*testCluster, context.Context) {
	t.Helper()
	c := startClusterWith(t, 3, extra)
	ctx, cancel := context.WithTimeout(context.Background(), faultRun)
	t.Cleanup(cancel)
	return c, ctx
}

// stopBroker stops broker id cleanly (SIGTERM, which must end in a
// clean exit) or hard (SIGKILL), then waits until its registration is
// gone from ZooKeeper (at once after a clean stop, when its session
// expires after a kill), as Kafka's system test waits before it counts a
// broker gone.
func (c *testCluster) stopBroker(t *testing.T, id int32, clean bool) {
	t.Helper()
	if clean {
		if err := c.brokers[id].proc.stop(testWait); err != nil {
			t.Fatalf("broker %d on SIGTERM: %v", id, exitText(err))
		}
	} else {
		c.kill(id)
	}
	waitZnode(t, c, zkpath.BrokerPath(id), "gone", func(st *zk.Stat) bool { return st == nil })
}

// metadata is the workload topic's metadata as a live broker answers it.
func (w *workload) metadata(t *testing.T) *kmsg.MetadataResponse {
	t.Helper()
	var m *kmsg.MetadataResponse
	for _, got := range w.c.waitAgree(fmt.Sprintf("every partition of %s led", w.topic), func(m *kmsg.MetadataResponse) error {
		return w.c.wantTopic(m, w.topic, int(w.partitions), 3)
	}) {
		m = got
	}
	return m
}

// leaderOf is the broker leading partition of the workload's topic.
func (w *workload) leaderOf(t *testing.T, partition int32) int32 {
	t.Helper()
	return partitionOf(w.metadata(t), w.topic, partition).Leader
}

// target picks the broker a fault is aimed at: the controller, or the
// leader of the first partition the controller does not lead (the
// controller leads them all only if leadership has gathered there).
func (w *workload) target(t *testing.T, kind string) int32 {
	t.Helper()
	ctrl := controllerInZK(t, w.c)
	if kind == "controller" {
		return ctrl
	}
	m := w.metadata(t)
	for p := range w.partitions {
		if l := partitionOf(m, w.topic, p).Leader; l != ctrl {
			return l
		}
	}
	return partitionOf(m, w.topic, 0).Leader
}

// waitServed waits until every live broker lists the live brokers alone,
// names a live controller, and has every partition of the workload's
// topic led by a live broker.
func (w *workload) waitServed(t *testing.T) {
	t.Helper()
	w.c.waitAgree(fmt.Sprintf("the brokers %v serve every partition of %s", w.c.live(), w.topic), func(m *kmsg.MetadataResponse) error {
		return errors.Join(w.c.wantBrokers(m, w.c.live()...), w.c.wantLiveController(m), w.c.wantTopic(m, w.topic, int(w.partitions), 3))
	})
}

// waitInSync waits until every broker is live and in the ISR of every
// partition of the workload's topic.
func (w *workload) waitInSync(t *testing.T) {
	t.Helper()
	for p := range w.partitions {
		w.c.waitISR(w.topic, p, w.c.ids()...)
	}
}
