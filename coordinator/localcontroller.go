package coordinator

// The single node's controller: the decision core of a ZooKeeper cluster
// (coordinator/controller), driven in-process over the embedded metadata,
// so that a single node is the one-broker case of a cluster: its topics
// are created, grown and deleted by the controller, which tells the broker
// with the same LeaderAndIsr, UpdateMetadata and StopReplica requests a
// cluster's brokers get, delivered by a function call instead of a
// connection.
//
// The driver is one goroutine. Topic changes of the embedded backend
// (CreateTopic, AddPartitions, DeleteTopic) post the core's events; the
// goroutine Steps them, performs what Ready asks (writes on the embedded
// metadata, requests through send, in order) and Steps their results,
// until the core asks for nothing more. The broker's own AlterPartition
// requests come by a call (AlterPartition), Stepped as the others, and are
// answered from the Ready that holds their Answer. The core's writes are: partition
// states (kept in memory), a topic's deletion once its replicas are
// deleted, and the removal of a deletion marker. The broker is registered
// at broker epoch 1 and the controller elected at epoch 1: nothing else
// can join or take over.
//
// Locks: Embedded.mu guards the queue with the metadata and is never held
// across send or across a Step; the broker calls the backend under its own
// locks (the Store's, for a topic's configuration), so Embedded.mu is
// taken last, after any broker lock.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/coordinator/controller"
	"github.com/sluice-io/sluice/engine"
)

// localEpoch is the single node's broker epoch and controller epoch.
const localEpoch = 1

// ErrNoController is returned by WaitIdle when the controller was not
// started.
var ErrNoController = errors.New("coordinator: the local controller is not running")

// localController is the driver's state; its queue is under Embedded.mu.
type localController struct {
	core *controller.Controller
	send func(kmsg.Request) (kmsg.Response, error)
	wake chan struct{} // capacity 1
	stop chan struct{}
	done chan struct{}

	// Under Embedded.mu:
	events []controller.Event
	// alters are AlterPartition requests posted and not yet answered,
	// elections ElectLeaders (localelect.go).
	alters    calls[*kmsg.AlterPartitionResponse]
	elections calls[[]controller.ElectionResult]
	reassigns calls[controller.ReassignAnswer]

	busy bool          // the goroutine is working on events
	idle chan struct{} // closed when it next finds nothing to do
}

// StartController starts the single node's controller: it loads every
// topic (self advertised at host:port, which UpdateMetadata names) and
// delivers its requests through send, from its own goroutine, one at a
// time. Stop it with Close.
func (e *Embedded) StartController(host string, port int32, send func(kmsg.Request) (kmsg.Response, error)) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.mu.closed {
		return ErrClosed
	}
	if e.mu.ctl != nil {
		return errors.New("coordinator: the local controller is running already")
	}
	lc := &localController{
		core: controller.New(e.self.ID, localEpoch, controller.Options{}),
		send: send, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
		idle: make(chan struct{}),
	}
	self := controller.BrokerInfo{ID: e.self.ID, Epoch: localEpoch, Rack: e.self.Rack,
		Endpoints: []controller.Endpoint{{Listener: "PLAINTEXT", SecurityProtocol: "PLAINTEXT", Host: host, Port: port}}}
	load := controller.Load{Brokers: []controller.BrokerInfo{self}, States: maps.Clone(e.mu.states),
		Deleting: slices.Sorted(maps.Keys(e.mu.deleting))}
	for _, name := range slices.Sorted(maps.Keys(e.mu.topics)) {
		load.Topics = append(load.Topics, e.assignment(e.mu.topics[name]))
	}
	e.mu.ctl = lc
	e.postLocked(load)
	go e.drive(lc)
	return nil
}

// postLocked queues an event for the controller, if it runs. e.mu is held.
func (e *Embedded) postLocked(ev controller.Event) {
	lc := e.mu.ctl
	if lc == nil {
		return
	}
	lc.events = append(lc.events, ev)
	select {
	case lc.wake <- struct{}{}:
	default:
	}
}

// post is postLocked without e.mu.
func (e *Embedded) post(ev controller.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.postLocked(ev)
}

// WaitIdle returns once the controller has done everything its events
// asked (every request answered), or when ctx ends.
func (e *Embedded) WaitIdle(ctx context.Context) error {
	for {
		e.mu.Lock()
		lc := e.mu.ctl
		switch {
		case e.mu.closed:
			e.mu.Unlock()
			return ErrClosed
		case lc == nil:
			e.mu.Unlock()
			return ErrNoController
		}
		if !lc.busy && len(lc.events) == 0 {
			e.mu.Unlock()
			return nil
		}
		ch := lc.idle
		e.mu.Unlock()
		select {
		case <-ch:
		case <-lc.done:
			return ErrClosed
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// AlterPartition hands the broker's AlterPartition request to the single
// node's controller and returns its response, or ctx's error when ctx ends
// first. Without a running controller it answers NOT_CONTROLLER.
func (e *Embedded) AlterPartition(ctx context.Context, req *kmsg.AlterPartitionRequest) (*kmsg.AlterPartitionResponse, error) {
	return callController(ctx, e, func(lc *localController) *calls[*kmsg.AlterPartitionResponse] { return &lc.alters },
		func(id uint64) controller.Event { return controller.AlterPartition{ID: id, Request: req} },
		&kmsg.AlterPartitionResponse{Version: req.Version, ErrorCode: kerr.NotController.Code})
}

// calls are requests posted to the controller and not yet answered, by
// id; each channel has capacity 1. Under Embedded.mu.
type calls[R any] struct {
	last uint64
	m    map[uint64]chan R
}

// reply sends r to call id if its caller still waits. e.mu is held.
func (c *calls[R]) reply(id uint64, r R) {
	if ch := c.m[id]; ch != nil {
		delete(c.m, id)
		ch <- r
	}
}

// callController posts ev(id) for a new call of the calls cs picks and
// returns its answer, or refused without a running controller (or when
// it stops), or ctx's error when ctx ends first.
func callController[R any](ctx context.Context, e *Embedded, cs func(*localController) *calls[R], ev func(id uint64) controller.Event, refused R) (R, error) {
	e.mu.Lock()
	lc := e.mu.ctl
	if lc == nil || e.mu.closed {
		e.mu.Unlock()
		return refused, nil
	}
	c := cs(lc)
	if c.m == nil {
		c.m = map[uint64]chan R{}
	}
	c.last++
	id, reply := c.last, make(chan R, 1)
	c.m[id] = reply
	e.postLocked(ev(id))
	e.mu.Unlock()
	select {
	case r := <-reply:
		return r, nil
	case <-lc.done:
		return refused, nil
	case <-ctx.Done():
		e.mu.Lock()
		delete(c.m, id)
		e.mu.Unlock()
		var none R
		return none, ctx.Err()
	}
}

// answer sends the core's answers to the callers still waiting.
func (e *Embedded) answer(lc *localController, rd controller.Ready) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, a := range rd.Answers {
		lc.alters.reply(a.ID, a.Response)
	}
	for _, a := range rd.Elections {
		lc.elections.reply(a.ID, a.Results)
	}
	for _, a := range rd.Reassignments {
		lc.reassigns.reply(a.ID, a)
	}
}

// stopController stops the driver and waits for it.
func (e *Embedded) stopController() {
	e.mu.Lock()
	lc := e.mu.ctl
	e.mu.Unlock()
	if lc == nil {
		return
	}
	close(lc.stop)
	<-lc.done
}

// drive is the controller's goroutine.
func (e *Embedded) drive(lc *localController) {
	defer close(lc.done)
	for {
		select {
		case <-lc.wake:
		case <-lc.stop:
			return
		}
		for {
			e.mu.Lock()
			evs := lc.events
			lc.events = nil
			if len(evs) == 0 {
				lc.busy = false
				close(lc.idle)
				lc.idle = make(chan struct{})
				e.mu.Unlock()
				break
			}
			lc.busy = true
			e.mu.Unlock()
			for _, ev := range evs {
				lc.core.Step(ev)
			}
			for {
				select {
				case <-lc.stop:
					return
				default:
				}
				rd := lc.core.Ready()
				if rd.Empty() {
					break
				}
				var results []controller.Event
				for _, w := range rd.Writes {
					results = append(results, e.write(w))
				}
				for _, r := range rd.Requests {
					resp, err := lc.send(r.Msg)
					results = append(results, controller.Response{Request: r, Response: resp, Err: err})
				}
				lc.core.Advance(rd)
				if len(rd.Answers) > 0 || len(rd.Elections) > 0 || len(rd.Reassignments) > 0 {
					e.answer(lc, rd)
				}
				for _, ev := range results {
					lc.core.Step(ev)
				}
			}
		}
	}
}

// write performs one of the core's writes on the embedded metadata.
func (e *Embedded) write(w controller.Write) controller.WriteResult {
	e.mu.Lock()
	defer e.mu.Unlock()
	res := controller.WriteResult{Write: w}
	tp := engine.Partition{Topic: w.Topic, Partition: w.Partition}
	switch w.Op {
	case controller.CreateState:
		if cur, ok := e.mu.states[tp]; ok {
			res.Err, res.Current = controller.ErrConflict, &cur
			return res
		}
		s := w.State
		s.PartitionEpoch = 0
		e.mu.states[tp] = s
	case controller.UpdateState:
		cur, ok := e.mu.states[tp]
		if !ok || cur.PartitionEpoch != w.State.PartitionEpoch {
			res.Err = controller.ErrConflict
			if ok {
				res.Current = &cur
			}
			return res
		}
		s := w.State
		s.PartitionEpoch = cur.PartitionEpoch + 1
		e.mu.states[tp] = s
		res.Version = s.PartitionEpoch
	case controller.SetAssignment:
		t, ok := e.mu.topics[w.Topic]
		if !ok {
			res.Err = controller.ErrConflict
			return res
		}
		old := t
		t.ID = w.Assignment.ID
		e.mu.topics[w.Topic] = t
		if err := e.saveLocked(); err != nil {
			e.mu.topics[w.Topic] = old
			res.Err = err
		}
	case controller.DeleteTopic:
		old, had := e.mu.topics[w.Topic]
		delete(e.mu.topics, w.Topic)
		delete(e.mu.deleting, w.Topic)
		if err := e.saveLocked(); err != nil {
			if had {
				e.mu.topics[w.Topic] = old
			}
			e.mu.deleting[w.Topic] = true
			res.Err = err
			return res
		}
		for p := range e.mu.states {
			if p.Topic == w.Topic {
				delete(e.mu.states, p)
			}
		}
		e.changedLocked()
	case controller.RemoveDeleteMarker:
		if e.mu.deleting[w.Topic] {
			delete(e.mu.deleting, w.Topic)
			if err := e.saveLocked(); err != nil {
				e.mu.deleting[w.Topic] = true
				res.Err = err
			}
		}
	default:
		res.Err = fmt.Errorf("coordinator: unknown controller write %v", w.Op)
	}
	return res
}
