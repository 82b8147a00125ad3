package replication

// Named scenarios, driven step by step through the simulator with its
// faults off: the KIP-101 cases and KIP-279's fast leader changes, each
// run with the Kafka follower and with the pre-KIP-101 one.

import (
	"strings"
	"testing"
)

// pump delivers the oldest n messages.
func (s *sim) pump(n int) {
	for range n {
		if len(s.net) == 0 {
			return
		}
		s.deliverAt(0)
	}
}

// settle delivers messages until cond holds.
func (s *sim) settle(t *testing.T, what string, cond func() bool) {
	for range 1000 {
		if cond() {
			return
		}
		if len(s.net) == 0 {
			s.tick(10)
		} else {
			s.deliverAt(0)
		}
	}
	s.fail("never: %s", what)
}

func scenario(t *testing.T, opts simOptions, run func(s *sim)) (err error) {
	s := newSim(1, opts)
	s.faults = false
	defer s.recover(&err)
	run(s)
	return nil
}

func (s *sim) acked() int { return len(s.chk.acked) }

// TestKIP101TruncationToStaleHighWatermark: a follower holding an
// acknowledged record with a high watermark below it becomes follower of
// a new leader; then the other replicas die and it is elected. Truncating
// to its high watermark loses the record; truncating by epoch keeps it.
func TestKIP101TruncationToStaleHighWatermark(t *testing.T) {
	run := func(s *sim) {
		b := s.brokers
		s.settle(nil, "followers fetching", func() bool { return b[1].synced && b[2].synced })
		s.produce(true)
		s.settle(nil, "acknowledged", func() bool { return s.acked() == 1 })
		if b[1].r.HighWatermark() != 0 || len(b[1].log) != 1 {
			s.fail("broker 1: hw %d log %d, want 0 and 1", b[1].r.HighWatermark(), len(b[1].log))
		}
		for _, x := range b {
			s.flush(x)
		}
		s.net = nil // the answers carrying the new high watermark are late
		s.ctl.leader = 2
		s.bump("leader moved")
		s.settle(nil, "broker 1 follows 2", func() bool { return b[1].r.Leader() == 2 })
		s.net = nil
		s.crash(b[0])
		s.crash(b[2])
		s.settle(nil, "broker 1 leads", func() bool { return b[1].r.Role() == Leader })
	}
	if err := scenario(t, simOptions{minISR: 1}, run); err != nil {
		t.Fatal(err)
	}
	err := scenario(t, simOptions{minISR: 1, truncateToHW: true}, run)
	if err == nil || !strings.Contains(err.Error(), "acknowledged record") {
		t.Fatalf("the follower truncating to its high watermark lost nothing: %v", err)
	}
}

// TestKIP101UnflushedTails: the leader and its follower crash together;
// the follower lost the unflushed acknowledged record, restarts first and
// is elected, and writes anew. The record may be lost, but the old
// leader, returning, must truncate to the new leader's epoch boundary and
// not keep a different record below the high watermarks.
func TestKIP101UnflushedTails(t *testing.T) {
	run := func(s *sim) {
		b := s.brokers
		s.crash(b[2])
		s.settle(nil, "follower fetching", func() bool { return b[1].synced && b[1].r.LeaderEpoch() == s.ctl.epoch })
		s.produce(true)
		s.settle(nil, "acknowledged", func() bool { return s.acked() == 1 })
		s.flush(b[0])
		b[0].hwCheckpoint = b[0].r.HighWatermark()
		s.crashTogether(b[0], b[1])
		s.start(b[1])
		s.settle(nil, "broker 1 leads", func() bool { return b[1].r.Role() == Leader })
		s.produce(false)
		s.start(b[0])
		s.settle(nil, "broker 0 follows", func() bool { return b[0].synced })
		s.produce(false)
		s.settle(nil, "high watermarks past the records", func() bool {
			return b[0].r.HighWatermark() >= 2 && b[1].r.HighWatermark() >= 2
		})
		if b[0].log[0] != b[1].log[0] || b[0].log[1] != b[1].log[1] {
			s.fail("diverged: %v and %v", b[0].log, b[1].log)
		}
	}
	if err := scenario(t, simOptions{minISR: 1}, run); err != nil {
		t.Fatal(err)
	}
	err := scenario(t, simOptions{minISR: 1, truncateToHW: true}, run)
	if err == nil || !strings.Contains(err.Error(), "diverge") {
		t.Fatalf("the follower truncating to its high watermark did not diverge: %v", err)
	}
}

// TestKIP279FastLeaderChanges: leadership moves through the replicas at
// new epochs, each leader writing a record only it holds before the next
// change; the survivors resolve the divergence one epoch at a time and end
// with the last leader's log.
func TestKIP279FastLeaderChanges(t *testing.T) {
	err := scenario(t, simOptions{minISR: 1}, func(s *sim) {
		b := s.brokers
		s.settle(nil, "followers fetching", func() bool { return b[1].synced && b[2].synced })
		for _, next := range []int32{1, 2, 0, 1} {
			s.produce(false) // only the leader has it
			s.net = nil
			s.ctl.leader = next
			s.bump("leader moved")
			s.pump(3) // the LeaderAndIsrs
		}
		s.settle(nil, "converged", func() bool {
			l := b[1]
			return l.r.Role() == Leader && b[0].r.LogEnd() == l.r.LogEnd() && b[2].r.LogEnd() == l.r.LogEnd() &&
				l.r.HighWatermark() == l.r.LogEnd() && b[0].synced && b[2].synced
		})
		for _, x := range b {
			if off, ok := differ(x.log, b[1].log, int64(len(b[1].log))); ok || len(x.log) != len(b[1].log) {
				s.fail("broker %d: %v, leader's %v (differ at %d)", x.id, x.log, b[1].log, off)
			}
		}
		if s.stats["fetch diverged"] < 2 || s.stats["truncated records"] == 0 {
			s.fail("no divergence resolved: %v", s.stats)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
}
