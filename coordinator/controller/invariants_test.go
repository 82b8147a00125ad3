package controller

// The invariant checker the tests run on every Ready (doc.go lists the
// invariants). It holds what it has seen across Readys and controllers:
// the highest leader epoch each partition has had, the state writes in
// flight, and per controller what allows an unclean election (the topics'
// unclean.leader.election.enable as the events gave it, the partitions of
// ElectLeaders UNCLEAN requests), the elections asked for and the leaders
// each partition has had since.

import (
	"fmt"
	"slices"

	"github.com/sluice-io/sluice/engine"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// epochKey names a partition across re-creations of its topic.
type epochKey struct {
	id        engine.TopicID
	partition int32
}

type checker struct {
	// epochs are the highest leader epochs seen in ZooKeeper (written or
	// read by a controller).
	epochs map[epochKey]int32
	// inflight are the partitions with a state write handed out.
	inflight map[*Controller]map[engine.Partition]bool
	// views are what the checker knows of each controller's inputs and
	// outputs (elect_invariants_test.go).
	views map[*Controller]*view
}

func newChecker() *checker {
	return &checker{epochs: map[epochKey]int32{}, inflight: map[*Controller]map[engine.Partition]bool{}, views: map[*Controller]*view{}}
}

func (k *checker) key(c *Controller, tp engine.Partition) epochKey {
	a, _ := c.Topic(tp.Topic)
	return epochKey{a.ID, tp.Partition}
}

// saw records a leader epoch a controller learnt from ZooKeeper.
func (k *checker) saw(c *Controller, tp engine.Partition, epoch int32) {
	kk := k.key(c, tp)
	if e, ok := k.epochs[kk]; !ok || epoch > e {
		k.epochs[kk] = epoch
	}
}

// forget drops what it knows of a partition whose state znode someone
// deleted.
func (k *checker) forget(c *Controller, tp engine.Partition) { delete(k.epochs, k.key(c, tp)) }

// loaded records the states of a Load.
func (k *checker) loaded(c *Controller, l Load) {
	for tp, s := range l.States {
		k.saw(c, tp, s.LeaderEpoch)
	}
}

// result records a WriteResult about to be stepped into c.
func (k *checker) result(c *Controller, r WriteResult) {
	if r.Write.Op != CreateState && r.Write.Op != UpdateState {
		return
	}
	tp := r.Write.key().tp
	delete(k.inflight[c], tp)
	switch {
	case r.Err == nil:
		k.saw(c, tp, r.Write.State.LeaderEpoch)
		k.view(c).led(tp, r.Write.State.Leader)
	case r.Current != nil:
		k.saw(c, tp, r.Current.LeaderEpoch)
		k.view(c).led(tp, r.Current.Leader)
	}
}

// step steps evs into c in order, then takes c's Ready and checks it;
// the caller advances.
func (k *checker) step(c *Controller, evs ...Event) (Ready, error) {
	for _, ev := range evs {
		if r, ok := ev.(WriteResult); ok {
			k.result(c, r)
		}
		k.stepping(c, ev)
		c.Step(ev)
		if l, ok := ev.(Load); ok {
			k.loaded(c, l)
		}
		k.sawFirsts(c)
	}
	rd := c.Ready()
	return rd, k.check(c, rd)
}

// check checks rd, just returned by c.Ready, against c's view.
func (k *checker) check(c *Controller, rd Ready) error {
	for _, a := range rd.Answers {
		if err := k.checkAnswer(c, a); err != nil {
			return err
		}
	}
	for _, a := range rd.Elections {
		if err := k.checkElection(c, a); err != nil {
			return err
		}
	}
	if rd.Resigned {
		if len(rd.Writes) > 0 || len(rd.Requests) > 0 {
			return fmt.Errorf("resigned with %d writes and %d requests", len(rd.Writes), len(rd.Requests))
		}
		return nil
	}
	if k.inflight[c] == nil {
		k.inflight[c] = map[engine.Partition]bool{}
	}
	for _, w := range rd.Writes {
		if err := k.checkWrite(c, w); err != nil {
			return fmt.Errorf("%v %s-%d %+v: %w", w.Op, w.Topic, w.Partition, w.State, err)
		}
	}
	type kind struct {
		broker int32
		key    int16
	}
	seen := map[kind]bool{}
	for _, r := range rd.Requests {
		kd := kind{r.Broker, r.Msg.Key()}
		if seen[kd] {
			return fmt.Errorf("two requests of key %d to broker %d in one Ready", kd.key, r.Broker)
		}
		seen[kd] = true
		if err := k.checkRequest(c, r); err != nil {
			return fmt.Errorf("request key %d to broker %d: %w", r.Msg.Key(), r.Broker, err)
		}
	}
	return nil
}

func (k *checker) checkWrite(c *Controller, w Write) error {
	switch w.Op {
	case SetAssignment:
		if _, ok := c.Topic(w.Topic); !ok {
			return fmt.Errorf("assignment of unknown topic")
		}
		return nil
	case DeleteTopic:
		if !c.Deleting(w.Topic) {
			return fmt.Errorf("topic not being deleted")
		}
		return nil
	case RemoveDeleteMarker:
		if _, ok := c.Topic(w.Topic); ok && !c.opts.DisableTopicDeletion {
			return fmt.Errorf("marker of an existing topic removed")
		}
		return nil
	case CreateState, UpdateState:
	default:
		return fmt.Errorf("unknown write")
	}
	tp := engine.Partition{Topic: w.Topic, Partition: w.Partition}
	a, ok := c.Topic(w.Topic)
	if !ok || int(w.Partition) >= len(a.Replicas) || w.Partition < 0 {
		return fmt.Errorf("no such partition")
	}
	if c.Deleting(w.Topic) {
		return fmt.Errorf("state write for a topic being deleted")
	}
	if k.inflight[c][tp] {
		return fmt.Errorf("second write while one is in flight")
	}
	k.inflight[c][tp] = true
	replicas := a.Replicas[w.Partition]
	s := w.State
	if s.ControllerEpoch != c.Epoch() {
		return fmt.Errorf("controller epoch %d, not %d", s.ControllerEpoch, c.Epoch())
	}
	if len(s.ISR) == 0 {
		return fmt.Errorf("empty ISR")
	}
	for i, r := range s.ISR {
		if !slices.Contains(replicas, r) {
			return fmt.Errorf("ISR member %d not a replica of %v", r, replicas)
		}
		if slices.Contains(s.ISR[:i], r) {
			return fmt.Errorf("ISR member %d twice", r)
		}
	}
	if s.Leader != NoLeader {
		if !slices.Contains(s.ISR, s.Leader) {
			return fmt.Errorf("leader %d not in ISR", s.Leader)
		}
		if !c.Online(s.Leader, tp) {
			return fmt.Errorf("leader %d not live", s.Leader)
		}
	}
	cur, committed := c.State(tp)
	if w.Op == CreateState && committed {
		return fmt.Errorf("create of an existing state")
	}
	// A broker in controlled shutdown is given no leadership and no
	// place in an ISR it was not in.
	if c.shuttingDown(s.Leader) && (!committed || cur.Leader != s.Leader) {
		return fmt.Errorf("leader %d is in controlled shutdown", s.Leader)
	}
	for _, r := range s.ISR {
		if c.shuttingDown(r) && (!committed || !slices.Contains(cur.ISR, r)) {
			return fmt.Errorf("ISR member %d added while in controlled shutdown", r)
		}
	}
	if w.Op == UpdateState {
		if !committed {
			return fmt.Errorf("update of a missing state")
		}
		if s.PartitionEpoch != cur.PartitionEpoch {
			return fmt.Errorf("update conditional on version %d, committed %d", s.PartitionEpoch, cur.PartitionEpoch)
		}
	}
	e, seen := k.epochs[k.key(c, tp)]
	if w.ISRChange {
		// A leader's ISR change: same leader, same epoch, the highest seen.
		switch {
		case w.Op != UpdateState:
			return fmt.Errorf("ISR change by %v", w.Op)
		case s.Leader != cur.Leader || s.LeaderEpoch != cur.LeaderEpoch:
			return fmt.Errorf("ISR change moves leader %d epoch %d to %d epoch %d", cur.Leader, cur.LeaderEpoch, s.Leader, s.LeaderEpoch)
		case seen && s.LeaderEpoch < e:
			return fmt.Errorf("ISR change at leader epoch %d below %d", s.LeaderEpoch, e)
		}
		return nil
	}
	if seen && s.LeaderEpoch <= e {
		return fmt.Errorf("leader epoch %d not above %d", s.LeaderEpoch, e)
	}
	if w.Op == UpdateState {
		return k.checkElected(c, w, cur)
	}
	return nil
}

// checkAnswer checks an AlterPartition response: every partition answered
// without error carries the committed state (the one just written, or the
// one the request asked for already).
func (k *checker) checkAnswer(c *Controller, a Answer) error {
	for _, rt := range a.Response.Topics {
		name := rt.Topic
		if a.Response.Version >= 2 {
			t := c.byID[rt.TopidID]
			if t == nil {
				continue
			}
			name = t.name
		}
		for _, rp := range rt.Partitions {
			if rp.ErrorCode != 0 {
				continue
			}
			tp := engine.Partition{Topic: name, Partition: rp.Partition}
			s, ok := c.State(tp)
			if !ok || s.Leader != rp.LeaderID || s.LeaderEpoch != rp.LeaderEpoch || !slices.Equal(s.ISR, rp.ISR) ||
				s.PartitionEpoch != rp.PartitionEpoch || s.LeaderRecoveryState != rp.LeaderRecoveryState {
				return fmt.Errorf("AlterPartition %d answered %v with %+v, committed %+v", a.ID, tp, rp, s)
			}
		}
	}
	return nil
}

func (k *checker) checkRequest(c *Controller, r Request) error {
	b, ok := c.Broker(r.Broker)
	if !ok {
		return fmt.Errorf("broker not live")
	}
	if r.BrokerEpoch != b.Epoch {
		return fmt.Errorf("broker epoch %d, registered %d", r.BrokerEpoch, b.Epoch)
	}
	header := func(version, want int16, id, epoch int32, brokerEpoch int64) error {
		switch {
		case version != want:
			return fmt.Errorf("version %d", version)
		case id != c.ID() || epoch != c.Epoch():
			return fmt.Errorf("controller %d epoch %d, not %d epoch %d", id, epoch, c.ID(), c.Epoch())
		case brokerEpoch != b.Epoch:
			return fmt.Errorf("BrokerEpoch %d, registered %d", brokerEpoch, b.Epoch)
		}
		return nil
	}
	switch m := r.Msg.(type) {
	case *kmsg.LeaderAndISRRequest:
		if err := header(m.Version, LeaderAndISRVersion, m.ControllerID, m.ControllerEpoch, m.BrokerEpoch); err != nil {
			return err
		}
		for _, ts := range m.TopicStates {
			if c.Deleting(ts.Topic) {
				return fmt.Errorf("LeaderAndIsr for %s, being deleted", ts.Topic)
			}
			for _, ps := range ts.PartitionStates {
				st := sentState{ts.Topic, ts.TopicID, ps.Partition, ps.ControllerEpoch, ps.Leader, ps.LeaderEpoch, ps.ISR, ps.ZKVersion, ps.Replicas}
				if err := st.check(c, r.Broker, true); err != nil {
					return fmt.Errorf("LeaderAndIsr: %w", err)
				}
			}
		}
		for _, l := range m.LiveLeaders {
			if _, ok := c.Broker(l.BrokerID); !ok {
				return fmt.Errorf("live leader %d not live", l.BrokerID)
			}
		}
	case *kmsg.UpdateMetadataRequest:
		if err := header(m.Version, UpdateMetadataVersion, m.ControllerID, m.ControllerEpoch, m.BrokerEpoch); err != nil {
			return err
		}
		var ids []int32
		for _, lb := range m.LiveBrokers {
			ids = append(ids, lb.ID)
		}
		if !slices.Equal(ids, c.LiveBrokers()) {
			return fmt.Errorf("live brokers %v, controller's %v", ids, c.LiveBrokers())
		}
		for _, ts := range m.TopicStates {
			for _, ps := range ts.PartitionStates {
				st := sentState{ts.Topic, ts.TopicID, ps.Partition, ps.ControllerEpoch, ps.Leader, ps.LeaderEpoch, ps.ISR, ps.ZKVersion, ps.Replicas}
				if c.Deleting(ts.Topic) {
					if ps.Leader != LeaderDuringDelete {
						return fmt.Errorf("UpdateMetadata for %s-%d being deleted with leader %d", ts.Topic, ps.Partition, ps.Leader)
					}
					continue
				}
				if err := st.check(c, r.Broker, false); err != nil {
					return fmt.Errorf("UpdateMetadata: %w", err)
				}
			}
		}
	case *kmsg.StopReplicaRequest:
		if err := header(m.Version, StopReplicaVersion, m.ControllerID, m.ControllerEpoch, m.BrokerEpoch); err != nil {
			return err
		}
		// A deletion's, a reassignment's for a replica it removed, or (no
		// deletion) a broker's in controlled shutdown for the partitions it
		// does not lead.
		for _, ts := range m.Topics {
			a, ok := c.Topic(ts.Topic)
			if !ok {
				return fmt.Errorf("StopReplica for unknown topic %s", ts.Topic)
			}
			for _, ps := range ts.PartitionStates {
				replica := slices.Contains(a.Replicas[ps.Partition], r.Broker)
				if ps.Delete && !replica {
					continue // a replica a reassignment removed
				}
				if !replica {
					return fmt.Errorf("StopReplica for %s-%d to a broker not a replica", ts.Topic, ps.Partition)
				}
				p := c.partition(engine.Partition{Topic: ts.Topic, Partition: ps.Partition})
				switch {
				case ps.Delete && !c.Deleting(ts.Topic):
					return fmt.Errorf("StopReplica deleting %s-%d, not being deleted", ts.Topic, ps.Partition)
				case !ps.Delete && (!c.shuttingDown(r.Broker) || p.state == nil || p.state.Leader == r.Broker):
					return fmt.Errorf("StopReplica of %s-%d without deletion to broker %d, not in controlled shutdown or its leader", ts.Topic, ps.Partition, r.Broker)
				}
			}
		}
	default:
		return fmt.Errorf("unknown request %T", r.Msg)
	}
	return nil
}

// sentState is a partition state a request carries.
type sentState struct {
	topic                      string
	id                         engine.TopicID
	partition, controllerEpoch int32
	leader, leaderEpoch        int32
	isr                        []int32
	zkVersion                  int32
	replicas                   []int32
}

// check compares a sent state with c's committed one. replica says the
// broker must host the partition.
func (st sentState) check(c *Controller, broker int32, replica bool) error {
	tp := engine.Partition{Topic: st.topic, Partition: st.partition}
	a, ok := c.Topic(st.topic)
	if !ok || a.ID != st.id {
		return fmt.Errorf("%v of an unknown topic, or another id", tp)
	}
	s, ok := c.State(tp)
	switch {
	case !ok:
		return fmt.Errorf("%v without a state", tp)
	case replica && !slices.Contains(a.Replicas[st.partition], broker):
		return fmt.Errorf("%v to a broker not a replica", tp)
	case st.controllerEpoch != s.ControllerEpoch || st.controllerEpoch > c.Epoch():
		return fmt.Errorf("%v: controller epoch %d, committed %d", tp, st.controllerEpoch, s.ControllerEpoch)
	case !slices.Equal(st.isr, s.ISR) || !slices.Equal(st.replicas, a.Replicas[st.partition]):
		return fmt.Errorf("%v: ISR %v replicas %v, committed %+v", tp, st.isr, st.replicas, s)
	case st.leader != s.Leader || st.leaderEpoch != s.LeaderEpoch || st.zkVersion != s.PartitionEpoch:
		return fmt.Errorf("%v: %+v, committed %+v", tp, st, s)
	}
	return nil
}
