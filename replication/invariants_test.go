package replication

// The simulator's invariant checker (doc.go lists the invariants). It
// holds what it has seen across steps: the acknowledged records, the
// leader of each epoch, and each epoch's highest high watermark.

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

type ackedRec struct {
	offset int64
	id     uint64
}

type checker struct {
	// waitingProduce are the records of each acks=all produce, by Ref.
	waitingProduce map[uint64][]ackedRec
	// acked are the acknowledged acks=all records; excused those a crash
	// took from every ISR member (Kafka does not promise them).
	acked   []ackedRec
	excused map[uint64]bool
	// leaders are each epoch's leader (broker and incarnation).
	leaders map[int32][2]int
	// hws are each epoch's highest high watermark on its leader.
	hws map[int32]int64
}

func (k *checker) init() {
	k.waitingProduce, k.excused, k.leaders, k.hws = map[uint64][]ackedRec{}, map[uint64]bool{}, map[int32][2]int{}, map[int32]int64{}
}

func (k *checker) waiting(ref uint64, recs []rec, first int64) {
	var out []ackedRec
	for i, r := range recs {
		out = append(out, ackedRec{first + int64(i), r.id})
	}
	k.waitingProduce[ref] = out
}

func (k *checker) completed(s *sim, b *simBroker, c Completion) {
	recs := k.waitingProduce[c.Ref]
	delete(k.waitingProduce, c.Ref)
	if c.Err != nil {
		s.stats["completed "+c.Err.(*kerr.Error).Message]++
		return
	}
	s.stats["acknowledged"]++
	for _, r := range recs {
		if r.offset >= b.r.HighWatermark() || b.log[r.offset].id != r.id {
			s.fail("broker %d acknowledged record %d at %d above its high watermark %d or not in its log", b.id, r.id, r.offset, b.r.HighWatermark())
		}
		if b.log[r.offset].epoch != b.r.LeaderEpoch() {
			s.stats["acknowledged after a leader change"]++
		}
		k.acked = append(k.acked, r)
	}
	s.note("broker %d acknowledges %d records", b.id, len(recs))
}

// heldInISR reports whether every member of the controller's ISR holds r
// (or, missing, which one does not).
func heldInISR(s *sim, r ackedRec) (int32, bool) {
	for _, id := range s.ctl.isr {
		if l := s.brokers[id].log; r.offset >= int64(len(l)) || l[r.offset].id != r.id {
			return id, false
		}
	}
	return -1, true
}

// crashed excuses the acknowledged records a crash took from a member of
// the ISR that stays in it (the last one, or several crashing at once):
// it may be elected without them, and Kafka does not promise them. (A
// leader that has not yet heard of a newer epoch may acknowledge a record
// after that crash: the excuse holds then too.)
func (k *checker) crashed(s *sim) {
	for _, r := range k.acked {
		k.excuse(s, r)
	}
}

// excuse reports whether r is excused, excusing it if an ISR member lacks
// it because a crash took it.
func (k *checker) excuse(s *sim, r ackedRec) bool {
	if k.excused[r.id] {
		return true
	}
	id, ok := heldInISR(s, r)
	if ok || !s.brokers[id].crashLost[r.id] {
		return false
	}
	if s.opts.flushEvery {
		s.fail("acknowledged record %d at %d lost in a crash with every message flushed", r.id, r.offset)
	}
	k.excused[r.id] = true
	s.stats["acknowledged lost in crashes"]++
	return true
}

func (k *checker) becameLeader(s *sim, b *simBroker) {
	if b.r.Role() != Leader {
		return
	}
	e, who := b.r.LeaderEpoch(), [2]int{int(b.id), b.inc}
	if w, ok := k.leaders[e]; ok && w != who {
		s.fail("two leaders at epoch %d: broker %d (incarnation %d) and %d (%d)", e, w[0], w[1], who[0], who[1])
	}
	k.leaders[e] = who
}

// settled reports whether b's log has been validated against the current
// leader epoch: it leads at it, or has fetched at it without divergence.
func settled(s *sim, b *simBroker) bool {
	return b.alive && b.r.LeaderEpoch() == s.ctl.epoch && (b.r.Role() == Leader || b.r.Role() == Follower && b.synced)
}

// check runs the invariants after a step.
func (s *sim) check() {
	k := &s.chk
	for _, b := range s.brokers {
		// The driver never lets the core's view of the log and the log
		// disagree (a failed follower's is read again when it resumes).
		if !b.alive || b.r.Role() == Offline || s.opts.noViewCheck {
			continue
		}
		if failed, _ := b.r.Failed(); failed {
			continue
		}
		if b.r.LogEnd() != int64(len(b.log)) || !slices.Equal(b.r.Epochs(), []EpochStart(b.epochs)) {
			s.fail("broker %d (%v at epoch %d): the replica's view of its log (end %d, epochs %v) is not the log (end %d, epochs %v)",
				b.id, b.r.Role(), b.r.LeaderEpoch(), b.r.LogEnd(), b.r.Epochs(), len(b.log), b.epochs)
		}
	}
	for _, b := range s.brokers {
		if !b.alive || b.r.Role() != Leader {
			continue
		}
		// A leader the controller has moved on from is told: it does not
		// go on taking writes at its old epoch.
		if e := b.r.LeaderEpoch(); e < s.ctl.epoch && !s.toldLater(b) {
			s.fail("broker %d leads at epoch %d, the controller is at epoch %d (leader %d), and nothing will tell it", b.id, e, s.ctl.epoch, s.ctl.leader)
		}
		e, hw := b.r.LeaderEpoch(), b.r.HighWatermark()
		if prev, ok := k.hws[e]; ok && hw < prev {
			s.fail("broker %d: high watermark went back from %d to %d at epoch %d", b.id, prev, hw, e)
		}
		k.hws[e] = hw
		if hw > int64(len(b.log)) || b.r.LogEnd() != int64(len(b.log)) {
			s.fail("broker %d: high watermark %d, log end %d, replica's log end %d", b.id, hw, len(b.log), b.r.LogEnd())
		}
	}
	for _, r := range k.acked {
		if id, ok := heldInISR(s, r); !ok && !k.excuse(s, r) {
			s.fail("acknowledged record %d at %d lost: ISR %v member %d does not hold it", r.id, r.offset, s.ctl.isr, id)
		}
	}
	for i, a := range s.brokers {
		if !settled(s, a) {
			continue
		}
		for _, b := range s.brokers[i+1:] {
			if !settled(s, b) {
				continue
			}
			if off, ok := differ(a.log, b.log, min(a.r.HighWatermark(), b.r.HighWatermark())); ok {
				s.fail("brokers %d and %d diverge at %d, below both high watermarks (%d, %d): %+v and %+v",
					a.id, b.id, off, a.r.HighWatermark(), b.r.HighWatermark(), a.log[off], b.log[off])
			}
		}
	}
	if s.ctl.leader < 0 {
		return
	}
	l := s.brokers[s.ctl.leader]
	if !settled(s, l) {
		return
	}
	for _, id := range s.ctl.isr {
		if m := s.brokers[id]; id != l.id && settled(s, m) {
			if off, ok := differ(l.log, m.log, min(l.r.HighWatermark(), int64(len(m.log)))); ok {
				s.fail("ISR members %d and %d differ at %d, below the high watermark %d", l.id, id, off, l.r.HighWatermark())
			}
		}
	}
}

// differ returns the first offset below n where a and b differ.
func differ(a, b []rec, n int64) (int64, bool) {
	n = min(n, int64(len(a)), int64(len(b)))
	for i := range n {
		if a[i] != b[i] {
			return i, true
		}
	}
	return 0, false
}

// toldLater reports whether a LeaderAndIsr to b (this incarnation) is on
// its way.
func (s *sim) toldLater(b *simBroker) bool {
	return slices.ContainsFunc(s.net, func(m simMsg) bool {
		return (m.kind == mLeaderAndIsr || m.kind == mBecomeLeader) && m.to == b.id && m.toInc == b.inc && m.state.epoch > b.r.LeaderEpoch()
	})
}
