package replication

// A seeded simulator of one partition replicated over simBrokers brokers.
// It owns the brokers' logs (records with an epoch and an id; a flushed
// prefix that survives a crash), a fake controller (Kafka's ZooKeeper-mode
// rules in their simplest form: the first live ISR member in assignment
// order is elected at a bumped leader epoch; a dead follower leaves the ISR
// at a bumped epoch unless it is the last; AlterPartition is applied if its
// leader epoch and partition epoch are current), the network (messages
// delivered in random order, dropped, duplicated), the clock, and clients
// producing with acks=all and acks=1 to whichever broker thinks it leads.
// Every schedule crashes a broker and changes the leader at least once.
// It also plays the broker's driver (stepBroker, write, handleLeaderAndIsr:
// replication/host/owner.go's rules), with its faults: a follower's log refusing or
// failing an append (nothing or a prefix taken), client appends in flight
// across role changes and fetch answers, the controller's AlterPartition
// errors (NOT_CONTROLLER, REQUEST_TIMED_OUT with the change committed or
// not, UNKNOWN_SERVER_ERROR, OPERATION_NOT_ATTEMPTED), and controlled
// shutdowns. invariants_test.go checks the invariants after every step.
//
// A failing seed is printed with the actions that led to it and replays
// with -sim.seed=N.

import (
	"errors"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

var (
	simSeeds = flag.Int("sim.seeds", 10000, "schedules the replication simulator runs")
	simSeed  = flag.Uint64("sim.seed", 0, "run only this schedule of the replication simulator")
	simSteps = flag.Int("sim.steps", 120, "random steps per schedule of the replication simulator")
	simTrail = flag.Int("sim.trail", 60, "actions a failure of the replication simulator prints")
)

const (
	simBrokers = 3
	simLag     = 100 // replica.lag.time.max.ms
	simTimeout = 400 // produce timeout, ms
)

// simOptions vary the simulated cluster.
type simOptions struct {
	minISR int
	// flushEvery is flush.messages=1: every append is on disk before
	// anything else happens.
	flushEvery bool
	// truncateToHW is the broken follower (pre-KIP-101).
	truncateToHW bool
	// The known-bad variants of the replicated partition's driver and core
	// (TestSimulatorCatchesKnownBadVariants):
	//   - advanceOnFetch: the follower counts a fetch's records as held
	//     when they are handed to the log, so a refused append is skipped;
	//   - appendOutsideLock: a client append checks leadership, then
	//     writes later, outside the owner a role change takes;
	//   - epochOutsideLock: becoming leader records the epoch in the log,
	//     then in the core later, while an old leader's fetch answer can
	//     still be appended;
	//   - stickyAlterErrors: an ISR change answered with a retriable error
	//     (NOT_CONTROLLER, REQUEST_TIMED_OUT, ...) is never sent again.
	//   - shutdownSkipsDeposed: the controlled-shutdown election does not
	//     tell the shutting-down leader it no longer leads.
	advanceOnFetch, appendOutsideLock, epochOutsideLock, stickyAlterErrors, shutdownSkipsDeposed bool
	// noViewCheck turns off the check that each replica's view of its log
	// is the log, to show what the variants above break for clients.
	noViewCheck bool
}

type rec struct {
	epoch int32
	id    uint64
}

type simBroker struct {
	id    int32
	alive bool
	inc   int // incarnation: messages of an earlier one are dropped
	log   []rec
	// flushed is the prefix of log on disk.
	flushed int
	epochs  epochCache
	// hwCheckpoint is replication-offset-checkpoint's value.
	hwCheckpoint int64
	r            *Replica
	// crashLost are the ids of records crashes took from it since it last
	// joined the ISR.
	crashLost map[uint64]bool
	// synced says it has fetched without divergence since its last role
	// change (its truncation is done).
	synced bool
	// stamped is the epoch its log stamps into client appends (the last
	// epoch it led, as engine.Log.BecomeLeader sets it).
	stamped int32
	// alterInFlight is the Seq of its AlterPartition in flight, 0 none: a
	// proposal handed out again while in flight is not sent twice.
	alterInFlight uint64
	// shutting: in controlled shutdown (no leader candidate, no ISR
	// member) until it stops.
	shutting bool
}

type msgKind int8

const (
	mFetch msgKind = iota
	mFetchResult
	mAlter
	mAlterResult
	mLeaderAndIsr
	// mAppend is a client's append in flight on its broker (between the
	// produce's arrival and its write); mBecomeLeader the core's half of a
	// role change the broken driver performs after the log's.
	mAppend
	mBecomeLeader
	// mStop is a broker in controlled shutdown stopping, once told.
	mStop
)

type simMsg struct {
	kind     msgKind
	from, to int32 // -1 is the controller
	toInc    int
	fetch    FetchRequest
	result   FetchResult
	recs     []rec
	alter    AlterPartition
	altered  AlterPartitionResult
	state    ctlState
	// A client append: records, acks, and (the broken driver's) whether the
	// check on arrival passed.
	n       int
	acksAll bool
	checked bool
}

// ctlState is the partition's state znode.
type ctlState struct {
	leader, epoch, partitionEpoch int32
	isr                           []int32
}

type sim struct {
	seed  uint64
	r     *rand.Rand
	opts  simOptions
	trail []string
	now   int64

	brokers  []*simBroker
	replicas []int32
	ctl      ctlState
	net      []simMsg
	faults   bool
	ids      uint64

	chk   checker
	stats map[string]int
}

type simFailure struct{ err error }

func newSim(seed uint64, opts simOptions) *sim {
	if opts.minISR == 0 {
		opts.minISR = 2
	}
	s := &sim{seed: seed, r: rand.New(rand.NewPCG(seed, 0x4e91)), opts: opts, now: 1_000_000, faults: true, stats: map[string]int{}}
	s.chk.init()
	for id := range int32(simBrokers) {
		s.brokers = append(s.brokers, &simBroker{id: id, crashLost: map[uint64]bool{}})
		s.replicas = append(s.replicas, id)
	}
	s.ctl = ctlState{leader: 0, epoch: 0, isr: slices.Clone(s.replicas)}
	for _, b := range s.brokers {
		s.start(b)
	}
	return s
}

// runSim runs one random schedule; the error says what broke and how.
func runSim(seed uint64, steps int, opts simOptions) (stats map[string]int, err error) {
	s := newSim(seed, opts)
	defer s.recover(&err)
	crashAt, changeAt := steps/4+s.r.IntN(steps/2), s.r.IntN(steps)
	for i := range steps {
		switch i {
		case crashAt:
			s.crash(s.brokers[s.ctl.leaderOr(s.r.IntN(simBrokers))])
		case changeAt:
			s.changeLeader()
		}
		s.randomStep()
	}
	s.quiesce()
	return s.stats, nil
}

func (s *sim) recover(err *error) {
	if v := recover(); v != nil {
		f, ok := v.(simFailure)
		if !ok {
			panic(v)
		}
		*err = fmt.Errorf("seed %d (replay with -sim.seed=%d): %w\nlast actions:\n  %s", s.seed, s.seed, f.err, strings.Join(s.trail, "\n  "))
	}
}

func (c ctlState) leaderOr(other int) int32 {
	if c.leader >= 0 {
		return c.leader
	}
	return int32(other)
}

func (s *sim) fail(format string, args ...any) { panic(simFailure{fmt.Errorf(format, args...)}) }

func (s *sim) note(format string, args ...any) {
	s.trail = append(s.trail, fmt.Sprintf("t=%d ", s.now-1_000_000)+fmt.Sprintf(format, args...))
	if len(s.trail) > *simTrail {
		s.trail = s.trail[1:]
	}
}

func (s *sim) randomStep() {
	switch n := s.r.IntN(100); {
	case n < 45:
		s.deliver()
	case n < 65:
		s.produce(s.r.IntN(10) < 7)
	case n < 78:
		s.tick(1 + s.r.Int64N(simLag/2))
	case n < 84:
		s.flush(s.brokers[s.r.IntN(simBrokers)])
	case n < 88:
		b := s.brokers[s.r.IntN(simBrokers)]
		if b.alive && b.r.Role() != Offline {
			b.hwCheckpoint = b.r.HighWatermark()
		}
	case n < 89:
		s.resumeFailed()
	case n < 91:
		if b := s.brokers[s.r.IntN(simBrokers)]; b.alive {
			s.crash(b)
		}
	case n < 97:
		if b := s.brokers[s.r.IntN(simBrokers)]; !b.alive {
			s.start(b)
		}
	case n < 99:
		s.changeLeader()
	default:
		s.controlledShutdown(s.brokers[s.r.IntN(simBrokers)])
	}
}

// ---- brokers

func (s *sim) newReplica(b *simBroker) *Replica {
	r := New(Config{Self: b.id, MinInsyncReplicas: s.opts.minISR, ReplicaLagTimeMaxMs: simLag})
	r.truncateToHW, r.advanceOnFetch, r.stickyAlterErrors = s.opts.truncateToHW, s.opts.advanceOnFetch, s.opts.stickyAlterErrors
	return r
}

func (s *sim) start(b *simBroker) {
	b.alive, b.r, b.synced, b.alterInFlight, b.shutting = true, s.newReplica(b), false, 0, false
	b.inc++
	s.note("broker %d starts: log end %d, hw checkpoint %d", b.id, len(b.log), b.hwCheckpoint)
	s.stats["start"]++
	// Kafka's onBrokerStartup: an offline partition elects a returning
	// ISR member; the broker is told the state either way.
	if s.ctl.leader < 0 && slices.Contains(s.ctl.isr, b.id) {
		s.elect()
		return
	}
	s.send(b.id)
	s.check()
}

func (s *sim) crash(b *simBroker) { s.crashTogether(b) }

// crashTogether crashes brokers at once (a power failure): the controller
// learns of their deaths together.
func (s *sim) crashTogether(bs ...*simBroker) {
	bs = slices.DeleteFunc(slices.Clone(bs), func(b *simBroker) bool { return !b.alive })
	if len(bs) == 0 {
		return
	}
	for _, b := range bs {
		s.lose(b)
	}
	// Kafka's onBrokerFailure.
	dead := func(id int32) bool { return !s.brokers[id].alive }
	switch {
	case s.ctl.leader >= 0 && dead(s.ctl.leader):
		s.elect()
	case s.ctl.leader >= 0 && slices.ContainsFunc(s.ctl.isr, dead) && len(s.ctl.isr) > 1:
		// One at a time, as Kafka's removeReplicasFromIsr: the last member
		// stays. An offline partition keeps its ISR.
		isr := slices.Clone(s.ctl.isr)
		for _, b := range bs {
			if len(isr) > 1 {
				isr = slices.DeleteFunc(isr, func(id int32) bool { return id == b.id })
			}
		}
		s.ctl.isr = isr
		s.bump("dead brokers leave the ISR")
	}
	s.chk.crashed(s)
	s.check()
}

// lose stops b, its unflushed records lost.
func (s *sim) lose(b *simBroker) {
	lost := len(b.log) - b.flushed
	for _, r := range b.log[b.flushed:] {
		b.crashLost[r.id] = true
	}
	b.alive, b.r = false, nil
	b.log = b.log[:b.flushed]
	b.epochs.truncateFromEnd(int64(len(b.log)))
	s.note("broker %d crashes, losing %d records: log end %d", b.id, lost, len(b.log))
	s.stats["crash"]++
	if lost > 0 {
		s.stats["crash lost records"]++
	}
	// Its connections close: fetches to it and its answers time out at
	// their senders; the rest is gone with it.
	var gone []simMsg
	s.net = slices.DeleteFunc(s.net, func(m simMsg) bool {
		if m.to == b.id || m.from == b.id {
			gone = append(gone, m)
			return true
		}
		return false
	})
	for _, m := range gone {
		if m.kind == mFetch && m.to == b.id || m.kind == mFetchResult && m.from == b.id {
			s.lost(m)
		}
	}
}

// flush puts the broker's log on disk.
func (s *sim) flush(b *simBroker) {
	if b.alive {
		b.flushed = len(b.log)
	}
}

func (b *simBroker) logState() LogState {
	hw := b.hwCheckpoint
	if b.r.Role() != Offline {
		hw = b.r.HighWatermark()
	}
	return LogState{Start: 0, End: int64(len(b.log)), HighWatermark: hw, Epochs: b.epochs}
}

// stepBroker steps ev into b's replica and performs its Ready, as the
// broker's driver does; recs are the records of a FetchResult. The log's
// outcome of an append is stepped back (FetchAppended); with the faults
// on, the log refuses some (a damaged batch: nothing or a prefix taken) or
// fails (a storage error after a prefix).
func (s *sim) stepBroker(b *simBroker, ev Event, recs []rec) Ready {
	b.r.Step(ev)
	rd := b.r.Ready()
	if rd.Truncated {
		if rd.Truncate.Offset < int64(len(b.log)) {
			s.stats["truncated records"]++
		}
		b.log = b.log[:min(int64(len(b.log)), rd.Truncate.Offset)]
		b.flushed = min(b.flushed, len(b.log))
		b.epochs.truncateFromEnd(rd.Truncate.Offset)
		s.note("broker %d truncates to %d", b.id, rd.Truncate.Offset)
	}
	var outcome *FetchAppended
	if len(rd.Append) > 0 {
		outcome = s.appendFetched(b, rd.Append, rd.AppendSeq, recs)
	}
	// rd.NewEpoch is the log's already: the driver records the epoch in
	// the log (engine.Log.BecomeLeader) before the core's BecomeLeader,
	// under the same owner (handleLeaderAndIsr).
	if s.opts.flushEvery {
		b.flushed = len(b.log)
	}
	if ap := rd.AlterPartition; ap != nil && ap.Seq != b.alterInFlight {
		b.alterInFlight = ap.Seq
		s.net = append(s.net, simMsg{kind: mAlter, from: b.id, to: -1, alter: *ap})
		s.note("broker %d asks for ISR %v (epoch %d, partition epoch %d)", b.id, ap.ISR, ap.LeaderEpoch, ap.PartitionEpoch)
	}
	for _, c := range rd.Completed {
		s.chk.completed(s, b, c)
	}
	if rd.Fetching {
		s.net = append(s.net, simMsg{kind: mFetch, from: b.id, to: rd.Fetch.Leader, toInc: s.brokers[rd.Fetch.Leader].inc, fetch: rd.Fetch})
		if rd.Fetch.Backoff {
			s.stats["fetch after a backoff"]++
		}
	}
	rd.Answers = slices.Clone(rd.Answers)
	b.r.Advance()
	if outcome != nil {
		s.stepBroker(b, *outcome, nil)
		if failed, why := b.r.Failed(); failed {
			s.note("broker %d fails following: %v", b.id, why)
			s.stats["follower failed"]++
		}
	}
	return rd
}

var errSimStorage = errors.New("sim: write: input/output error")

// appendFetched appends the fetched batches (or, with the faults, what a
// failing log takes of them) and returns the outcome to step.
func (s *sim) appendFetched(b *simBroker, bs []Batch, seq uint64, recs []rec) *FetchAppended {
	n, err := len(bs), error(nil)
	if s.faults {
		switch s.r.IntN(40) {
		case 0:
			n, err = s.r.IntN(len(bs)), fmt.Errorf("%w: sim: CRC mismatch", ErrRecordsRefused)
			s.stats["append refused"]++
		case 1:
			n, err = s.r.IntN(len(bs)+1), errSimStorage
			s.stats["append failed"]++
		}
	}
	base, end := bs[0].Base, bs[0].Base
	if n > 0 {
		end = bs[n-1].End
	}
	if int64(len(b.log)) != base {
		// The log does not end where the core's view does (a record
		// appended behind its back): the engine refuses the batches.
		n, end, err = 0, base, fmt.Errorf("sim: replicated batch at %d, the log ends at %d", base, len(b.log))
		s.stats["append non-monotonic"]++
	}
	for _, bt := range bs[:n] {
		b.epochs.assign(bt.Epoch, bt.Base)
	}
	b.log = append(b.log, recs[:end-base]...)
	s.note("broker %d appends [%d, %d) of [%d, %d) from the leader: %v", b.id, base, end, base, bs[len(bs)-1].End, err)
	return &FetchAppended{Seq: seq, End: end, Err: err}
}

// resumeFailed resumes the followers whose log failed (the driver's retry
// once the disk is back).
func (s *sim) resumeFailed() {
	for _, b := range s.brokers {
		if !b.alive {
			continue
		}
		if failed, _ := b.r.Failed(); failed {
			s.note("broker %d resumes following from %d", b.id, len(b.log))
			s.stats["resumed"]++
			s.stepBroker(b, Resume{Log: b.logState()}, nil)
		}
	}
}

// produce sends a client's append to a broker that thinks it leads: written
// at once, or (with the faults) in flight, written when delivered, with
// role changes and fetch answers in between.
func (s *sim) produce(acksAll bool) {
	var leaders []*simBroker
	for _, b := range s.brokers {
		if b.alive && b.r.Role() == Leader {
			leaders = append(leaders, b)
		}
	}
	if len(leaders) == 0 {
		return
	}
	b := leaders[s.r.IntN(len(leaders))]
	m := simMsg{kind: mAppend, from: b.id, to: b.id, toInc: b.inc, n: 1 + s.r.IntN(3), acksAll: acksAll, checked: b.r.CheckProduce(acksAll) == nil}
	if s.faults && s.r.IntN(3) == 0 {
		s.net = append(s.net, m)
		return
	}
	s.write(b, m)
}

// write performs a client's append as the driver does: the check of the
// role and the write under the owner's lock (the broken driver trusts the
// check made on arrival), then the core told, then the acks=all wait.
func (s *sim) write(b *simBroker, m simMsg) {
	ok := m.checked
	if !s.opts.appendOutsideLock {
		err := b.r.CheckProduce(m.acksAll)
		if err != nil {
			s.stats["produce refused "+err.(*kerr.Error).Message]++
		}
		ok = err == nil
	}
	if !ok {
		return
	}
	first := int64(len(b.log))
	for range m.n {
		s.ids++
		b.log = append(b.log, rec{epoch: b.stamped, id: s.ids})
	}
	b.epochs.assign(b.stamped, first)
	s.note("produce acks=%v to %d at epoch %d: [%d, %d) ids ..%d", map[bool]string{true: "all", false: "1"}[m.acksAll], b.id, b.stamped, first, len(b.log), s.ids)
	if r := b.r; r.Role() == Leader && int64(len(b.log)) > r.LogEnd() {
		s.stepBroker(b, Appended{End: int64(len(b.log)), Epoch: r.LeaderEpoch()}, nil)
	}
	if m.acksAll {
		s.chk.waiting(s.ids, b.log[first:], first)
		s.stepBroker(b, WaitProduce{Ref: s.ids, Offset: int64(len(b.log)), Deadline: s.now + simTimeout}, nil)
	}
	s.check()
}

func (s *sim) tick(d int64) {
	s.now += d
	for _, b := range s.brokers {
		if b.alive {
			s.stepBroker(b, Tick{Now: s.now}, nil)
		}
	}
	s.check()
}

// ---- the network

func (s *sim) deliver() {
	if len(s.net) > 0 {
		s.deliverAt(s.r.IntN(len(s.net)))
	}
}

// deliverAt delivers message i, unless the faults lose it.
func (s *sim) deliverAt(i int) {
	m := s.net[i]
	// Duplicated: not a client's append nor the driver's own step, and not
	// an AlterPartition, which the driver keeps one of in flight on one
	// connection (a controller that answers OPERATION_NOT_ATTEMPTED promises
	// that the request will not be applied).
	if s.faults && s.r.IntN(25) == 0 && m.kind != mAppend && m.kind != mBecomeLeader && m.kind != mAlter && m.kind != mStop {
		s.stats["duplicated"]++
	} else {
		s.net = slices.Delete(s.net, i, i+1)
	}
	if s.faults && s.r.IntN(20) == 0 && m.kind != mLeaderAndIsr && m.kind != mAppend && m.kind != mBecomeLeader && m.kind != mStop {
		s.stats["dropped"]++
		s.lost(m)
		return
	}
	if m.to >= 0 {
		if b := s.brokers[m.to]; m.kind != mFetch && (!b.alive || b.inc != m.toInc) {
			return
		}
	}
	switch m.kind {
	case mFetch:
		s.handleFetch(m)
	case mFetchResult:
		b := s.brokers[m.to]
		if m.result.Err == nil && !m.result.Diverged && b.r.inflight && m.result.Seq == b.r.seq {
			b.synced = true
		}
		s.stepBroker(b, m.result, m.recs)
	case mAlter:
		s.handleAlter(m)
	case mAlterResult:
		b := s.brokers[m.to]
		if b.alterInFlight == m.altered.Request.Seq {
			b.alterInFlight = 0
		}
		s.stepBroker(b, m.altered, nil)
	case mLeaderAndIsr:
		s.handleLeaderAndIsr(m)
	case mAppend:
		s.write(s.brokers[m.to], m)
	case mBecomeLeader:
		s.becomeLeader(s.brokers[m.to], m.state)
	case mStop:
		b := s.brokers[m.to]
		s.flush(b) // a clean stop: everything written is on disk
		s.note("broker %d stops after its controlled shutdown", b.id)
		s.crash(b)
	}
	s.check()
}

// lost is a message that never arrives: its sender times out.
func (s *sim) lost(m simMsg) {
	switch m.kind {
	case mFetch:
		s.net = append(s.net, simMsg{kind: mFetchResult, from: m.to, to: m.from, toInc: s.brokers[m.from].inc, result: FetchResult{Seq: m.fetch.Seq, Err: ErrUnreachable}})
	case mFetchResult:
		s.net = append(s.net, simMsg{kind: mFetchResult, from: m.from, to: m.to, toInc: m.toInc, result: FetchResult{Seq: m.result.Seq, Err: ErrUnreachable}})
	case mAlter:
		s.net = append(s.net, simMsg{kind: mAlterResult, from: -1, to: m.from, toInc: s.brokers[m.from].inc, altered: AlterPartitionResult{Request: m.alter, Err: ErrUnreachable}})
	case mAlterResult:
		s.net = append(s.net, simMsg{kind: mAlterResult, from: -1, to: m.to, toInc: m.toInc, altered: AlterPartitionResult{Request: m.altered.Request, Err: ErrUnreachable}})
	}
}

// handleFetch is the leader's side of a follower's fetch: up to 4 records.
func (s *sim) handleFetch(m simMsg) {
	b := s.brokers[m.to]
	if !b.alive || b.inc != m.toInc {
		s.lost(m)
		return
	}
	f := m.fetch
	rd := s.stepBroker(b, FollowerFetch{Replica: m.from, ReplicaEpoch: int64(s.brokers[m.from].inc), FetchOffset: f.Offset, LastFetchedEpoch: f.LastFetchedEpoch, CurrentLeaderEpoch: f.CurrentLeaderEpoch, Now: s.now}, nil)
	a := rd.Answers[0]
	res := FetchResult{Seq: f.Seq, Err: a.Err, Diverged: a.Diverged, Diverging: a.Diverging, HighWatermark: a.HighWatermark, LeaderLogStart: a.LogStart, LeaderLogEnd: a.LogEnd}
	var recs []rec
	switch {
	case a.Err != nil:
		s.stats["fetch answered "+a.Err.(*kerr.Error).Message]++
	case a.Diverged:
		s.stats["fetch diverged"]++
	default:
		recs = slices.Clone(b.log[a.From:min(a.LogEnd, a.From+4)])
		for i, r := range recs {
			off := a.From + int64(i)
			if n := len(res.Batches); n > 0 && res.Batches[n-1].Epoch == r.epoch {
				res.Batches[n-1].End = off + 1
			} else {
				res.Batches = append(res.Batches, Batch{Base: off, End: off + 1, Epoch: r.epoch})
			}
		}
	}
	s.note("fetch %d→%d offset %d last epoch %d at epoch %d: err %v diverged %v %+v, %d records, hw %d", m.from, m.to, f.Offset, f.LastFetchedEpoch, f.CurrentLeaderEpoch, a.Err, a.Diverged, a.Diverging, len(recs), a.HighWatermark)
	s.net = append(s.net, simMsg{kind: mFetchResult, from: b.id, to: m.from, toInc: s.brokers[m.from].inc, result: res, recs: recs})
}

// ---- the controller

// bump commits the state at a new leader epoch and tells the replicas.
func (s *sim) bump(format string, args ...any) { s.bumpSkipping(-1, format, args...) }

// bumpSkipping is bump telling every live broker but skip.
func (s *sim) bumpSkipping(skip int32, format string, args ...any) {
	s.ctl.epoch++
	s.ctl.partitionEpoch++
	s.note("controller: "+format+": leader %d epoch %d ISR %v", append(args, s.ctl.leader, s.ctl.epoch, s.ctl.isr)...)
	for _, b := range s.brokers {
		if b.alive && b.id != skip {
			s.send(b.id)
		}
	}
}

// controlledShutdown is Kafka's: a broker about to stop asks the
// controller to move its leadership to another live ISR member and take
// it out of the ISR (the deposed leader told, as Kafka's
// controlled-shutdown election tells the live or shutting-down replicas);
// it stops later, once told.
func (s *sim) controlledShutdown(b *simBroker) {
	if !b.alive || b.shutting {
		return
	}
	b.shutting = true
	s.stats["controlled shutdown"]++
	s.note("broker %d starts a controlled shutdown", b.id)
	others := slices.DeleteFunc(slices.Clone(s.ctl.isr), func(id int32) bool {
		return id == b.id || !s.brokers[id].alive || s.brokers[id].shutting
	})
	switch {
	case len(others) == 0:
		// Nobody else can lead or stay in sync: it keeps its roles until
		// it is gone.
	case s.ctl.leader == b.id:
		s.ctl.leader, s.ctl.isr = others[0], others
		skip := int32(-1)
		if s.opts.shutdownSkipsDeposed {
			skip = b.id
		}
		s.bumpSkipping(skip, "controlled shutdown of %d: leader moved", b.id)
	case slices.Contains(s.ctl.isr, b.id):
		s.ctl.isr = others
		s.bump("controlled shutdown of %d: out of the ISR", b.id)
	}
	s.net = append(s.net, simMsg{kind: mStop, from: b.id, to: b.id, toInc: b.inc})
	s.check()
}

func (s *sim) send(to int32) {
	st := s.ctl
	st.isr = slices.Clone(st.isr)
	s.net = append(s.net, simMsg{kind: mLeaderAndIsr, from: -1, to: to, toInc: s.brokers[to].inc, state: st})
}

// elect is the offline-partition election: the first live ISR member in
// assignment order leads, the ISR keeps its live members; none live, the
// partition is offline and keeps its ISR.
func (s *sim) elect() {
	s.stats["election"]++
	var live []int32
	for _, id := range s.replicas {
		if slices.Contains(s.ctl.isr, id) && s.brokers[id].alive && !s.brokers[id].shutting {
			live = append(live, id)
		}
	}
	if len(live) == 0 {
		s.ctl.leader = -1
		s.stats["offline"]++
		s.bump("no live ISR member")
		return
	}
	s.ctl.leader, s.ctl.isr = live[0], live
	s.bump("elected")
}

// changeLeader moves leadership to another live ISR member, as a
// preferred-replica election or a controlled shutdown does.
func (s *sim) changeLeader() {
	var others []int32
	for _, id := range s.ctl.isr {
		if id != s.ctl.leader && s.brokers[id].alive && !s.brokers[id].shutting {
			others = append(others, id)
		}
	}
	if len(others) == 0 {
		return
	}
	s.stats["leader change"]++
	s.ctl.leader = others[s.r.IntN(len(others))]
	s.bump("leader moved")
	s.check()
}

func (s *sim) staleEpoch(req AlterPartition) bool {
	for i, id := range req.ISR {
		if e := req.BrokerEpochs[i]; e != -1 && e != int64(s.brokers[id].inc) {
			return true
		}
	}
	return false
}

// handleAlter is Kafka's ZooKeeper-mode AlterPartition handling.
func (s *sim) handleAlter(m simMsg) {
	req := m.alter
	res := AlterPartitionResult{Request: req}
	applied := true // a fault's answer after the change was committed
	if s.faults && s.r.IntN(8) == 0 {
		// The controller's failures: it resigned (NOT_CONTROLLER), its
		// ZooKeeper write failed (UNKNOWN_SERVER_ERROR), it timed out
		// (REQUEST_TIMED_OUT, the change committed or not), or it answered
		// for a batch it did not try (OPERATION_NOT_ATTEMPTED).
		errs := []error{kerr.NotController, kerr.UnknownServerError, kerr.RequestTimedOut}
		if req.PartitionEpoch == s.ctl.partitionEpoch && req.LeaderEpoch == s.ctl.epoch {
			// Its promise: the leader's state is the committed one.
			errs = append(errs, kerr.OperationNotAttempted)
		}
		res.Err = errs[s.r.IntN(len(errs))]
		applied = res.Err == kerr.RequestTimedOut && s.r.IntN(2) == 0
	}
	switch {
	case res.Err != nil && !applied:
	case req.Leader != s.ctl.leader || req.LeaderEpoch != s.ctl.epoch:
		res.Err = kerr.FencedLeaderEpoch
	case slices.Equal(req.ISR, s.ctl.isr):
		// A retry of an applied change (Kafka's equalsAllowStalePartitionEpoch).
	case req.PartitionEpoch != s.ctl.partitionEpoch:
		res.Err = kerr.InvalidUpdateVersion
	case slices.ContainsFunc(req.ISR, func(id int32) bool {
		return !s.brokers[id].alive || s.brokers[id].shutting && !slices.Contains(s.ctl.isr, id)
	}):
		res.Err = kerr.IneligibleReplica
	case s.staleEpoch(req):
		// KIP-903: a member that restarted since its fetch is refused.
		res.Err = kerr.IneligibleReplica
		s.stats["AlterPartition stale broker epoch"]++
	default:
		for _, id := range req.ISR {
			if !slices.Contains(s.ctl.isr, id) {
				clear(s.brokers[id].crashLost) // it caught up to join
			}
		}
		s.ctl.isr = slices.Clone(req.ISR)
		s.ctl.partitionEpoch++
		s.stats["ISR changed"]++
		if res.Err != nil {
			s.stats["ISR changed, answered "+res.Err.(*kerr.Error).Message]++
		}
	}
	if res.Err == nil {
		res.ISR, res.LeaderEpoch, res.PartitionEpoch = slices.Clone(s.ctl.isr), s.ctl.epoch, s.ctl.partitionEpoch
	} else {
		s.stats["AlterPartition "+res.Err.(*kerr.Error).Message]++
	}
	s.note("controller: AlterPartition %v from %d: %v, ISR %v partition epoch %d", req.ISR, req.Leader, res.Err, s.ctl.isr, s.ctl.partitionEpoch)
	s.net = append(s.net, simMsg{kind: mAlterResult, from: -1, to: m.from, toInc: s.brokers[m.from].inc, altered: res})
}

func (s *sim) handleLeaderAndIsr(m simMsg) {
	b, st := s.brokers[m.to], m.state
	if st.epoch <= b.r.LeaderEpoch() && b.r.Role() != Offline {
		return
	}
	b.synced = false
	s.note("broker %d gets LeaderAndIsr: leader %d epoch %d ISR %v", b.id, st.leader, st.epoch, st.isr)
	if st.leader == b.id {
		// The log leads first (engine.Log.BecomeLeader: the epoch at its
		// end, stamped into appends), then the core, under one owner; the
		// broken driver lets the core's half wait, fetch answers in between.
		b.epochs.assign(st.epoch, int64(len(b.log)))
		b.stamped = st.epoch
		if s.opts.epochOutsideLock && s.faults {
			s.net = append(s.net, simMsg{kind: mBecomeLeader, from: b.id, to: b.id, toInc: b.inc, state: st})
			return
		}
		s.becomeLeader(b, st)
		return
	}
	s.stepBroker(b, BecomeFollower{Leader: st.leader, Epoch: st.epoch, PartitionEpoch: st.partitionEpoch, Replicas: s.replicas, Log: b.logState()}, nil)
}

// becomeLeader is the core's half of becoming leader.
func (s *sim) becomeLeader(b *simBroker, st ctlState) {
	if st.epoch <= b.r.LeaderEpoch() && b.r.Role() != Offline {
		return
	}
	s.stepBroker(b, BecomeLeader{Epoch: st.epoch, PartitionEpoch: st.partitionEpoch, ISR: st.isr, Replicas: s.replicas, Log: b.logState(), Now: s.now}, nil)
	s.chk.becameLeader(s, b)
}

// quiesce stops the faults and producers, starts every broker, and runs
// the cluster until every replica has the leader's log: replication
// converges once the faults stop.
func (s *sim) quiesce() {
	s.faults = false
	s.note("quiesce")
	for _, b := range s.brokers {
		if !b.alive {
			s.start(b)
		}
	}
	for i := range 5000 {
		if s.converged() {
			return
		}
		if len(s.net) == 0 || i%20 == 0 {
			s.resumeFailed()
			for _, b := range s.brokers {
				if !b.alive { // stopped after a controlled shutdown
					s.start(b)
				}
			}
			s.tick(simLag / 4)
		} else {
			s.deliver()
		}
	}
	s.fail("does not converge: controller %+v", s.ctl)
}

func (s *sim) converged() bool {
	l := s.ctl.leader
	if l < 0 {
		return false
	}
	lb := s.brokers[l]
	if lb.r.Role() != Leader || lb.r.LeaderEpoch() != s.ctl.epoch || lb.r.HighWatermark() != int64(len(lb.log)) {
		return false
	}
	for _, b := range s.brokers {
		if !b.alive || !slices.Equal(b.log, lb.log) || b.r.HighWatermark() != lb.r.HighWatermark() {
			return false
		}
	}
	return len(s.ctl.isr) == simBrokers
}

// ---- running many

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

// runSeeds runs the seeds on every core; it returns the first failure by
// seed order (so a run's report does not depend on scheduling) and the
// summed stats.
func runSeeds(list []uint64, steps int, opts simOptions) (map[string]int, error) {
	var (
		mu    sync.Mutex
		wg    sync.WaitGroup
		stats = map[string]int{}
		first error
		worst = uint64(1<<64 - 1)
		next  = make(chan uint64)
	)
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seed := range next {
				st, err := runSim(seed, steps, opts)
				mu.Lock()
				for k, v := range st {
					stats[k] += v
				}
				if err != nil && seed < worst {
					worst, first = seed, err
				}
				mu.Unlock()
			}
		}()
	}
	for _, seed := range list {
		mu.Lock()
		stop := first != nil && seed > worst
		mu.Unlock()
		if stop {
			break
		}
		next <- seed
	}
	close(next)
	wg.Wait()
	return stats, first
}

// TestSimulator runs the random schedules and checks that they went
// through every path they are meant to.
func TestSimulator(t *testing.T) {
	for _, opts := range []simOptions{{minISR: 2}, {minISR: 2, flushEvery: true}, {minISR: 1}} {
		t.Run(fmt.Sprintf("minISR=%d,flushEvery=%v", opts.minISR, opts.flushEvery), func(t *testing.T) {
			list := seeds()
			if *simSeed == 0 && (opts.flushEvery || opts.minISR != 2) {
				list = list[:len(list)/5] // the main configuration runs every seed, the others a fifth
			}
			stats, err := runSeeds(list, *simSteps, opts)
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range slices.Sorted(maps.Keys(stats)) {
				t.Logf("%9d %s", stats[k], k)
			}
			if *simSeed != 0 {
				return
			}
			for _, k := range []string{"crash", "crash lost records", "leader change", "election", "ISR changed", "truncated records",
				"fetch diverged", "acknowledged", "acknowledged after a leader change", "duplicated", "dropped",
				"fetch answered " + kerr.FencedLeaderEpoch.Message, "produce refused " + kerr.NotEnoughReplicas.Message,
				"completed " + kerr.NotLeaderForPartition.Message,
				"append refused", "append failed", "follower failed", "resumed", "fetch after a backoff",
				"AlterPartition " + kerr.NotController.Message, "AlterPartition " + kerr.RequestTimedOut.Message,
				"AlterPartition " + kerr.UnknownServerError.Message, "AlterPartition " + kerr.OperationNotAttempted.Message,
				"ISR changed, answered " + kerr.RequestTimedOut.Message, "controlled shutdown"} {
				if stats[k] == 0 && !(opts.flushEvery && k == "crash lost records") && !(opts.minISR == 1 && strings.HasPrefix(k, "produce refused")) {
					t.Errorf("no %q in %d schedules", k, len(list))
				}
			}
		})
	}
}

// TestSimulatorCatchesTruncationToHighWatermark proves the checks can
// fail: followers that truncate to their high watermark instead of by
// epoch (Kafka before KIP-101) lose acknowledged records or diverge within
// the schedules a CI run covers.
func TestSimulatorCatchesTruncationToHighWatermark(t *testing.T) {
	_, err := runSeeds(seeds()[:min(len(seeds()), 2000)], *simSteps, simOptions{truncateToHW: true})
	if err == nil {
		t.Fatal("the broken follower passed")
	}
	if !strings.Contains(err.Error(), "lost") && !strings.Contains(err.Error(), "diverge") && !strings.Contains(err.Error(), "differ") {
		t.Fatalf("caught, but not by the loss or divergence checks: %v", err)
	}
	t.Logf("caught: %.300s", err)
}

// TestSimulatorCatchesKnownBadVariants proves the checks catch each defect
// the replicated partition's driver and core once had, re-introduced
// behind a seam, within the schedules a CI run covers: a follower that
// counts a refused append as held (the leader then counts records the
// follower lacks), a client append written after its broker became a
// follower, an old leader's fetch answer appended while the new leader's
// core is a step behind its log, and ISR changes never sent again after a
// retriable error (shrink and expand alike: the ISR never heals).
func TestSimulatorCatchesKnownBadVariants(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts simOptions
		// caughtBy are the failures that count: what the variant breaks.
		caughtBy []string
	}{
		{"refused append counted as held", simOptions{minISR: 2, advanceOnFetch: true}, []string{"view of its log", "lost", "differ", "diverge"}},
		{"append outside the role lock", simOptions{minISR: 2, appendOutsideLock: true}, []string{"view of its log", "lost", "differ", "diverge"}},
		{"log leads before the core", simOptions{minISR: 2, epochOutsideLock: true}, []string{"view of its log", "lost", "differ", "diverge"}},
		{"AlterPartition errors stick", simOptions{minISR: 2, stickyAlterErrors: true}, []string{"does not converge"}},
		{"controlled shutdown leaves the deposed leader leading", simOptions{minISR: 2, shutdownSkipsDeposed: true}, []string{"nothing will tell it"}},
		// What they break for clients, without the check of the views: an
		// acknowledged record lost; replicas that never agree again.
		{"refused append counted as held, unchecked", simOptions{minISR: 2, advanceOnFetch: true, noViewCheck: true}, []string{"acknowledged record"}},
		{"append outside the role lock, unchecked", simOptions{minISR: 2, appendOutsideLock: true, noViewCheck: true}, []string{"lost", "differ", "diverge", "does not converge"}},
		{"log leads before the core, unchecked", simOptions{minISR: 2, epochOutsideLock: true, noViewCheck: true}, []string{"lost", "differ", "diverge", "does not converge"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := runSeeds(seeds()[:min(len(seeds()), 2000)], *simSteps, tc.opts)
			if err == nil {
				t.Fatal("the broken variant passed")
			}
			if !slices.ContainsFunc(tc.caughtBy, func(s string) bool { return strings.Contains(err.Error(), s) }) {
				t.Fatalf("caught, but not by the checks it breaks (%q): %.600s", tc.caughtBy, err)
			}
			t.Logf("caught: %.300s", err)
		})
	}
}
