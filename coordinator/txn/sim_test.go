package txn

// A seeded simulator of one __transaction_state partition's coordinator:
// producers sharing transactional ids (so they fence each other), records
// that are written, fail, or time out after being written or not, markers
// that fail and are retried or find their partition gone, transactions
// left open past their timeout, ids expiring, and the coordinator's broker
// failing over (a new Coordinator loads the partition's records). The
// checker runs after every event; a failing seed replays exactly.

import (
	"container/heap"
	"fmt"
	"maps"
	"math/rand"
	"slices"
	"sort"
	"testing"

	"github.com/sluice-io/sluice/engine"
	"github.com/twmb/franz-go/pkg/kerr"
)

var simTrace func(string, ...any)

type simConfig struct {
	clients, ids, partitions int
	steps                    int
	faults                   bool
	// mutate, when set, breaks each Ready before the driver sees it: the
	// checker must then fail (the proof that it can).
	mutate func(*Ready)
}

type simEvent struct {
	at, seq int64
	gen     int // coordinator generation it belongs to (0: any)
	ev      Event
	client  int // >= 0: the client acts instead of ev
}

type simQueue []simEvent

func (q simQueue) Len() int { return len(q) }
func (q simQueue) Less(i, j int) bool {
	return q[i].at < q[j].at || q[i].at == q[j].at && q[i].seq < q[j].seq
}
func (q simQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *simQueue) Push(x any)   { *q = append(*q, x.(simEvent)) }
func (q *simQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}

type simClient struct {
	id       string
	pid      int64
	epoch    int16
	inTxn    bool
	busy     bool // a request outstanding
	lastReq  Event
	finished bool // draining: starts no new transaction
}

type simRecord struct {
	key, value []byte
}

type sim struct {
	t        *testing.T
	cfg      simConfig
	rnd      *rand.Rand
	now, seq int64
	q        simQueue
	c        *Coordinator
	gen      int
	epoch    int32
	nextPID  int64
	log      []simRecord // the partition: what was durably appended
	lastEnd  int64       // when the last write's result is due (results come in order)
	clients  []*simClient
	reqs     map[uint64]int // outstanding request -> client
	nextReq  uint64
	faults   bool
	err      error
	// checker state
	last       map[string]*Metadata // last acknowledged (or loaded) record per id
	pidOf      map[int64]string
	fencedTo   map[int64]int16 // per producer id: epochs below are fenced
	initEpochs map[int64]int16 // highest epoch an InitProducerId answered
	written    map[uint64]Write
	commits    int
	aborts     int
}

func newSim(t *testing.T, seed int64, cfg simConfig) *sim {
	s := &sim{t: t, cfg: cfg, rnd: rand.New(rand.NewSource(seed)), nextPID: 100, faults: cfg.faults,
		reqs: map[uint64]int{}, last: map[string]*Metadata{}, pidOf: map[int64]string{},
		fencedTo: map[int64]int16{}, initEpochs: map[int64]int16{}, written: map[uint64]Write{}}
	for i := range cfg.clients {
		s.clients = append(s.clients, &simClient{id: fmt.Sprintf("tx%d", i%cfg.ids), pid: -1, epoch: -1})
		s.schedule(int64(s.rnd.Intn(50)), simEvent{client: i})
	}
	s.failover()
	return s
}

func (s *sim) schedule(after int64, e simEvent) {
	s.seq++
	e.at, e.seq = s.now+after, s.seq
	heap.Push(&s.q, e)
}

func (s *sim) opts() Options {
	return Options{ExpirationMs: 3000, NewProducerID: func() (int64, int16) {
		if s.faults && s.rnd.Intn(30) == 0 {
			return -1, kerr.CoordinatorLoadInProgress.Code
		}
		s.nextPID++
		return s.nextPID, 0
	}}
}

// failover starts a new coordinator generation that loads the log; the
// old one's outstanding requests are answered NOT_COORDINATOR.
func (s *sim) failover() {
	// The old leader's appends in flight end now, in order: written or
	// not, but never after the new leader's (its leader epoch fences them).
	var inflight, rest simQueue
	for _, e := range s.q {
		if _, ok := e.ev.(simWrite); ok && e.gen == s.gen {
			inflight = append(inflight, e)
		} else {
			rest = append(rest, e)
		}
	}
	sort.Sort(inflight)
	for _, e := range inflight {
		if w := e.ev.(simWrite); w.persist {
			s.appendLog(w.res.ID)
		}
	}
	s.q = rest
	heap.Init(&s.q)
	s.gen++
	s.epoch++
	s.c = New(0, s.epoch, s.opts())
	clear(s.last)
	for _, r := range s.log {
		if err := s.c.Load(r.key, r.value); err != nil {
			s.fail("load: %v", err)
		}
		m, tomb, _ := DecodeRecord(r.key, r.value)
		if tomb {
			delete(s.last, m.TransactionalID)
			continue
		}
		// The log may hold records whose writes were answered as failed
		// (timed out, yet appended), as Kafka's may: they are the state
		// now, but neither fence an epoch nor order the epochs.
		s.last[m.TransactionalID] = &m
		s.pidOf[m.ProducerID] = m.TransactionalID
	}
	for _, req := range slices.Sorted(maps.Keys(s.reqs)) {
		ci := s.reqs[req]
		delete(s.reqs, req)
		s.react(s.clients[ci], Answer{Req: req, Code: kerr.NotCoordinator.Code, ProducerID: -1, Epoch: -1})
	}
	s.lastEnd = s.now
	s.drive(Loaded{})
}

func (s *sim) fail(format string, args ...any) {
	if s.err == nil {
		s.err = fmt.Errorf("t=%d: "+format, append([]any{s.now}, args...)...)
	}
}

// adopt records m, whose write was acknowledged, as the last written state
// of its id: acknowledged epochs of a producer id only rise, and fence the
// epochs below them.
func (s *sim) adopt(m Metadata) {
	if prev, ok := s.last[m.TransactionalID]; ok && prev.ProducerID == m.ProducerID && m.Epoch < prev.Epoch {
		s.fail("%s: epoch of producer %d fell from %d to %d", m.TransactionalID, m.ProducerID, prev.Epoch, m.Epoch)
	}
	s.last[m.TransactionalID] = &m
	if simTrace != nil {
		simTrace("t=%d adopt %s %d %d %v", s.now, m.TransactionalID, m.ProducerID, m.Epoch, m.State)
	}
	s.pidOf[m.ProducerID] = m.TransactionalID
	s.fencedTo[m.ProducerID] = max(s.fencedTo[m.ProducerID], m.Epoch)
}

// drive steps ev into the coordinator and performs its Ready.
func (s *sim) drive(ev Event) {
	s.c.Step(Tick{NowMs: s.now})
	s.c.Step(ev)
	rd := s.c.Ready()
	s.c.Advance(rd)
	if s.cfg.mutate != nil {
		s.cfg.mutate(&rd)
	}
	for _, w := range rd.Writes {
		s.write(w)
	}
	for _, m := range rd.Markers {
		s.marker(m)
	}
	for _, a := range rd.Answers {
		ci, ok := s.reqs[a.Req]
		if !ok {
			s.fail("request %d answered twice or never asked", a.Req)
			continue
		}
		delete(s.reqs, a.Req)
		s.check(s.clients[ci], a)
		s.react(s.clients[ci], a)
	}
}

func (s *sim) write(w Write) {
	s.written[w.ID] = w
	persist, code := true, int16(0)
	if s.faults {
		switch s.rnd.Intn(20) {
		case 0:
			persist, code = false, kerr.NotEnoughReplicas.Code
		case 1:
			code = kerr.RequestTimedOut.Code // written, but its outcome unknown
		case 2:
			persist, code = false, kerr.RequestTimedOut.Code
		}
	}
	s.lastEnd = max(s.lastEnd, s.now) + 1 + int64(s.rnd.Intn(5))
	s.seq++
	heap.Push(&s.q, simEvent{at: s.lastEnd, seq: s.seq, gen: s.gen, client: -1,
		ev: simWrite{WriteResult{ID: w.ID, Code: code}, persist}})
}

// simWrite is a write's result as the partition gives it; persist says
// whether the record is in the log.
type simWrite struct {
	res     WriteResult
	persist bool
}

func (simWrite) event() {}

func (s *sim) marker(m Marker) {
	id, ok := s.pidOf[m.ProducerID]
	last := s.last[id]
	switch {
	case !ok || last == nil || last.ProducerID != m.ProducerID:
		s.fail("marker %+v of a producer whose last record is %+v", m, last)
	case last.State != PrepareCommit && last.State != PrepareAbort:
		s.fail("marker %+v sent while %s's last written record is %v", m, id, last.State)
	case (last.State == PrepareCommit) != m.Commit || last.Epoch != m.Epoch:
		s.fail("marker %+v disagrees with %s's record %v epoch %d", m, id, last.State, last.Epoch)
	case m.CoordinatorEpoch != s.epoch:
		s.fail("marker %+v under coordinator epoch %d", m, s.epoch)
	}
	res := MarkerResult{ID: m.ID}
	if s.faults {
		switch s.rnd.Intn(10) {
		case 0, 1:
			res.Code = kerr.NotLeaderForPartition.Code
		case 2:
			res.Code, res.Gone = kerr.UnknownTopicOrPartition.Code, s.rnd.Intn(5) == 0
		}
	}
	s.schedule(1+int64(s.rnd.Intn(20)), simEvent{gen: s.gen, client: -1, ev: res})
}

// check holds an answer against what was written and fenced.
func (s *sim) check(cl *simClient, a Answer) {
	switch r := cl.lastReq.(type) {
	case InitProducerID:
		if a.Code != 0 {
			return
		}
		if e, ok := s.initEpochs[a.ProducerID]; ok && a.Epoch <= e {
			s.fail("InitProducerId of %s answered epoch %d after %d", r.TransactionalID, a.Epoch, e)
		}
		if a.Epoch < s.fencedTo[a.ProducerID] {
			s.fail("InitProducerId of %s answered fenced epoch %d < %d", r.TransactionalID, a.Epoch, s.fencedTo[a.ProducerID])
		}
		s.initEpochs[a.ProducerID] = a.Epoch
		s.fencedTo[a.ProducerID] = max(s.fencedTo[a.ProducerID], a.Epoch)
	case AddPartitions:
		s.checkEpoch(a, r.ProducerID, r.Epoch, "AddPartitions")
	case AddOffsets:
		s.checkEpoch(a, r.ProducerID, r.Epoch, "AddOffsets")
	case EndTxn:
		s.checkEpoch(a, r.ProducerID, r.Epoch, "EndTxn")
		if a.Code != 0 {
			return
		}
		m := s.last[r.TransactionalID]
		want := map[bool][2]State{true: {PrepareCommit, CompleteCommit}, false: {PrepareAbort, CompleteAbort}}[r.Commit]
		if m == nil || m.ProducerID != r.ProducerID || m.Epoch != r.Epoch || m.State != want[0] && m.State != want[1] {
			s.fail("EndTxn(commit=%v) of %s epoch %d succeeded, last record %+v", r.Commit, r.TransactionalID, r.Epoch, m)
		}
		if r.Commit {
			s.commits++
		} else {
			s.aborts++
		}
	}
}

func (s *sim) checkEpoch(a Answer, pid int64, epoch int16, what string) {
	if a.Code == 0 && epoch < s.fencedTo[pid] {
		s.fail("%s of producer %d epoch %d succeeded, fenced to %d", what, pid, epoch, s.fencedTo[pid])
	}
}

// react is the client's next move after an answer.
func (s *sim) react(cl *simClient, a Answer) {
	cl.busy = false
	switch a.Code {
	case 0:
		switch cl.lastReq.(type) {
		case InitProducerID:
			cl.pid, cl.epoch, cl.inTxn = a.ProducerID, a.Epoch, false
		case AddPartitions, AddOffsets:
			cl.inTxn = true
		case EndTxn:
			cl.inTxn = false
		}
		cl.lastReq = nil
	case kerr.ConcurrentTransactions.Code, kerr.CoordinatorNotAvailable.Code, kerr.NotCoordinator.Code,
		kerr.CoordinatorLoadInProgress.Code:
		// retried as it was
	default: // fenced, or lost its transaction: start over
		cl.pid, cl.epoch, cl.inTxn, cl.lastReq = -1, -1, false, nil
	}
	s.schedule(1+int64(s.rnd.Intn(30)), simEvent{client: s.indexOf(cl)})
}

func (s *sim) indexOf(cl *simClient) int {
	for i, c := range s.clients {
		if c == cl {
			return i
		}
	}
	panic("unknown client")
}

// act sends the client's next request.
func (s *sim) act(ci int) {
	cl := s.clients[ci]
	if cl.busy {
		return
	}
	if cl.lastReq == nil {
		switch {
		case cl.pid < 0:
			cl.lastReq = InitProducerID{Version: 4, TransactionalID: cl.id, TimeoutMs: 200 + int32(s.rnd.Intn(300)), ProducerID: -1, Epoch: -1}
		case cl.finished && !cl.inTxn:
			return
		case !cl.inTxn || s.rnd.Intn(3) == 0:
			var ps []engine.Partition
			for range 1 + s.rnd.Intn(3) {
				ps = append(ps, engine.Partition{Topic: "t", Partition: int32(s.rnd.Intn(s.cfg.partitions))})
			}
			cl.lastReq = AddPartitions{Version: 3, TransactionalID: cl.id, ProducerID: cl.pid, Epoch: cl.epoch, Partitions: ps}
			if s.rnd.Intn(6) == 0 {
				cl.lastReq = AddOffsets{Version: 3, TransactionalID: cl.id, ProducerID: cl.pid, Epoch: cl.epoch, Group: fmt.Sprint("g", s.rnd.Intn(3))}
			}
		case !cl.finished && s.faults && s.rnd.Intn(8) == 0:
			// Stall: leave the transaction open, maybe past its timeout.
			s.schedule(100+int64(s.rnd.Intn(600)), simEvent{client: ci})
			return
		default:
			cl.lastReq = EndTxn{Version: 3, TransactionalID: cl.id, ProducerID: cl.pid, Epoch: cl.epoch, Commit: s.rnd.Intn(3) > 0}
		}
	}
	s.nextReq++
	req := s.nextReq
	cl.lastReq = cl.lastReq.(simRequest).withReq(req)
	cl.busy = true
	s.reqs[req] = ci
	s.drive(cl.lastReq)
}

// simRequest is a request whose Req the simulator sets.
type simRequest interface{ withReq(uint64) Event }

func (r InitProducerID) withReq(n uint64) Event { r.Req = n; return r }
func (r AddPartitions) withReq(n uint64) Event  { r.Req = n; return r }
func (r AddOffsets) withReq(n uint64) Event     { r.Req = n; return r }
func (r EndTxn) withReq(n uint64) Event         { r.Req = n; return r }

// run delivers events until steps are done or the queue is empty.
func (s *sim) run(steps int) {
	for i := 0; i < steps && s.q.Len() > 0 && s.err == nil; i++ {
		e := heap.Pop(&s.q).(simEvent)
		s.now = max(s.now, e.at)
		switch {
		case e.client >= 0:
			s.act(e.client)
		case e.gen != 0 && e.gen != s.gen:
			// a marker's result for a coordinator gone
		default:
			switch ev := e.ev.(type) {
			case simWrite:
				w := s.written[ev.res.ID]
				if ev.persist {
					s.appendLog(ev.res.ID)
				}
				if ev.res.Code == 0 {
					m, tomb, err := DecodeRecord(w.Key, w.Value)
					if err != nil {
						s.fail("write %d: %v", w.ID, err)
					}
					if tomb {
						delete(s.last, w.TransactionalID)
					} else {
						s.adopt(m)
					}
				}
				s.drive(ev.res)
			case simPeriodic:
				s.drive(AbortTimedOut{})
				if s.now%1000 == 0 {
					s.drive(ExpireIDs{})
				}
				s.schedule(50, e)
			default:
				s.drive(ev)
			}
		}
		if s.faults && s.rnd.Intn(400) == 0 {
			s.failover()
		}
	}
}

func (s *sim) appendLog(id uint64) {
	w := s.written[id]
	s.log = append(s.log, simRecord{w.Key, w.Value})
	delete(s.written, id)
}

// simPeriodic runs the timeout check every 50 ms and the expiry check
// every second, rescheduling itself.
type simPeriodic struct{}

func (simPeriodic) event() {}

func runSim(t *testing.T, seed int64, cfg simConfig) *sim {
	s := newSim(t, seed, cfg)
	s.schedule(50, simEvent{client: -1, ev: simPeriodic{}})
	s.run(cfg.steps)
	// Drain: no more faults, clients finish their transactions, the
	// checks run past every timeout.
	s.faults = false
	for _, cl := range s.clients {
		cl.finished = true
	}
	for i := range s.clients {
		s.schedule(1, simEvent{client: i})
	}
	s.run(4000)
	if s.err != nil {
		return s
	}
	for _, id := range s.c.IDs() {
		st := s.c.txns[id]
		if st.pending != nil || st.meta.State != Empty && st.meta.State != CompleteCommit && st.meta.State != CompleteAbort {
			s.fail("after draining %s is %v (pending %v)", id, st.meta.State, st.pending != nil)
		}
	}
	if len(s.reqs) != 0 {
		s.fail("after draining %d requests unanswered", len(s.reqs))
	}
	return s
}

func TestSim(t *testing.T) {
	commits, aborts := 0, 0
	for seed := int64(1); seed <= 200; seed++ {
		s := runSim(t, seed, simConfig{clients: 6, ids: 3, partitions: 5, steps: 3000, faults: true})
		if s.err != nil {
			t.Fatalf("seed %d: %v", seed, s.err)
		}
		commits += s.commits
		aborts += s.aborts
	}
	if commits == 0 || aborts == 0 {
		t.Fatalf("%d commits, %d aborts answered: the simulation does not exercise both", commits, aborts)
	}
}

// TestSimCatchesBrokenCores proves the checker: cores broken on purpose
// (by rewriting their Ready) fail it.
func TestSimCatchesBrokenCores(t *testing.T) {
	for name, mutate := range map[string]func(*Ready){
		"marker outcome flipped": func(rd *Ready) {
			for i := range rd.Markers {
				rd.Markers[i].Commit = !rd.Markers[i].Commit
			}
		},
		"fenced answered success": func(rd *Ready) {
			for i := range rd.Answers {
				if rd.Answers[i].Code == kerr.ProducerFenced.Code {
					rd.Answers[i].Code = 0
				}
			}
		},
		"answer dropped": func(rd *Ready) {
			if len(rd.Answers) > 0 {
				rd.Answers = rd.Answers[1:]
			}
		},
	} {
		caught := false
		for seed := int64(1); seed <= 20 && !caught; seed++ {
			caught = runSim(t, seed, simConfig{clients: 6, ids: 3, partitions: 5, steps: 3000, faults: true, mutate: mutate}).err != nil
		}
		if !caught {
			t.Errorf("%s: not caught", name)
		}
	}
}

// TestSimReplays checks that a seed replays exactly: the same log.
func TestSimReplays(t *testing.T) {
	cfg := simConfig{clients: 6, ids: 3, partitions: 5, steps: 3000, faults: true}
	a, b := runSim(t, 7, cfg), runSim(t, 7, cfg)
	if len(a.log) == 0 || len(a.log) != len(b.log) || a.gen != b.gen {
		t.Fatalf("seed 7: %d records, %d generations; again: %d, %d", len(a.log), a.gen, len(b.log), b.gen)
	}
	for i := range a.log {
		if string(a.log[i].key) != string(b.log[i].key) || string(a.log[i].value) != string(b.log[i].value) {
			t.Fatalf("seed 7: record %d differs", i)
		}
	}
}
