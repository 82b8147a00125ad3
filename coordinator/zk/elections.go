package zk

// The controller driver's part in elections beyond brokers' comings and
// goings (the decision core's elect.go and rebalance.go decide them):
//
//   - ElectLeaders hands an administrator's election to the loop, as
//     AlterPartition does a leader's request, and returns the core's
//     results; a term that ends answers what it holds NOT_CONTROLLER.
//   - Each topic's effective unclean.leader.election.enable is read with
//     its assignment (/config/topics/<topic>, made effective by
//     LoopOptions.Unclean) when the controller loads the cluster and when a
//     topic appears or changes, and again after a config change
//     notification (ConfigChanged, which the broker's config watcher calls
//     for every notice, as Kafka's TopicConfigHandler tells its controller):
//     a topic's notice re-reads it, a broker config's re-reads every topic
//     (its default may have changed).
//   - While auto.leader.rebalance.enable, the term steps an ImbalanceCheck
//     5 s after its election (or the interval, if shorter) and then every
//     leader.imbalance.check.interval.seconds, as Kafka schedules its
//     auto-leader-rebalance-task.
//   - An unclean election's write is logged at WARN before it is issued:
//     acknowledged records may be lost.
//   - Each state write that elects a leader and succeeds is reported to
//     LoopOptions.Elected (the broker counts Kafka's ControllerStats).

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-io/sluice/config"
	"github.com/sluice-io/sluice/coordinator/controller"
	"github.com/sluice-io/sluice/engine"
)

// Defaults of the rebalance's settings (Kafka's).
const (
	DefaultImbalanceCheckInterval = 300 * time.Second
	DefaultImbalancePercentage    = 10
	// firstImbalanceCheck is the delay of a term's first check (Kafka's
	// onControllerFailover schedules it 5 s after the election).
	firstImbalanceCheck = 5 * time.Second
)

// defaultUnclean is LoopOptions.Unclean's default: a topic's override,
// else Kafka's default, false.
func defaultUnclean(topicConfigs map[string]string) bool {
	return strings.EqualFold(strings.TrimSpace(topicConfigs[config.UncleanLeaderElectionKey]), "true")
}

func (o LoopOptions) rebalance() (on bool, interval time.Duration, pct int) {
	on, interval, pct = true, DefaultImbalanceCheckInterval, DefaultImbalancePercentage
	if o.AutoLeaderRebalance != nil {
		on = *o.AutoLeaderRebalance
	}
	if o.ImbalanceCheckInterval > 0 {
		interval = o.ImbalanceCheckInterval
	}
	if o.ImbalancePercentage != nil {
		pct = *o.ImbalancePercentage
	}
	return on, interval, pct
}

// electCall is an ElectLeaders handed to the loop, and where its results
// go (capacity 1: the loop never waits on it).
type electCall struct {
	ev    controller.ElectLeaders
	reply chan []controller.ElectionResult
}

// ElectLeaders hands an ElectLeaders request to the controller and returns
// a result per partition named (each once), or ctx's error when ctx ends
// first. A broker that is not the controller, or stops being it meanwhile,
// answers every partition NOT_CONTROLLER, as Kafka's ZooKeeper-mode broker
// does (it does not forward the request).
func (l *ControllerLoop) ElectLeaders(ctx context.Context, typ controller.ElectionType, partitions []engine.Partition) ([]controller.ElectionResult, error) {
	ev := controller.ElectLeaders{Type: typ, Partitions: partitions}
	call := electCall{ev: ev, reply: make(chan []controller.ElectionResult, 1)}
	return ask(l, ctx, l.elects, call, call.reply, func() []controller.ElectionResult { return notControllerResults(ev) })
}

func notControllerResults(ev controller.ElectLeaders) []controller.ElectionResult {
	return controller.RefuseElection(ev.Partitions, kerr.NotController.Code)
}

// configNotices are config change notifications for the loop: the topics
// named, or all of them after a broker config change.
type configNotices struct {
	wake chan struct{} // capacity 1
	mu   struct {
		sync.Mutex
		topics map[string]bool
		all    bool
	}
}

func newConfigNotices() *configNotices {
	n := &configNotices{wake: make(chan struct{}, 1)}
	n.mu.topics = map[string]bool{}
	return n
}

// take returns and clears what is pending.
func (n *configNotices) take() (topics []string, all bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for name := range n.mu.topics {
		topics = append(topics, name)
	}
	all = n.mu.all
	clear(n.mu.topics)
	n.mu.all = false
	return topics, all
}

func (n *configNotices) signal() {
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

// ConfigChanged tells the driver of a config change notification; it
// never blocks. Only a controller acts on it (it re-reads the topics'
// unclean election setting); any goroutine may call it.
func (l *ControllerLoop) ConfigChanged(ch ConfigChange) {
	n := l.notices
	n.mu.Lock()
	switch ch.EntityType {
	case ConfigTopics:
		n.mu.topics[ch.EntityName] = true
	case ConfigBrokers:
		n.mu.all = true
	default:
		n.mu.Unlock()
		return
	}
	n.mu.Unlock()
	n.signal()
}

// elect Steps an ElectLeaders into the core.
func (t *term) elect(e electCall) {
	e.ev.ID = t.el.add(e)
	t.l.log.Info("replica leader election requested", "type", e.ev.Type, "partitions", len(e.ev.Partitions))
	t.core.Step(e.ev)
}

// answerElections sends the core's election results to their callers.
func (t *term) answerElections(as []controller.ElectionAnswer) {
	for _, a := range as {
		if call, ok := t.el.take(a.ID); ok {
			call.reply <- a.Results
		}
	}
}

// endElections answers the requests the term still holds NOT_CONTROLLER.
func (t *term) endElections() {
	t.el.drain(func(call electCall) { call.reply <- notControllerResults(call.ev) })
}

// withUnclean reads the configs of the topics of as and sets each one's
// effective unclean election setting.
func (l *ControllerLoop) withUnclean(as []controller.TopicAssignment) error {
	names := make([]string, len(as))
	for i, a := range as {
		names[i] = a.Name
	}
	on, err := l.readUnclean(names)
	if err != nil {
		return err
	}
	for i := range as {
		as[i].UncleanLeaderElection = on[i]
	}
	return nil
}

// readUnclean reads the named topics' effective unclean election setting,
// in parallel.
func (l *ControllerLoop) readUnclean(names []string) ([]bool, error) {
	unclean := l.opts.Unclean
	if unclean == nil {
		unclean = defaultUnclean
	}
	out := make([]bool, len(names))
	err := parallel(len(names), func(i int) error {
		cfg, err := l.client.Config(ConfigTopics, names[i])
		out[i] = err == nil && unclean(cfg)
		return err
	})
	return out, err
}

// configsChanged re-reads the topics the pending notices name (every
// topic the core knows after a broker config change) and Steps their
// settings. A failed read is retried after the backoff.
func (t *term) configsChanged() {
	topics, all := t.l.notices.take()
	if all {
		topics = t.core.Topics()
	}
	if len(topics) == 0 {
		return
	}
	on, err := t.l.readUnclean(topics)
	if err != nil {
		t.l.log.Warn("controller failed to read topic configs, will retry", "err", err)
		n := t.l.notices
		n.mu.Lock()
		for _, name := range topics {
			n.mu.topics[name] = true
		}
		n.mu.all = n.mu.all || all
		n.mu.Unlock()
		t.wg.Add(1)
		go func() {
			defer t.wg.Done()
			if t.l.client.pause(t.ctx, t.l.opts.RetryBackoff) {
				n.signal()
			}
		}()
		return
	}
	ev := controller.TopicConfigs{UncleanLeaderElection: make(map[string]bool, len(topics))}
	for i, name := range topics {
		ev.UncleanLeaderElection[name] = on[i]
	}
	t.core.Step(ev)
}

// startImbalanceChecks steps the automatic rebalance's checks for the
// term, if it is enabled.
func (t *term) startImbalanceChecks() {
	on, interval, pct := t.l.opts.rebalance()
	if !on {
		return
	}
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		timer := time.NewTimer(min(firstImbalanceCheck, interval))
		defer timer.Stop()
		for {
			select {
			case <-timer.C:
				t.post(controller.ImbalanceCheck{Percentage: pct})
				timer.Reset(interval)
			case <-t.ctx.Done():
				return
			}
		}
	}()
}

// warnUnclean logs the unclean elections among ws, with the state they
// replace, as Kafka warns of them.
func (t *term) warnUnclean(ws []controller.Write) {
	for _, w := range ws {
		if !w.Unclean {
			continue
		}
		cur, _ := t.core.State(engine.Partition{Topic: w.Topic, Partition: w.Partition})
		t.l.log.Warn("unclean leader election: a replica outside the ISR becomes leader; records acknowledged by the old ISR and not replicated to it are lost",
			"topic", w.Topic, "partition", w.Partition, "leader", w.State.Leader, "leader_epoch", w.State.LeaderEpoch,
			"old_leader", cur.Leader, "old_isr", cur.ISR)
	}
}

// LeaderElection is a partition's leader elected by a state write that
// succeeded, as LoopOptions.Elected reports it.
type LeaderElection struct {
	Topic     string
	Partition int32
	// Leader is the broker elected.
	Leader int32
	// Unclean says it was elected from outside the ISR.
	Unclean bool
	// Took is the time from the decision (the Ready holding the write) to
	// the write's success.
	Took time.Duration
}

// elections are the leader elections among ws, by partition: the state
// updates that change a partition's leader to a broker (from another or
// none) or elect one uncleanly. nil without LoopOptions.Elected.
func (t *term) elections(ws []controller.Write) map[engine.Partition]LeaderElection {
	if t.l.opts.Elected == nil {
		return nil
	}
	var out map[engine.Partition]LeaderElection
	for _, w := range ws {
		if w.Op != controller.UpdateState || w.ISRChange || w.State.Leader < 0 {
			continue
		}
		tp := engine.Partition{Topic: w.Topic, Partition: w.Partition}
		if cur, ok := t.core.State(tp); ok && cur.Leader == w.State.Leader && !w.Unclean {
			continue
		}
		if out == nil {
			out = map[engine.Partition]LeaderElection{}
		}
		out[tp] = LeaderElection{Topic: w.Topic, Partition: w.Partition, Leader: w.State.Leader, Unclean: w.Unclean}
	}
	return out
}

// reportElected reports r to LoopOptions.Elected if it is the success of
// one of elections, decided at start.
func (t *term) reportElected(elections map[engine.Partition]LeaderElection, r controller.WriteResult, start time.Time) {
	if r.Err != nil || len(elections) == 0 {
		return
	}
	if e, ok := elections[engine.Partition{Topic: r.Write.Topic, Partition: r.Write.Partition}]; ok {
		e.Took = time.Since(start)
		t.l.opts.Elected(e)
	}
}
