package controller

// A seeded simulator of the controller in a small cluster: it owns
// ZooKeeper (registrations, topics, partition state znodes with versions,
// deletion markers, the controller epoch), the brokers (each with Kafka's
// handling of control requests: epoch fencing, its metadata cache, its
// replicas' leader epochs, its logs on disk), the watches (notifications
// delivered late and coalesced, as ZooKeeper's are) and the network (one
// FIFO queue of requests per broker, delivered in random interleavings,
// lost or duplicated sometimes). It runs random sequences of broker
// deaths, returns and bounces, topic creations, partition additions,
// deletions, write failures, conflicting writes by others, lost requests,
// replica errors, controller failovers and leaders' AlterPartition
// requests (ISR shrinks and expansions, some stale), topics' unclean
// election setting changed, administrators' ElectLeaders and the automatic
// rebalance's checks (sim_elect_test.go), checking the invariants on every
// Ready. Then faults stop, every broker runs, the simulator delivers
// everything, and checks liveness: every partition of every topic is
// online, deletions have completed, every broker's metadata and replicas
// agree with the controller's view, every ElectLeaders is answered, and
// once every follower caught up, a preferred election of every partition
// and an imbalance check leave each led by its first replica.
//
// A failing seed is printed with the actions that led to it and replays
// with -sim.seed=N.

import (
	"errors"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/sluice-io/sluice/engine"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var (
	simSeeds = flag.Int("sim.seeds", 400, "seeds the controller simulator runs")
	simSeed  = flag.Uint64("sim.seed", 0, "run only this seed of the controller simulator")
	simSteps = flag.Int("sim.steps", 250, "random steps per seed of the controller simulator")
	simTrail = flag.Int("sim.trail", 40, "actions a failure of the controller simulator prints")
)

const simBrokers = 4

// simFailure unwinds a failed run.
type simFailure struct{ err error }

type simWrite struct {
	ctl *Controller
	w   Write
}

type simRequest struct {
	ctl *Controller
	r   Request
}

// simBroker is a broker process: what Kafka's broker keeps of control
// requests.
type simBroker struct {
	id    int32
	alive bool
	// epoch is its registration's czxid.
	epoch int64
	// ctlEpoch is the highest controller epoch it has seen.
	ctlEpoch int32
	// live, cache and ids are its metadata cache (ZkMetadataCache).
	live  []int32
	cache map[engine.Partition]kmsg.UpdateMetadataRequestTopicPartition
	ids   map[string]engine.TopicID
	// leaders are its replicas' states from LeaderAndIsr.
	leaders map[engine.Partition]kmsg.LeaderAndISRRequestTopicPartition
	// shutting: it sent a ControlledShutdown the controller takes (at its
	// epoch, or before v2, without one).
	shutting bool
	// logs are its replicas on disk, by topic id; they survive restarts.
	logs map[engine.Partition]engine.TopicID
	// badDirs are replicas on a failed disk, until it restarts.
	badDirs map[engine.Partition]bool
	// failedDelete says it answered a StopReplica with an error since it
	// registered (such a deletion waits for its next registration).
	failedDelete bool
}

type sim struct {
	seed   uint64
	r      *rand.Rand
	opts   Options
	faults bool
	trail  []string

	// ZooKeeper.
	zxid    int64
	epoch   int32
	regs    map[int32]BrokerInfo
	topics  map[string]TopicAssignment
	states  map[engine.Partition]PartitionState
	markers map[string]bool
	ids     int

	brokers []*simBroker
	ctl     *Controller
	chk     *checker
	writes  []simWrite
	queues  map[int32][]simRequest

	// tampered are state znodes deleted by someone else, which the
	// controller may never notice (it does not watch them, nor does
	// Kafka's).
	tampered map[engine.Partition]bool
	// stats counts what happened, across seeds (coverage).
	stats map[string]int

	// alters are the AlterPartition requests sent and not yet answered.
	alters    map[uint64]simAlter
	nextAlter uint64
	// unclean are the topics' unclean.leader.election.enable in
	// /config/topics; elections the ElectLeaders sent and not answered.
	unclean   map[string]bool
	elections map[uint64]simElection
	nextElect uint64
	// shutdowns are the ControlledShutdown requests sent and not yet
	// answered, by id: the broker.
	shutdowns map[uint64]int32
	// reassigns are the AlterReassignments sent and not yet answered;
	// lastTarget the last target asked for each partition (sim_reassign_test.go).
	reassigns    map[uint64]simReassign
	nextReassign uint64
	lastTarget   map[engine.Partition]simTarget
	// away are the replicas SetAssignments removed, by partition.
	away map[epochKey]map[int32]bool

	// Watches that fired and are not yet delivered; configsChanged are
	// topic config change notifications.
	brokersChanged, deletesChanged bool
	topicsChanged, configsChanged  map[string]bool
}

// runSim runs one seed; the error says what broke and how.
func runSim(seed uint64, steps int, opts Options, stats map[string]int) (err error) {
	if stats == nil {
		stats = map[string]int{}
	}
	s := &sim{stats: stats, tampered: map[engine.Partition]bool{},
		seed: seed, r: rand.New(rand.NewPCG(seed, 0x5eed)), opts: opts, faults: true,
		regs: map[int32]BrokerInfo{}, topics: map[string]TopicAssignment{}, states: map[engine.Partition]PartitionState{},
		markers: map[string]bool{}, chk: newChecker(), queues: map[int32][]simRequest{}, topicsChanged: map[string]bool{},
		alters: map[uint64]simAlter{}, shutdowns: map[uint64]int32{}, reassigns: map[uint64]simReassign{}, lastTarget: map[engine.Partition]simTarget{},
		unclean: map[string]bool{}, elections: map[uint64]simElection{}, configsChanged: map[string]bool{},
	}
	s.opts.NewTopicID = func() engine.TopicID { return s.newID() }
	defer func() {
		if v := recover(); v != nil {
			f, ok := v.(simFailure)
			if !ok {
				panic(v)
			}
			err = fmt.Errorf("seed %d (replay with -sim.seed=%d): %w\nlast actions:\n  %s", seed, seed, f.err, strings.Join(s.trail, "\n  "))
		}
	}()
	for id := range int32(simBrokers) {
		s.brokers = append(s.brokers, &simBroker{id: id, logs: map[engine.Partition]engine.TopicID{}})
		s.start(id)
	}
	s.failover()
	for range steps {
		s.randomStep()
	}
	s.quiesce()
	s.converged()
	s.settled()
	return nil
}

func (s *sim) fail(format string, args ...any) { panic(simFailure{fmt.Errorf(format, args...)}) }

func (s *sim) note(format string, args ...any) {
	s.trail = append(s.trail, fmt.Sprintf(format, args...))
	if len(s.trail) > *simTrail {
		s.trail = s.trail[1:]
	}
}

func (s *sim) newID() engine.TopicID {
	s.ids++
	return engine.TopicID{byte(s.ids), byte(s.ids >> 8), 0x51}
}

// step feeds the current controller an event and takes its Ready.
func (s *sim) step(ev Event) {
	rd, err := s.chk.step(s.ctl, ev)
	if err != nil {
		s.fail("invariant: %v", err)
	}
	if rd.Empty() {
		return
	}
	for _, w := range rd.Writes {
		s.writes = append(s.writes, simWrite{s.ctl, w})
	}
	for _, r := range rd.Requests {
		s.queues[r.Broker] = append(s.queues[r.Broker], simRequest{s.ctl, r})
	}
	s.ctl.Advance(rd)
	s.takeAnswers(rd)
	if rd.Resigned {
		s.note("controller %d resigned", s.ctl.Epoch())
		s.failover()
	}
}

func (s *sim) randomStep() {
	type action struct {
		weight int
		do     func()
	}
	actions := []action{
		{12, s.deliverWrite},
		{30, s.deliverRequest},
		{8, s.notify},
		{3, s.kill},
		{4, s.revive},
		{2, s.bounce},
		{5, s.createTopic},
		{2, s.addPartitions},
		{3, s.deleteTopic},
		{1, s.externalWrite},
		{8, s.alterPartition},
		{6, s.catchUp},
		{2, s.configChange},
		{3, s.electLeaders},
		{3, s.imbalanceCheck},
		{2, s.controlledShutdown},
		{3, s.reassign},
		{1, func() {
			if s.r.IntN(3) == 0 {
				s.failover()
			}
		}},
	}
	total := 0
	for _, a := range actions {
		total += a.weight
	}
	n := s.r.IntN(total)
	for _, a := range actions {
		if n < a.weight {
			a.do()
			return
		}
		n -= a.weight
	}
}

// ---- ZooKeeper and the controller

// failover elects a new controller, which loads the cluster.
func (s *sim) failover() {
	s.stats["failover"]++
	s.epoch++
	s.ctl = New(int32(s.r.IntN(simBrokers)), s.epoch, s.opts)
	s.note("controller elected at epoch %d", s.epoch)
	l := Load{States: maps.Clone(s.states)}
	for _, id := range slices.Sorted(maps.Keys(s.regs)) {
		l.Brokers = append(l.Brokers, s.regs[id])
	}
	for _, name := range slices.Sorted(maps.Keys(s.topics)) {
		l.Topics = append(l.Topics, s.assignment(name))
		if a := s.topics[name]; len(a.Adding)+len(a.Removing) > 0 {
			s.stats["reassignment resumed"]++
		}
	}
	l.Deleting = slices.Sorted(maps.Keys(s.markers))
	s.step(l)
}

// deliverWrite performs the oldest write handed out.
func (s *sim) deliverWrite() {
	if len(s.writes) == 0 {
		return
	}
	sw := s.writes[0]
	s.writes = s.writes[1:]
	res := WriteResult{Write: sw.w}
	switch {
	case sw.ctl.Epoch() != s.epoch:
		res.Err = ErrControllerMoved
	case s.faults && s.r.IntN(20) == 0:
		res.Err = errors.New("connection loss")
	default:
		s.apply(&res)
	}
	s.count(sw.w, res)
	s.countElection(sw, res)
	if k := sw.w.key(); k.topicLevel {
		s.note("write %v %s: %v", sw.w.Op, sw.w.Topic, res.Err)
	} else {
		s.note("write %v %v %+v: %v", sw.w.Op, k.tp, sw.w.State, res.Err)
	}
	if sw.ctl == s.ctl {
		s.step(res)
		return
	}
	// A deposed controller learns it from the write (Kafka's
	// ControllerMovedException) and resigns, answering the requests it
	// holds NOT_CONTROLLER.
	rd, err := s.chk.step(sw.ctl, res)
	if err != nil {
		s.fail("invariant of a deposed controller: %v", err)
	}
	if len(rd.Writes) > 0 || len(rd.Requests) > 0 {
		s.fail("deposed controller %d asks for %d writes, %d requests", sw.ctl.Epoch(), len(rd.Writes), len(rd.Requests))
	}
	sw.ctl.Advance(rd)
	s.takeAnswers(rd)
}

func (s *sim) apply(res *WriteResult) {
	w := res.Write
	tp := engine.Partition{Topic: w.Topic, Partition: w.Partition}
	switch w.Op {
	case CreateState:
		if _, ok := s.topics[w.Topic]; !ok {
			s.fail("state created for a topic not in ZooKeeper: %+v", w)
		}
		if cur, ok := s.states[tp]; ok {
			res.Err, res.Current = ErrConflict, &cur
			return
		}
		st := w.State.clone()
		st.PartitionEpoch = 0
		s.states[tp] = st
	case UpdateState:
		cur, ok := s.states[tp]
		switch {
		case !ok:
			res.Err = ErrConflict
			return
		case cur.PartitionEpoch != w.State.PartitionEpoch:
			res.Err, res.Current = ErrConflict, &cur
			return
		}
		st := w.State.clone()
		st.PartitionEpoch = cur.PartitionEpoch + 1
		s.states[tp] = st
		res.Version = st.PartitionEpoch
	case SetAssignment:
		cur, ok := s.topics[w.Topic]
		if !ok {
			s.fail("assignment written for a topic not in ZooKeeper: %+v", w)
		}
		if cur.Version != w.Assignment.Version {
			res.Err = ErrConflict
			return
		}
		s.trackMoves(w)
		a := cloneAssignment(w.Assignment)
		a.Version++
		a.UncleanLeaderElection = false
		s.topics[w.Topic] = a
		s.topicsChanged[w.Topic] = true
		res.Version = a.Version
	case DeleteTopic:
		delete(s.topics, w.Topic)
		delete(s.unclean, w.Topic)
		for tp := range s.lastTarget {
			if tp.Topic == w.Topic {
				delete(s.lastTarget, tp)
			}
		}
		for tp := range s.states {
			if tp.Topic == w.Topic {
				delete(s.states, tp)
			}
		}
		delete(s.markers, w.Topic)
		s.deletesChanged = true
	case RemoveDeleteMarker:
		delete(s.markers, w.Topic)
		s.deletesChanged = true
	}
}

// count records a write's outcome in the stats.
func (s *sim) count(w Write, res WriteResult) {
	outcome := "ok"
	switch {
	case errors.Is(res.Err, ErrControllerMoved):
		outcome = "fenced"
	case errors.Is(res.Err, ErrConflict):
		outcome = "conflict"
	case res.Err != nil:
		outcome = "failed"
	case w.ISRChange:
		outcome = "ok isr"
	case w.Op == UpdateState && w.State.Leader == NoLeader:
		outcome = "ok offline"
	case w.Unclean:
		outcome = "ok unclean"
	case w.Op == UpdateState:
		outcome = "ok elected"
	}
	s.stats[w.Op.String()+" "+outcome]++
}

// externalWrite changes a state znode as someone other than the
// controller would: mostly as a leader's ISR update did in Kafka before
// 2.7 (the same leader and ISR, a higher leader epoch and version);
// sometimes creating a missing one (a tool), or deleting one.
func (s *sim) externalWrite() {
	switch n := s.r.IntN(4); {
	case n == 0:
		name, ok := s.anyTopic()
		if !ok {
			return
		}
		a := s.topics[name]
		tp := engine.Partition{Topic: name, Partition: int32(s.r.IntN(len(a.Replicas)))}
		if _, ok := s.states[tp]; ok {
			return
		}
		r := a.Replicas[tp.Partition][0]
		s.states[tp] = PartitionState{Leader: r, ISR: []int32{r}, ControllerEpoch: s.epoch}
		s.note("external create %v: %+v", tp, s.states[tp])
		return
	case n == 1 && len(s.states) > 0:
		tps := slices.SortedFunc(maps.Keys(s.states), cmpPartition)
		tp := tps[s.r.IntN(len(tps))]
		delete(s.states, tp)
		s.tampered[tp] = true
		// The partition's history is gone with its znode: a controller that
		// never knew it may start the leader epoch again at 0.
		s.chk.forget(s.ctl, tp)
		s.note("external delete %v", tp)
		return
	}
	if len(s.states) == 0 {
		return
	}
	tps := slices.SortedFunc(maps.Keys(s.states), cmpPartition)
	tp := tps[s.r.IntN(len(tps))]
	st := s.states[tp]
	st.LeaderEpoch++
	st.PartitionEpoch++
	s.states[tp] = st
	s.note("external write %v: %+v", tp, st)
}

// notify delivers the watches that fired.
func (s *sim) notify() {
	if s.brokersChanged {
		s.brokersChanged = false
		var live []BrokerInfo
		for _, id := range slices.Sorted(maps.Keys(s.regs)) {
			live = append(live, s.regs[id])
		}
		s.note("notify brokers %v", slices.Sorted(maps.Keys(s.regs)))
		// The driver removes brokers that left from its channel (Kafka's
		// removeBroker), dropping their queues, or keeps trying them.
		if s.r.IntN(2) == 0 {
			for b, q := range s.queues {
				q = slices.DeleteFunc(q, func(r simRequest) bool { return r.ctl == s.ctl && r.r.BrokerEpoch != s.regs[b].Epoch })
				s.queues[b] = q
			}
		}
		s.step(BrokersChanged{Live: live})
	}
	if len(s.topicsChanged) > 0 {
		var ev TopicsChanged
		for _, name := range slices.Sorted(maps.Keys(s.topicsChanged)) {
			if _, ok := s.topics[name]; ok {
				ev.Topics = append(ev.Topics, s.assignment(name))
			}
		}
		clear(s.topicsChanged)
		s.note("notify topics %d", len(ev.Topics))
		s.step(ev)
	}
	if len(s.configsChanged) > 0 {
		ev := TopicConfigs{UncleanLeaderElection: map[string]bool{}}
		for name := range s.configsChanged {
			ev.UncleanLeaderElection[name] = s.unclean[name]
		}
		clear(s.configsChanged)
		s.note("notify configs %v", ev.UncleanLeaderElection)
		s.step(ev)
	}
	if s.deletesChanged {
		s.deletesChanged = false
		s.note("notify deletions %v", slices.Sorted(maps.Keys(s.markers)))
		s.step(DeleteTopics{Topics: slices.Sorted(maps.Keys(s.markers))})
	}
}

// ---- brokers

func (s *sim) pick(alive bool) (*simBroker, bool) {
	var bs []*simBroker
	for _, b := range s.brokers {
		if b.alive == alive {
			bs = append(bs, b)
		}
	}
	if len(bs) == 0 {
		return nil, false
	}
	return bs[s.r.IntN(len(bs))], true
}

func (s *sim) start(id int32) {
	b := s.brokers[id]
	s.zxid++
	b.alive, b.epoch, b.ctlEpoch, b.failedDelete, b.shutting = true, s.zxid, 0, false, false
	b.live, b.cache, b.ids = nil, map[engine.Partition]kmsg.UpdateMetadataRequestTopicPartition{}, map[string]engine.TopicID{}
	b.leaders, b.badDirs = map[engine.Partition]kmsg.LeaderAndISRRequestTopicPartition{}, map[engine.Partition]bool{}
	s.regs[id] = BrokerInfo{ID: id, Epoch: b.epoch, Endpoints: []Endpoint{{Listener: "PLAINTEXT", SecurityProtocol: "PLAINTEXT", Host: "localhost", Port: 9092 + id}}}
	s.brokersChanged = true
	s.note("broker %d registered, epoch %d", id, b.epoch)
}

func (s *sim) stop(id int32) {
	s.brokers[id].alive = false
	delete(s.regs, id)
	s.brokersChanged = true
	s.note("broker %d died", id)
}

func (s *sim) kill() {
	if b, ok := s.pick(true); ok {
		s.stop(b.id)
	}
}

func (s *sim) revive() {
	if b, ok := s.pick(false); ok {
		s.start(b.id)
	}
}

func (s *sim) bounce() {
	if b, ok := s.pick(true); ok {
		s.stats["bounce"]++
		s.stop(b.id)
		s.start(b.id)
	}
}

// deliverRequest delivers the oldest request queued for a random broker.
func (s *sim) deliverRequest() {
	var ids []int32
	for _, id := range slices.Sorted(maps.Keys(s.queues)) {
		if len(s.queues[id]) > 0 {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return
	}
	id := ids[s.r.IntN(len(ids))]
	sr := s.queues[id][0]
	b := s.brokers[id]
	lost := s.faults && s.r.IntN(25) == 0
	if !b.alive {
		if !s.faults || s.r.IntN(3) > 0 {
			return // still trying
		}
		lost = true
	}
	if !s.faults || s.r.IntN(30) > 0 {
		s.queues[id] = s.queues[id][1:]
	} else {
		s.stats["request duplicated"]++ // sent again after a reconnection: delivered twice
	}
	var resp kmsg.Response
	if b.alive && (!lost || s.r.IntN(2) == 0) {
		resp = s.handle(b, sr.r)
	}
	s.note("%s to %d (epoch %d, controller %d): lost %v", describe(sr.r.Msg), id, sr.r.BrokerEpoch, sr.ctl.Epoch(), lost)
	s.stats[fmt.Sprintf("%T", sr.r.Msg)[6:]]++
	if sr.ctl != s.ctl {
		s.stats["request of a deposed controller"]++
		return
	}
	if lost {
		s.stats["request lost"]++
		s.step(Response{Request: sr.r, Err: errors.New("unreachable")})
		return
	}
	s.step(Response{Request: sr.r, Response: resp})
}

// handle is a broker's handling of a control request, as Kafka's.
func (s *sim) handle(b *simBroker, r Request) kmsg.Response {
	fence := func(ctlEpoch int32, brokerEpoch int64) int16 {
		switch {
		case brokerEpoch < b.epoch:
			return kerr.StaleBrokerEpoch.Code
		case ctlEpoch < b.ctlEpoch:
			return kerr.StaleControllerEpoch.Code
		}
		b.ctlEpoch = ctlEpoch
		return 0
	}
	switch m := r.Msg.(type) {
	case *kmsg.UpdateMetadataRequest:
		resp := &kmsg.UpdateMetadataResponse{Version: m.Version}
		if resp.ErrorCode = fence(m.ControllerEpoch, m.BrokerEpoch); resp.ErrorCode != 0 {
			return resp
		}
		b.live = nil
		for _, lb := range m.LiveBrokers {
			b.live = append(b.live, lb.ID)
		}
		for _, ts := range m.TopicStates {
			for _, ps := range ts.PartitionStates {
				tp := engine.Partition{Topic: ts.Topic, Partition: ps.Partition}
				if ps.Leader == LeaderDuringDelete {
					delete(b.cache, tp)
					continue
				}
				b.cache[tp] = ps
				b.ids[ts.Topic] = ts.TopicID
			}
		}
		return resp
	case *kmsg.LeaderAndISRRequest:
		resp := &kmsg.LeaderAndISRResponse{Version: m.Version}
		if resp.ErrorCode = fence(m.ControllerEpoch, m.BrokerEpoch); resp.ErrorCode != 0 {
			return resp
		}
		for _, ts := range m.TopicStates {
			rt := kmsg.LeaderAndISRResponseTopic{TopicID: ts.TopicID}
			for _, ps := range ts.PartitionStates {
				tp := engine.Partition{Topic: ts.Topic, Partition: ps.Partition}
				code := int16(0)
				cur, ok := b.leaders[tp]
				switch {
				case b.badDirs[tp]:
					code = kerr.KafkaStorageError.Code
				case s.faults && s.r.IntN(60) == 0:
					s.stats["disk failed"]++
					b.badDirs[tp] = true
					code = kerr.KafkaStorageError.Code
				case ok && b.logs[tp] == ts.TopicID && ps.LeaderEpoch < cur.LeaderEpoch:
					code = kerr.FencedLeaderEpoch.Code
				case ok && b.logs[tp] == ts.TopicID && ps.LeaderEpoch == cur.LeaderEpoch:
				default:
					b.leaders[tp] = ps
					b.logs[tp] = ts.TopicID
				}
				rt.Partitions = append(rt.Partitions, kmsg.LeaderAndISRResponseTopicPartition{Partition: ps.Partition, ErrorCode: code})
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	case *kmsg.StopReplicaRequest:
		resp := &kmsg.StopReplicaResponse{Version: m.Version}
		if resp.ErrorCode = fence(m.ControllerEpoch, m.BrokerEpoch); resp.ErrorCode != 0 {
			return resp
		}
		for _, ts := range m.Topics {
			for _, ps := range ts.PartitionStates {
				tp := engine.Partition{Topic: ts.Topic, Partition: ps.Partition}
				code := int16(0)
				if b.badDirs[tp] || s.faults && s.r.IntN(15) == 0 {
					code = kerr.KafkaStorageError.Code
					b.failedDelete = true
					s.stats["replica deletion failed"]++
				} else if ps.Delete {
					delete(b.logs, tp)
					delete(b.leaders, tp)
				}
				resp.Partitions = append(resp.Partitions, kmsg.StopReplicaResponsePartition{Topic: ts.Topic, Partition: ps.Partition, ErrorCode: code})
			}
		}
		return resp
	}
	s.fail("unknown request %T", r.Msg)
	return nil
}

// ---- topics

func (s *sim) replicas(rf int) []int32 {
	perm := s.r.Perm(simBrokers)[:rf]
	out := make([]int32, rf)
	for i, p := range perm {
		out[i] = int32(p)
	}
	return out
}

// createTopic creates a topic as a broker serving CreateTopics does: its
// assignment znode (explicit assignments may name dead brokers). Kafka
// refuses a name still marked for deletion.
func (s *sim) createTopic() {
	name := fmt.Sprintf("t%d", s.r.IntN(6))
	if _, ok := s.topics[name]; ok || s.markers[name] {
		return
	}
	a := TopicAssignment{Name: name, ID: s.newID()}
	if s.r.IntN(10) == 0 {
		a.ID = engine.TopicID{} // created by a Kafka older than 2.8
	}
	s.unclean[name] = s.r.IntN(3) == 0 // its config znode is written first
	rf := 1 + s.r.IntN(simBrokers)
	for range 1 + s.r.IntN(3) {
		a.Replicas = append(a.Replicas, s.replicas(rf))
	}
	s.topics[name] = a
	s.topicsChanged[name] = true
	s.note("topic %s created: %v", name, a.Replicas)
}

func (s *sim) anyTopic() (string, bool) {
	if len(s.topics) == 0 {
		return "", false
	}
	names := slices.Sorted(maps.Keys(s.topics))
	return names[s.r.IntN(len(names))], true
}

func (s *sim) addPartitions() {
	name, ok := s.anyTopic()
	if !ok {
		return
	}
	a := cloneAssignment(s.topics[name])
	a.Version++
	for range 1 + s.r.IntN(2) {
		a.Replicas = append(a.Replicas, s.replicas(len(a.Replicas[0])))
	}
	s.topics[name] = a
	s.topicsChanged[name] = true
	s.note("topic %s grown: %v", name, a.Replicas)
}

func (s *sim) deleteTopic() {
	name, ok := s.anyTopic()
	if !ok || s.r.IntN(8) == 0 {
		name = "ghost"
	}
	s.markers[name] = true
	s.deletesChanged = true
	s.note("topic %s marked for deletion", name)
}

// ---- the end

// quiesce stops the faults, runs every broker (restarting those whose
// failed disk or failed deletion waits for a restart, as Kafka's would),
// and delivers everything.
func (s *sim) quiesce() {
	s.faults = false
	s.note("quiesce")
	for _, b := range s.brokers {
		switch {
		case !b.alive:
			s.start(b.id)
		case b.failedDelete || len(b.badDirs) > 0 || b.shutting:
			// A broker in controlled shutdown goes, as it would once
			// answered; it comes back to lead again.
			s.stop(b.id)
			s.start(b.id)
		}
	}
	for range 100000 {
		busy := s.brokersChanged || s.deletesChanged || len(s.topicsChanged) > 0 || len(s.configsChanged) > 0 || len(s.writes) > 0
		s.notify()
		s.deliverWrite()
		for range s.queues {
			busy = busy || slices.ContainsFunc(slices.Collect(maps.Values(s.queues)), func(q []simRequest) bool { return len(q) > 0 })
			s.deliverRequest()
		}
		if !busy {
			return
		}
	}
	s.fail("does not quiesce")
}

// converged checks liveness once everything is delivered.
func (s *sim) converged() {
	c := s.ctl
	if rd := c.Ready(); !rd.Empty() || len(c.inflight) > 0 {
		s.fail("controller not idle: %+v, %d in flight", rd, len(c.inflight))
	}
	if len(s.markers) > 0 {
		s.fail("deletions pending: %v", slices.Sorted(maps.Keys(s.markers)))
	}
	for id, e := range s.elections {
		if e.ctl == c {
			s.fail("ElectLeaders %d not answered", id)
		}
	}
	if got, want := c.Topics(), slices.Sorted(maps.Keys(s.topics)); !slices.Equal(got, want) {
		s.fail("controller's topics %v, ZooKeeper's %v", got, want)
	}
	for name, za := range s.topics {
		a, _ := c.Topic(name)
		if a.ID != za.ID || a.ID == (engine.TopicID{}) || len(a.Replicas) != len(za.Replicas) {
			s.fail("topic %s: controller's %+v, ZooKeeper's %+v", name, a, za)
		}
		for p := range a.Replicas {
			tp := engine.Partition{Topic: name, Partition: int32(p)}
			st, ok := c.State(tp)
			if !ok || st.Leader == NoLeader {
				s.fail("partition %v offline with every broker live: %+v", tp, st)
			}
			if zs := s.states[tp]; !s.tampered[tp] && zs.Leader != st.Leader {
				s.fail("partition %v: controller's leader %d, ZooKeeper's %d", tp, st.Leader, zs.Leader)
			}
		}
	}
	for _, b := range s.brokers {
		if !slices.Equal(b.live, c.LiveBrokers()) {
			s.fail("broker %d: live brokers %v, controller's %v", b.id, b.live, c.LiveBrokers())
		}
		n := 0
		for _, name := range c.Topics() {
			a, _ := c.Topic(name)
			for p, replicas := range a.Replicas {
				tp := engine.Partition{Topic: name, Partition: int32(p)}
				st, _ := c.State(tp)
				ps, ok := b.cache[tp]
				n++
				if !ok || ps.Leader != st.Leader || ps.LeaderEpoch != st.LeaderEpoch || ps.ZKVersion != st.PartitionEpoch ||
					!slices.Equal(ps.ISR, st.ISR) || !slices.Equal(ps.Replicas, replicas) || len(ps.OfflineReplicas) > 0 || b.ids[name] != a.ID {
					s.fail("broker %d: metadata of %v %+v, controller's %+v", b.id, tp, ps, st)
				}
				if !slices.Contains(replicas, b.id) || s.tampered[tp] {
					// A broker keeps the higher leader epoch of a partition
					// whose state znode someone deleted: the controller that
					// creates it again may not know that epoch.
					continue
				}
				if l := b.leaders[tp]; l.Leader != st.Leader || l.LeaderEpoch != st.LeaderEpoch || b.logs[tp] != a.ID {
					s.fail("broker %d: replica %v %+v (log of %v), controller's %+v", b.id, tp, l, b.logs[tp], st)
				}
			}
		}
		if len(b.cache) != n {
			var extra []engine.Partition
			for tp := range b.cache {
				if a, ok := c.Topic(tp.Topic); !ok || int(tp.Partition) >= len(a.Replicas) {
					extra = append(extra, tp)
				}
			}
			s.fail("broker %d: metadata of %d partitions, controller has %d: %v too many", b.id, len(b.cache), n, extra)
		}
		for tp, id := range b.logs {
			a, ok := c.Topic(tp.Topic)
			if !ok || a.ID != id || int(tp.Partition) >= len(a.Replicas) || !slices.Contains(a.Replicas[tp.Partition], b.id) {
				if s.movedAway(id, tp.Partition, b.id) {
					// Removed by a reassignment that completed while the
					// broker was down, under a controller since deposed
					// (reassign.go): left on disk, as Kafka leaves it, also
					// when its topic is deleted (and re-created) since.
					s.stats["stray after reassignment"]++
					continue
				}
				s.fail("broker %d: stray log %v of topic id %v", b.id, tp, id)
			}
		}
	}
}

// seeds returns the seeds to run: -sim.seed alone, or -sim.seeds of them.
func seeds() []uint64 {
	if *simSeed != 0 {
		return []uint64{*simSeed}
	}
	out := make([]uint64, *simSeeds)
	for i := range out {
		out[i] = uint64(i + 1)
	}
	return out
}

// TestSimulator runs the simulator over many seeds, and checks that the
// runs went through every path they are meant to.
func TestSimulator(t *testing.T) {
	stats := map[string]int{}
	for _, seed := range seeds() {
		if err := runSim(seed, *simSteps, Options{}, stats); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(stats)) {
		t.Logf("%8d %s", stats[k], k)
	}
	if *simSeed != 0 {
		return
	}
	for _, k := range []string{
		"CreateState ok", "CreateState conflict", "CreateState failed", "CreateState fenced",
		"UpdateState ok offline", "UpdateState ok elected", "UpdateState conflict", "UpdateState failed", "UpdateState fenced",
		"SetAssignment ok", "SetAssignment conflict", "DeleteTopic ok", "DeleteTopic failed", "RemoveDeleteMarker ok",
		"LeaderAndISRRequest", "UpdateMetadataRequest", "StopReplicaRequest", "request lost", "request duplicated", "request of a deposed controller",
		"failover", "bounce", "replica deletion failed", "disk failed",
		"UpdateState ok isr", "AlterPartition shrink ok", "AlterPartition expand ok", "AlterPartition idempotent ok",
		"AlterPartition FENCED_LEADER_EPOCH", "AlterPartition INVALID_UPDATE_VERSION", "AlterPartition STALE_BROKER_EPOCH",
		"AlterPartition INELIGIBLE_REPLICA", "AlterPartition OPERATION_NOT_ATTEMPTED", "AlterPartition UNKNOWN_TOPIC_ID",
		"AlterPartition NOT_CONTROLLER", "AlterPartition INVALID_REQUEST",
		"UpdateState ok unclean", "TopicConfigs", "ImbalanceCheck moved",
		"ElectLeaders PREFERRED ok", "ElectLeaders UNCLEAN ok", "ElectLeaders PREFERRED ELECTION_NOT_NEEDED", "ElectLeaders UNCLEAN ELECTION_NOT_NEEDED",
		"ElectLeaders PREFERRED PREFERRED_LEADER_NOT_AVAILABLE", "ElectLeaders UNCLEAN ELIGIBLE_LEADERS_NOT_AVAILABLE",
		"ElectLeaders PREFERRED UNKNOWN_TOPIC_OR_PARTITION", "ElectLeaders PREFERRED INVALID_TOPIC_EXCEPTION",
		"ElectLeaders PREFERRED NOT_CONTROLLER",
		"reassign NONE", "reassign cancel NONE", "reassign INVALID_REPLICA_ASSIGNMENT", "reassign UNKNOWN_TOPIC_OR_PARTITION",
		"reassign NO_REASSIGNMENT_IN_PROGRESS", "reassign NOT_CONTROLLER", "reassignment completed", "reassignment resumed",
	} {
		if stats[k] == 0 {
			t.Errorf("no %q in %d seeds", k, len(seeds()))
		}
	}
}

// TestSimulatorCatchesBrokenRules proves the checks can fail: variants of
// the election rule that break an invariant or liveness are caught within
// the seeds a run covers.
func TestSimulatorCatchesBrokenRules(t *testing.T) {
	for name, c := range map[string]struct {
		rule ElectionRule
		want string
	}{
		"dead broker as leader": {func(in ElectionInput) (int32, []int32) {
			if in.State == nil {
				return in.Replicas[0], []int32{in.Replicas[0]} // the first replica, live or not
			}
			return Elect(in)
		}, "not live|is in controlled shutdown"},
		"ISR emptied": {func(in ElectionInput) (int32, []int32) {
			leader, isr := Elect(in)
			if leader == NoLeader && in.State != nil {
				return NoLeader, nil // Kafka keeps the last ISR
			}
			return leader, isr
		}, "empty ISR"},
		"unclean without the setting": {func(in ElectionInput) (int32, []int32) {
			in.Unclean = true
			return Elect(in)
		}, "not allowed for the topic"},
		"unclean keeps the old ISR": {func(in ElectionInput) (int32, []int32) {
			leader, isr := Elect(in)
			if in.State != nil && leader != NoLeader && !slices.Contains(in.State.ISR, leader) {
				return leader, append(slices.Clone(in.State.ISR), leader)
			}
			return leader, isr
		}, "not the leader alone"},
		"unclean before the ISR is gone": {func(in ElectionInput) (int32, []int32) {
			if in.Unclean && in.State != nil {
				for _, r := range in.Replicas {
					if in.Live(r) && !slices.Contains(in.State.ISR, r) {
						return r, []int32{r}
					}
				}
			}
			return Elect(in)
		}, "live"},
		"offline for good": {func(in ElectionInput) (int32, []int32) {
			if in.State != nil && in.State.Leader == NoLeader {
				return NoLeader, in.State.ISR // never elects an offline partition
			}
			return Elect(in)
		}, "offline with every broker live"},
	} {
		t.Run(name, func(t *testing.T) {
			for seed := uint64(1); seed <= 200; seed++ {
				err := runSim(seed, *simSteps, Options{Elect: c.rule}, nil)
				if err == nil {
					continue
				}
				if !slices.ContainsFunc(strings.Split(c.want, "|"), func(w string) bool { return strings.Contains(err.Error(), w) }) {
					t.Fatalf("caught, but not as %q: %v", c.want, err)
				}
				return
			}
			t.Fatalf("not caught in 200 seeds")
		})
	}
}

// describe is a short form of a request, for the trail.
func describe(m kmsg.Request) string {
	var b strings.Builder
	switch m := m.(type) {
	case *kmsg.UpdateMetadataRequest:
		b.WriteString("UpdateMetadata")
		for _, ts := range m.TopicStates {
			for _, ps := range ts.PartitionStates {
				fmt.Fprintf(&b, " %s-%d:%d@%d", ts.Topic, ps.Partition, ps.Leader, ps.LeaderEpoch)
			}
		}
	case *kmsg.LeaderAndISRRequest:
		b.WriteString("LeaderAndIsr")
		for _, ts := range m.TopicStates {
			for _, ps := range ts.PartitionStates {
				fmt.Fprintf(&b, " %s-%d:%d@%d", ts.Topic, ps.Partition, ps.Leader, ps.LeaderEpoch)
			}
		}
	case *kmsg.StopReplicaRequest:
		b.WriteString("StopReplica")
		for _, ts := range m.Topics {
			for _, ps := range ts.PartitionStates {
				fmt.Fprintf(&b, " %s-%d", ts.Topic, ps.Partition)
			}
		}
	}
	return b.String()
}

// ---- leaders' ISR changes

// simAlter is an AlterPartition request in flight.
type simAlter struct {
	broker int32
	epoch  int64
	tp     engine.Partition
	isr    []int32
	kind   string // shrink, expand, idempotent or other
}

// alterPartition has a live broker that leads a partition, as its
// LeaderAndIsr said, ask for an ISR change: mostly a shrink or an
// expansion of the ISR it knows, at the epochs it knows, and sometimes a
// stale or malformed one.
func (s *sim) alterPartition() { s.askISRChange(false) }

// catchUp has a leader ask to add a live follower that caught up, the
// preferred replica first (a preferred election can then move leadership
// back), at the epochs it knows: the common case of a follower's return.
func (s *sim) catchUp() { s.askISRChange(true) }

// liveOut returns ps's replicas that are live and not in its ISR.
func (s *sim) liveOut(ps kmsg.LeaderAndISRRequestTopicPartition) []int32 {
	var out []int32
	for _, r := range ps.Replicas {
		if _, ok := s.regs[r]; ok && !slices.Contains(ps.ISR, r) {
			out = append(out, r)
		}
	}
	return out
}

func (s *sim) askISRChange(catchUp bool) {
	type led struct {
		b  *simBroker
		tp engine.Partition
	}
	var leds []led
	for _, b := range s.brokers {
		if !b.alive {
			continue
		}
		for _, tp := range slices.SortedFunc(maps.Keys(b.leaders), cmpPartition) {
			if b.leaders[tp].Leader == b.id && (!catchUp || len(s.liveOut(b.leaders[tp])) > 0) {
				leds = append(leds, led{b, tp})
			}
		}
	}
	if len(leds) == 0 {
		return
	}
	l := leds[s.r.IntN(len(leds))]
	b, tp := l.b, l.tp
	ps := b.leaders[tp]
	isr := slices.Clone(ps.ISR)
	kind := "other"
	var out []int32
	for _, r := range ps.Replicas {
		if !slices.Contains(isr, r) {
			out = append(out, r)
		}
	}
	switch n := s.r.IntN(10); {
	case catchUp:
		kind = "expand"
		live := s.liveOut(ps)
		add := live[s.r.IntN(len(live))]
		if slices.Contains(live, ps.Replicas[0]) {
			add = ps.Replicas[0]
		}
		isr = append(isr, add)
	case n < 5 && len(isr) > 1:
		kind = "shrink"
		isr = slices.DeleteFunc(isr, func(r int32) bool { return r != b.id && s.r.IntN(2) == 0 })
		if len(isr) == len(ps.ISR) {
			isr = slices.DeleteFunc(isr, func(r int32) bool { return r != b.id })
		}
	case n < 8 && len(out) > 0:
		kind = "expand"
		isr = append(isr, out[s.r.IntN(len(out))])
	case n == 8:
		kind = "idempotent"
	default:
		isr = append(isr, ps.Replicas[s.r.IntN(len(ps.Replicas))]) // maybe twice
	}
	req := kmsg.NewPtrAlterPartitionRequest()
	req.Version = int16(s.r.IntN(4))
	req.BrokerID, req.BrokerEpoch = b.id, b.epoch
	rt := kmsg.AlterPartitionRequestTopic{Topic: tp.Topic, TopicID: b.logs[tp]}
	rp := kmsg.AlterPartitionRequestTopicPartition{Partition: tp.Partition, LeaderEpoch: ps.LeaderEpoch, PartitionEpoch: ps.ZKVersion}
	switch s.r.IntN(16) {
	case 0:
		req.BrokerEpoch--
	case 1:
		rp.LeaderEpoch--
	case 2:
		rp.PartitionEpoch--
	case 3:
		rt.TopicID = engine.TopicID{0xba, 0xd}
	}
	if catchUp {
		req.BrokerEpoch, rp.LeaderEpoch, rp.PartitionEpoch, rt.TopicID = b.epoch, ps.LeaderEpoch, ps.ZKVersion, b.logs[tp]
	}
	if req.Version < 3 {
		rp.NewISR = isr
	} else {
		for _, r := range isr {
			rp.NewEpochISR = append(rp.NewEpochISR, kmsg.AlterPartitionRequestTopicPartitionNewEpochISR{BrokerID: r, BrokerEpoch: s.regs[r].Epoch})
		}
	}
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	s.nextAlter++
	s.alters[s.nextAlter] = simAlter{broker: b.id, epoch: b.epoch, tp: tp, isr: isr, kind: kind}
	s.note("AlterPartition %d v%d from %d: %v ISR %v at leader epoch %d, partition epoch %d", s.nextAlter, req.Version, b.id, tp, isr, rp.LeaderEpoch, rp.PartitionEpoch)
	s.step(AlterPartition{ID: s.nextAlter, Request: req})
}

// answered takes a controller's answer to a leader: a state it says was
// written is ZooKeeper's (unless someone else wrote the znode since), with
// the ISR asked for, and the leader takes it as Kafka's Partition does
// (same leader epoch, a partition epoch not older).
func (s *sim) answered(a Answer) {
	sa, ok := s.alters[a.ID]
	if !ok {
		s.fail("answer to AlterPartition %d, not asked or answered twice", a.ID)
	}
	delete(s.alters, a.ID)
	resp := a.Response
	if resp.ErrorCode != 0 {
		s.stats["AlterPartition "+kerr.ErrorForCode(resp.ErrorCode).(*kerr.Error).Message]++
		s.note("AlterPartition %d answered %v", a.ID, kerr.ErrorForCode(resp.ErrorCode))
		return
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		s.fail("AlterPartition %d answered with %d topics", a.ID, len(resp.Topics))
	}
	rp := resp.Topics[0].Partitions[0]
	s.note("AlterPartition %d answered %+v", a.ID, rp)
	if rp.ErrorCode != 0 {
		s.stats["AlterPartition "+kerr.ErrorForCode(rp.ErrorCode).(*kerr.Error).Message]++
		return
	}
	s.stats["AlterPartition "+sa.kind+" ok"]++
	if rp.LeaderID != sa.broker || !slices.Equal(rp.ISR, sa.isr) {
		s.fail("AlterPartition %d of %v asked ISR %v from %d, answered %+v", a.ID, sa.tp, sa.isr, sa.broker, rp)
	}
	if zs, ok := s.states[sa.tp]; ok && !s.tampered[sa.tp] && zs.PartitionEpoch == rp.PartitionEpoch &&
		(zs.Leader != rp.LeaderID || zs.LeaderEpoch != rp.LeaderEpoch || !slices.Equal(zs.ISR, rp.ISR)) {
		s.fail("AlterPartition %d of %v answered %+v, ZooKeeper has %+v", a.ID, sa.tp, rp, zs)
	}
	b := s.brokers[sa.broker]
	if l, ok := b.leaders[sa.tp]; ok && b.alive && b.epoch == sa.epoch && l.LeaderEpoch == rp.LeaderEpoch && l.ZKVersion <= rp.PartitionEpoch {
		l.ISR, l.ZKVersion = slices.Clone(rp.ISR), rp.PartitionEpoch
		b.leaders[sa.tp] = l
	}
}

// ---- controlled shutdown

// controlledShutdown sends a live broker's ControlledShutdown, sometimes
// at a stale broker epoch.
func (s *sim) controlledShutdown() {
	b, ok := s.pick(true)
	if !ok {
		return
	}
	req := &kmsg.ControlledShutdownRequest{Version: int16(s.r.IntN(4)), BrokerID: b.id, BrokerEpoch: b.epoch}
	if s.r.IntN(8) == 0 {
		req.BrokerEpoch--
	}
	if req.Version < 2 || req.BrokerEpoch == b.epoch {
		b.shutting = true // accepted: v0-1 carry no broker epoch
	}
	s.nextAlter++
	s.shutdowns[s.nextAlter] = b.id
	s.note("ControlledShutdown %d v%d from %d at epoch %d", s.nextAlter, req.Version, b.id, req.BrokerEpoch)
	s.step(ControlledShutdown{ID: s.nextAlter, Request: req})
}

// shutdownAnswered checks a ControlledShutdown's answer: each partition
// it says the broker still leads, ZooKeeper has it leading.
func (s *sim) shutdownAnswered(a ShutdownAnswer) {
	id, ok := s.shutdowns[a.ID]
	if !ok {
		s.fail("answer to ControlledShutdown %d, not asked or answered twice", a.ID)
	}
	delete(s.shutdowns, a.ID)
	resp := a.Response
	s.note("ControlledShutdown %d answered error %d, %d remaining", a.ID, resp.ErrorCode, len(resp.PartitionsRemaining))
	if resp.ErrorCode != 0 {
		s.stats["ControlledShutdown "+kerr.ErrorForCode(resp.ErrorCode).(*kerr.Error).Message]++
		return
	}
	s.stats["ControlledShutdown ok"]++
	if len(resp.PartitionsRemaining) > 0 {
		s.stats["ControlledShutdown with partitions remaining"]++
	}
	for _, p := range resp.PartitionsRemaining {
		tp := engine.Partition{Topic: p.Topic, Partition: p.Partition}
		if zs, ok := s.states[tp]; ok && !s.tampered[tp] && zs.Leader != id {
			s.fail("ControlledShutdown %d: %v said led by %d, ZooKeeper has %+v", a.ID, tp, id, zs)
		}
	}
}
