package zk

// The controller driver: the thin loop around the decision core
// (coordinator/controller) that every broker runs. It campaigns for
// /controller (Elect; while another broker holds it, it waits for the
// znode to go), and once elected reads the cluster (loader.go), Steps a
// Load into a new core and then, until it resigns, turns ZooKeeper's watch
// events into the core's events and performs what the core decides: its
// writes as multi-ops fenced on the controller epoch (writes.go), its
// requests through the brokers' queues (sender.go).
//
// Goroutines: the loop's own, which alone touches the core (Step, Ready,
// Advance) and reads ZooKeeper again when a watch fires; and, during a
// term as controller, one per watch armed (it forwards the watch's event
// to the loop), one per batch of writes, one per broker's queue, and the
// automatic rebalance's ticker. Their
// results come back to the loop through channels. A term ends when the
// session expires, a write finds another controller elected (the core
// resigns), a read fails for good, or on Close; every goroutine of the
// term has ended before the next campaign starts.
//
// A leader's AlterPartition reaches the loop through AlterPartition (a
// broker's ControlledShutdown through ControlledShutdown), which any
// goroutine may call: the loop Steps it and sends the core's Answer
// back once it comes; a term that ends answers what it holds
// NOT_CONTROLLER, so a caller never waits past the term. ElectLeaders,
// reassignments (reassignments.go) and config change notices come the same way; a term also steps the automatic
// rebalance's checks (elections.go).
//
// Watches are one-shot: each is armed again, with the data re-read, when
// its event is handled. The core is given whole sets (all registrations,
// all deletion markers), so events merged or missed between a fire and
// its re-read lose nothing.

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	gozk "github.com/go-zookeeper/zk"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/coordinator/controller"
)

// LoopOptions configure a ControllerLoop; the zero value is the defaults.
type LoopOptions struct {
	// Core configures the decision core (default: Kafka's defaults).
	Core controller.Options
	// RetryBackoff is the pause after a failed read of ZooKeeper or a
	// failed campaign before trying again (default 500 ms).
	RetryBackoff time.Duration
	// Logger (default slog.Default()).
	Logger *slog.Logger
	// Unclean is a topic's effective unclean.leader.election.enable given
	// its /config/topics overrides: the broker's layers of defaults below
	// the override (default: the override, else false).
	Unclean func(topicConfigs map[string]string) bool
	// AutoLeaderRebalance is auto.leader.rebalance.enable (nil: true),
	// ImbalanceCheckInterval leader.imbalance.check.interval.seconds (0:
	// 300 s) and ImbalancePercentage
	// leader.imbalance.per.broker.percentage (nil: 10): elections.go.
	AutoLeaderRebalance    *bool
	ImbalanceCheckInterval time.Duration
	ImbalancePercentage    *int
	// Elected, if set, is called after each state write electing a
	// partition's leader succeeded (elections.go), from a goroutine of the
	// loop's: it must not block (default: none).
	Elected func(LeaderElection)
}

// ControllerLoop is a broker's controller driver: it competes for the
// controller role and, while it holds it, runs the decision core. Start it
// with StartControllerLoop; stop it with Close.
type ControllerLoop struct {
	client *Client
	id     int32
	send   Sender
	opts   LoopOptions
	log    *slog.Logger

	cancel context.CancelFunc
	done   chan struct{}
	// alters are AlterPartition requests for the loop, taken while it
	// leads; shutdowns ControlledShutdown requests (controlledshutdown.go);
	// elects ElectLeaders requests, and notices config change
	// notifications (elections.go).
	alters    chan alterCall
	shutdowns chan shutdownCall
	elects    chan electCall
	reassigns chan reassignCall
	lists     chan listCall
	notices   *configNotices

	// epoch is the controller epoch of the current term, 0 when this
	// broker is not the controller.
	epoch atomic.Int32
	// active is the controller's broker id as last seen, -1 for none.
	active atomic.Int32

	mu struct {
		sync.Mutex
		changed chan struct{} // closed and replaced when epoch or active change
	}
}

// StartControllerLoop starts broker id's controller driver on client,
// sending control requests through s. It runs until Close, ctx's end or
// the client's Close.
func StartControllerLoop(ctx context.Context, client *Client, id int32, s Sender, o LoopOptions) *ControllerLoop {
	if o.RetryBackoff <= 0 {
		o.RetryBackoff = 500 * time.Millisecond
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	ctx, cancel := context.WithCancel(ctx)
	l := &ControllerLoop{client: client, id: id, send: s, opts: o, cancel: cancel, done: make(chan struct{}),
		alters: make(chan alterCall), shutdowns: make(chan shutdownCall), elects: make(chan electCall),
		reassigns: make(chan reassignCall), lists: make(chan listCall), notices: newConfigNotices(),
		log: o.Logger.With("broker", id)}
	l.active.Store(-1)
	l.mu.changed = make(chan struct{})
	go l.run(ctx)
	return l
}

// Close stops the driver and waits for every goroutine it started. A
// controller gives up /controller, so that another broker is elected.
func (l *ControllerLoop) Close() {
	l.cancel()
	<-l.done
}

// IsController reports whether this broker is the controller.
func (l *ControllerLoop) IsController() bool { return l.epoch.Load() != 0 }

// Epoch is the controller epoch this broker was elected at, 0 when it is
// not the controller.
func (l *ControllerLoop) Epoch() int32 { return l.epoch.Load() }

// ActiveController is the controller's broker id as this broker last saw
// it (a Metadata response's ControllerId), -1 when none is known.
func (l *ControllerLoop) ActiveController() int32 { return l.active.Load() }

// Changed returns a channel closed at the next change of IsController,
// Epoch or ActiveController.
func (l *ControllerLoop) Changed() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.changed
}

// alterCall is an AlterPartition handed to the loop, and where its answer
// goes (capacity 1: the loop never waits on it).
type alterCall struct {
	req   *kmsg.AlterPartitionRequest
	reply chan *kmsg.AlterPartitionResponse
}

// AlterPartition hands a partition leader's AlterPartition request to the
// controller and returns its response, or ctx's error when ctx ends first.
// A broker that is not the controller, or stops being it meanwhile,
// answers NOT_CONTROLLER, as Kafka's.
func (l *ControllerLoop) AlterPartition(ctx context.Context, req *kmsg.AlterPartitionRequest) (*kmsg.AlterPartitionResponse, error) {
	call := alterCall{req: req, reply: make(chan *kmsg.AlterPartitionResponse, 1)}
	return ask(l, ctx, l.alters, call, call.reply, func() *kmsg.AlterPartitionResponse { return notController(req) })
}

// ask hands call to the loop through ch and waits for its reply, or for
// ctx; refused answers when this broker is not, or stops being, the
// controller.
func ask[C, R any](l *ControllerLoop, ctx context.Context, ch chan<- C, call C, reply <-chan R, refused func() R) (R, error) {
	var zero R
	changed := l.Changed()
	if !l.IsController() {
		return refused(), nil
	}
	select {
	case ch <- call:
	case <-changed:
		return refused(), nil
	case <-l.done:
		return refused(), nil
	case <-ctx.Done():
		return zero, ctx.Err()
	}
	select {
	case resp := <-reply:
		return resp, nil
	case <-ctx.Done():
		return zero, ctx.Err()
	}
}

func notController(req *kmsg.AlterPartitionRequest) *kmsg.AlterPartitionResponse {
	return &kmsg.AlterPartitionResponse{Version: req.Version, ErrorCode: kerr.NotController.Code}
}

func (l *ControllerLoop) setRole(epoch, active int32) {
	oldEpoch, oldActive := l.epoch.Swap(epoch), l.active.Swap(active)
	if oldEpoch == epoch && oldActive == active {
		return
	}
	l.mu.Lock()
	close(l.mu.changed)
	l.mu.changed = make(chan struct{})
	l.mu.Unlock()
}

func (l *ControllerLoop) run(ctx context.Context) {
	defer close(l.done)
	defer l.setRole(0, -1)
	for {
		expired := l.client.Expired()
		e, ok := l.campaign(ctx)
		if !ok {
			return
		}
		err := l.lead(ctx, e, expired)
		l.setRole(0, -1)
		l.log.Info("controller resigned", "epoch", e.Epoch, "reason", err)
		// Give up /controller unless another controller was elected
		// (then the fenced delete fails): on Close, or after a failed
		// read, so that the next election starts afresh.
		if _, derr := l.client.Multi(e, &gozk.DeleteRequest{Path: ControllerPath, Version: -1}); derr == nil {
			l.log.Info("controller znode deleted", "epoch", e.Epoch)
		}
		if ctx.Err() != nil {
			return
		}
		if errors.Is(err, errReadFailed) && !l.client.pause(ctx, l.opts.RetryBackoff) {
			return
		}
	}
}

// campaign returns once this broker is elected, or false when the driver
// is stopping.
func (l *ControllerLoop) campaign(ctx context.Context) (Election, bool) {
	for ctx.Err() == nil {
		select {
		case <-l.client.Closed():
			return Election{}, false
		default:
		}
		e, err := l.client.Elect(l.id)
		if err == nil {
			return e, true
		}
		if !errors.Is(err, ErrControllerMoved) {
			l.log.Warn("controller election failed", "err", err)
			if !l.client.pause(ctx, l.opts.RetryBackoff) {
				break
			}
			continue
		}
		holder, ok, changed, err := l.client.WatchController()
		if err != nil {
			l.log.Warn("watching /controller failed", "err", err)
			if !l.client.pause(ctx, l.opts.RetryBackoff) {
				break
			}
			continue
		}
		if !ok {
			continue // gone meanwhile: run again
		}
		if holder.BrokerID == l.id && l.client.ownsController() {
			// Left by a term whose resignation could not delete it.
			if err := l.client.conn.Delete(l.client.abs(ControllerPath), -1); err != nil && !errors.Is(err, gozk.ErrNoNode) {
				l.log.Warn("deleting our own /controller failed", "err", err)
				if !l.client.pause(ctx, l.opts.RetryBackoff) {
					break
				}
			}
			continue
		}
		l.setRole(0, holder.BrokerID)
		select {
		case <-changed:
		case <-ctx.Done():
		case <-l.client.Closed():
			return Election{}, false
		}
	}
	return Election{}, false
}

// Reasons a term ends.
var (
	errExpired    = errors.New("zk: session expired")
	errResigned   = errors.New("zk: no longer the controller")
	errReadFailed = errors.New("zk: reading the cluster failed")
)

// fire is a watch's event, forwarded to the loop: kind is one of the
// watch kinds, topic the topic of a topic data watch.
type fire struct {
	kind  watchKind
	topic string
	ev    gozk.Event
}

type watchKind int8

const (
	watchBrokers watchKind = iota
	watchTopicList
	watchTopic
	watchDeletes
	watchController
	watchReassign
	watchLogDirEvents
)

// term is one election's run as controller.
type term struct {
	l      *ControllerLoop
	e      Election
	ctx    context.Context
	wg     *sync.WaitGroup
	core   *controller.Controller
	events chan controller.Event
	fired  chan fire
	ch     *channels
	// watched are the topics whose data watch is armed.
	watched map[string]bool
	// replies are the AlterPartition requests Stepped and not answered,
	// by the id the core answers them with.
	replies map[uint64]alterCall
	alterID uint64
	// shutdownReplies are the ControlledShutdown requests Stepped and not
	// answered, numbered from alterID too.
	shutdownReplies map[uint64]shutdownCall
	// el and ra are the ElectLeaders and AlterPartitionReassignments
	// Stepped and not answered (elections.go, reassignments.go).
	el waiting[electCall]
	ra waiting[reassignCall]
}

// alter Steps an AlterPartition into the core.
func (t *term) alter(a alterCall) {
	t.alterID++
	t.replies[t.alterID] = a
	t.core.Step(controller.AlterPartition{ID: t.alterID, Request: a.req})
}

// answer sends the core's answers back to their callers.
func (t *term) answer(as []controller.Answer) {
	for _, a := range as {
		if call, ok := t.replies[a.ID]; ok {
			delete(t.replies, a.ID)
			call.reply <- a.Response
		}
	}
}

// endAlters answers the requests the term still holds NOT_CONTROLLER.
func (t *term) endAlters() {
	for id, call := range t.replies {
		delete(t.replies, id)
		call.reply <- notController(call.req)
	}
}

// lead runs one term as controller of election e: load, then the loop.
// It returns why the term ended, once the term's goroutines are done.
func (l *ControllerLoop) lead(ctx context.Context, e Election, expired <-chan struct{}) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	start := time.Now()
	l.notices.take() // the load reads every topic's config afresh
	ld, w, err := l.client.load()
	if err == nil {
		err = l.withUnclean(ld.Topics)
	}
	if err != nil {
		l.log.Warn("controller failed to load the cluster", "epoch", e.Epoch, "err", err)
		return errors.Join(errReadFailed, err)
	}
	t := &term{l: l, e: e, ctx: ctx, wg: &wg,
		core:    controller.New(l.id, e.Epoch, l.opts.Core),
		events:  make(chan controller.Event, 1024),
		fired:   make(chan fire, 64),
		watched: map[string]bool{},
		replies: map[uint64]alterCall{}, shutdownReplies: map[uint64]shutdownCall{},
	}
	defer t.endAlters()
	defer t.endShutdowns()
	defer t.endElections()
	defer t.endReassignments()
	t.ch = newChannels(ctx, l.send, &wg, func(r controller.Response) { t.post(r) })
	t.core.Step(ld)
	if err := t.stillController(); err != nil {
		if !errors.Is(err, errResigned) {
			err = errors.Join(errReadFailed, err)
		}
		return err
	}
	t.forward(w.brokers, watchBrokers, "")
	t.forward(w.topics, watchTopicList, "")
	t.forward(w.deletes, watchDeletes, "")
	for name, ch := range w.topic {
		t.watched[name] = true
		t.forward(ch, watchTopic, name)
	}
	if err := t.zkReassignmentsChanged(); err != nil {
		return errors.Join(errReadFailed, err)
	}
	if err := t.logDirEventsChanged(); err != nil {
		return errors.Join(errReadFailed, err)
	}
	t.startImbalanceChecks()
	l.setRole(e.Epoch, l.id)
	l.log.Info("elected controller", "epoch", e.Epoch, "brokers", len(ld.Brokers),
		"topics", len(ld.Topics), "partitions", len(ld.States), "load", time.Since(start))

	for {
		rd := t.core.Ready()
		if rd.Resigned {
			t.core.Advance(rd)
			t.answer(rd.Answers)
			t.answerShutdowns(rd.ShutdownAnswers)
			t.answerElections(rd.Elections)
			t.answerReassignments(rd.Reassignments)
			return errResigned
		}
		if !rd.Empty() {
			t.perform(rd)
			t.core.Advance(rd)
			t.answer(rd.Answers)
			t.answerShutdowns(rd.ShutdownAnswers)
			t.answerElections(rd.Elections)
			t.answerReassignments(rd.Reassignments)
		}
		// Wait for an event, then take every one already come before the
		// next Ready, so that their consequences are batched. (Only this
		// goroutine receives from the channels: one with items does not
		// block it.)
		for first := true; first || len(t.events)+len(t.fired) > 0; first = false {
			select {
			case ev := <-t.events:
				t.core.Step(ev)
			case a := <-l.alters:
				t.alter(a)
			case sd := <-l.shutdowns:
				t.shutdown(sd)
			case e := <-l.elects:
				t.elect(e)
			case r := <-l.reassigns:
				t.reassign(r)
			case q := <-l.lists:
				t.list(q)
			case <-l.notices.wake:
				t.configsChanged()
			case f := <-t.fired:
				if err := t.handle(f); err != nil {
					return err
				}
			case <-expired:
				return errExpired
			case <-ctx.Done():
				return ctx.Err()
			case <-l.client.Closed():
				return gozk.ErrClosing
			}
		}
	}
}

// post hands an event to the loop, unless the term is over.
func (t *term) post(ev controller.Event) {
	select {
	case t.events <- ev:
	case <-t.ctx.Done():
	}
}

// forward passes ch's one event to the loop.
func (t *term) forward(ch <-chan gozk.Event, kind watchKind, topic string) {
	t.handOver(func() (fire, bool) {
		select {
		case ev := <-ch:
			return fire{kind: kind, topic: topic, ev: ev}, true
		case <-t.ctx.Done():
			return fire{}, false
		}
	})
}

// retry hands f to the loop again after the retry backoff: its re-read
// failed.
func (t *term) retry(f fire) {
	t.handOver(func() (fire, bool) { return f, t.l.client.pause(t.ctx, t.l.opts.RetryBackoff) })
}

// handOver runs wait on a goroutine of the term and hands the fire it
// returns to the loop, unless the term ends first.
func (t *term) handOver(wait func() (fire, bool)) {
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		if f, ok := wait(); ok {
			select {
			case t.fired <- f:
			case <-t.ctx.Done():
			}
		}
	}()
}

// handle re-reads what a watch's event is about, arms the watch again and
// Steps the core's event.
func (t *term) handle(f fire) error {
	if f.ev.Err != nil || f.ev.Type == gozk.EventNotWatching {
		// The session is gone or closing: its expiry or Close ends the
		// term; until then, read again.
		t.retry(f)
		return nil
	}
	var err error
	switch f.kind {
	case watchBrokers:
		err = t.brokersChanged()
	case watchTopicList:
		err = t.topicsChanged()
	case watchTopic:
		err = t.topicChanged(f.topic)
	case watchController:
		if err = t.stillController(); errors.Is(err, errResigned) {
			return err
		}
	case watchReassign:
		err = t.zkReassignmentsChanged()
	case watchLogDirEvents:
		err = t.logDirEventsChanged()
	case watchDeletes:
		var names []string
		var ch <-chan gozk.Event
		if names, ch, err = t.l.client.watchChildren(DeleteTopicsPath); err == nil {
			t.core.Step(controller.DeleteTopics{Topics: names})
			t.forward(ch, watchDeletes, "")
		}
	}
	if errors.Is(err, ErrBadZnode) {
		return errors.Join(errReadFailed, err)
	}
	if err != nil {
		t.l.log.Warn("controller failed to read ZooKeeper, will retry", "err", err)
		t.retry(f)
	}
	return nil
}

// stillController arms a watch on /controller and checks that this
// session still holds it: one that was deleted (an operator forcing an
// election, as Kafka's handleDeletion) or taken by another broker ends the
// term, as Kafka's maybeResign.
func (t *term) stillController() error {
	holder, ok, ch, err := t.l.client.WatchController()
	if err != nil {
		return err
	}
	if !ok || holder.BrokerID != t.l.id || !t.l.client.ownsController() {
		return errResigned
	}
	t.forward(ch, watchController, "")
	return nil
}

func (t *term) brokersChanged() error {
	live, ch, err := t.l.client.watchBrokers()
	if err != nil {
		return err
	}
	t.core.Step(controller.BrokersChanged{Live: live})
	t.forward(ch, watchBrokers, "")
	epochs := make(map[int32]int64, len(live))
	for _, id := range t.core.LiveBrokers() {
		b, _ := t.core.Broker(id)
		epochs[id] = b.Epoch
	}
	t.ch.live(epochs)
	return nil
}

// topicsChanged reads the topics that appeared under /brokers/topics (the
// others' changes come by their data watches).
func (t *term) topicsChanged() error {
	names, ch, err := t.l.client.watchChildren(TopicsPath)
	if err != nil {
		return err
	}
	var fresh []string
	for _, name := range names {
		if !t.watched[name] {
			fresh = append(fresh, name)
		}
	}
	ws, err := t.l.client.watchTopics(fresh)
	if err != nil {
		return err
	}
	as := make([]controller.TopicAssignment, 0, len(ws))
	for _, w := range ws {
		as = append(as, w.assignment)
	}
	if err := t.l.withUnclean(as); err != nil {
		return err // read again, watches and all
	}
	t.forward(ch, watchTopicList, "")
	for _, w := range ws {
		t.watched[w.assignment.Name] = true
		t.forward(w.watch, watchTopic, w.assignment.Name)
	}
	if len(as) > 0 {
		t.core.Step(controller.TopicsChanged{Topics: as})
	}
	return nil
}

func (t *term) topicChanged(name string) error {
	w, err := t.l.client.watchTopic(name)
	if err != nil {
		return err
	}
	if w.gone {
		delete(t.watched, name)
		return nil
	}
	as := []controller.TopicAssignment{w.assignment}
	if err := t.l.withUnclean(as); err != nil {
		return err // read again, watch and all
	}
	t.forward(w.watch, watchTopic, name)
	t.core.Step(controller.TopicsChanged{Topics: as})
	return nil
}

// perform issues rd's writes and queues its requests.
func (t *term) perform(rd controller.Ready) {
	t.warnUnclean(rd.Writes)
	var states []controller.Write
	for _, w := range rd.Writes {
		switch w.Op {
		case controller.CreateState, controller.UpdateState:
			states = append(states, w)
		default:
			t.wg.Add(1)
			go func() {
				defer t.wg.Done()
				t.post(t.l.client.writeTopic(t.e, w))
			}()
		}
	}
	if len(states) > 0 {
		// One goroutine for the Ready's batches, in order: a later batch
		// may need the partitions znode an earlier one creates.
		batches := batchStates(states, hasStates(t.core, states))
		elections, start := t.elections(states), time.Now()
		t.wg.Add(1)
		go func() {
			defer t.wg.Done()
			for _, b := range batches {
				for _, r := range t.l.client.writeStates(t.e, b) {
					t.reportElected(elections, r, start)
					t.post(r)
				}
			}
		}()
	}
	t.ch.queue(rd.Requests)
}
