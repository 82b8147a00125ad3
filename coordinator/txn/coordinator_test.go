package txn

import (
	"testing"

	"github.com/sluice-io/sluice/coordinator/group"
	"github.com/sluice-io/sluice/engine"
	"github.com/twmb/franz-go/pkg/kerr"
)

func TestInitProducerIDNewIDAnsweredOnlyWhenWritten(t *testing.T) {
	h := newHarness(t, Options{})
	rd := h.step(Tick{NowMs: 5}, InitProducerID{Req: 1, Version: 4, TransactionalID: "x", TimeoutMs: 60000, ProducerID: -1, Epoch: -1})
	if len(rd.Answers) != 0 || len(rd.Writes) != 1 {
		t.Fatalf("before the write: %+v", rd)
	}
	if m := decode(t, rd.Writes[0]); m.TransactionalID != "x" || m.ProducerID != 1000 || m.Epoch != 0 || m.State != Empty || m.TimeoutMs != 60000 || m.UpdateMs != 5 || m.StartMs != -1 {
		t.Fatalf("record %+v", m)
	}
	h.ack(rd, 0)
	if a := h.answer(1); a != (Answer{Req: 1, ProducerID: 1000, Epoch: 0}) {
		t.Fatalf("answer %+v", a)
	}
}

func TestInitProducerIDBumpFencesOlderProducer(t *testing.T) {
	h := newHarness(t, Options{})
	first := h.init(1, "x")
	second := h.init(2, "x")
	if second.ProducerID != first.ProducerID || second.Epoch != first.Epoch+1 {
		t.Fatalf("second init %+v after %+v", second, first)
	}
	for _, ev := range []Event{
		AddPartitions{Req: 3, Version: 3, TransactionalID: "x", ProducerID: first.ProducerID, Epoch: first.Epoch, Partitions: []engine.Partition{tp0}},
		AddOffsets{Req: 4, Version: 3, TransactionalID: "x", ProducerID: first.ProducerID, Epoch: first.Epoch, Group: "g"},
		EndTxn{Req: 5, Version: 3, TransactionalID: "x", ProducerID: first.ProducerID, Epoch: first.Epoch, Commit: true},
	} {
		h.step(ev)
	}
	for req := uint64(3); req <= 5; req++ {
		if c := h.answer(req).Code; c != kerr.ProducerFenced.Code {
			t.Errorf("request %d: code %d, want PRODUCER_FENCED", req, c)
		}
	}
	// Versions older than PRODUCER_FENCED get INVALID_PRODUCER_EPOCH.
	h.step(EndTxn{Req: 6, Version: 1, TransactionalID: "x", ProducerID: first.ProducerID, Epoch: first.Epoch})
	if c := h.answer(6).Code; c != kerr.InvalidProducerEpoch.Code {
		t.Errorf("EndTxn v1: code %d, want INVALID_PRODUCER_EPOCH", c)
	}
}

func TestCommitWritesPrepareThenMarkersThenComplete(t *testing.T) {
	h := newHarness(t, Options{})
	a := h.begin("x", tp1, tp0)
	if m := h.state("x"); m.State != Ongoing || len(m.Partitions) != 2 || m.Partitions[0] != tp0 || m.StartMs != 1 {
		t.Fatalf("after AddPartitions: %+v", m)
	}
	rd := h.step(EndTxn{Req: 1, Version: 3, TransactionalID: "x", ProducerID: a.ProducerID, Epoch: a.Epoch, Commit: true})
	if len(rd.Markers) != 0 || len(rd.Answers) != 0 || len(rd.Writes) != 1 || decode(t, rd.Writes[0]).State != PrepareCommit {
		t.Fatalf("EndTxn before its write: %+v", rd)
	}
	rd = h.ack(rd, 0)
	if h.answer(1).Code != 0 || len(rd.Markers) != 2 || len(rd.Writes) != 0 {
		t.Fatalf("after the Prepare record: %+v", rd)
	}
	for _, m := range rd.Markers {
		if !m.Commit || m.ProducerID != a.ProducerID || m.Epoch != a.Epoch || m.CoordinatorEpoch != 7 {
			t.Fatalf("marker %+v", m)
		}
	}
	// One marker fails and is sent again; the record waits for both.
	rd = h.step(MarkerResult{ID: rd.Markers[0].ID}, MarkerResult{ID: rd.Markers[1].ID, Code: kerr.NotLeaderForPartition.Code})
	if len(rd.Writes) != 0 || len(rd.Markers) != 1 {
		t.Fatalf("after one marker: %+v", rd)
	}
	rd = h.ack(rd, 0)
	if len(rd.Writes) != 1 || decode(t, rd.Writes[0]).State != CompleteCommit {
		t.Fatalf("after the markers: %+v", rd)
	}
	// A failed Complete record is written again.
	rd = h.ack(rd, kerr.NotEnoughReplicas.Code)
	if len(rd.Writes) != 1 || len(rd.Answers) != 0 {
		t.Fatalf("after a failed Complete record: %+v", rd)
	}
	h.ack(rd, 0)
	if m := h.state("x"); m.State != CompleteCommit || len(m.Partitions) != 0 {
		t.Fatalf("ended: %+v", m)
	}
	h.step(EndTxn{Req: 2, Version: 3, TransactionalID: "x", ProducerID: a.ProducerID, Epoch: a.Epoch, Commit: true})
	if c := h.answer(2).Code; c != 0 {
		t.Fatalf("retried commit: code %d", c)
	}
}

func TestInitDuringOngoingAbortsUnderBumpedEpoch(t *testing.T) {
	h := newHarness(t, Options{})
	a := h.begin("x", tp0)
	rd := h.step(InitProducerID{Req: 1, Version: 4, TransactionalID: "x", TimeoutMs: 60000, ProducerID: -1, Epoch: -1})
	if len(rd.Writes) != 1 {
		t.Fatalf("init during Ongoing: %+v", rd)
	}
	if m := decode(t, rd.Writes[0]); m.State != PrepareAbort || m.Epoch != a.Epoch+1 {
		t.Fatalf("fence record %+v", m)
	}
	// The old producer is fenced at once, before the record is written.
	h.step(EndTxn{Req: 2, Version: 3, TransactionalID: "x", ProducerID: a.ProducerID, Epoch: a.Epoch, Commit: true})
	if c := h.answer(2).Code; c != kerr.ProducerFenced.Code {
		t.Fatalf("old producer's commit: code %d", c)
	}
	rd = h.ack(rd, 0)
	if got := h.answer(1); got.Code != kerr.ConcurrentTransactions.Code {
		t.Fatalf("init answered %+v", got)
	}
	if len(rd.Markers) != 1 || rd.Markers[0].Commit || rd.Markers[0].Epoch != a.Epoch+1 {
		t.Fatalf("markers %+v", rd.Markers)
	}
	// Still completing: a retried init waits.
	h.step(InitProducerID{Req: 3, Version: 4, TransactionalID: "x", TimeoutMs: 60000, ProducerID: -1, Epoch: -1})
	if c := h.answer(3).Code; c != kerr.ConcurrentTransactions.Code {
		t.Fatalf("init during PrepareAbort: code %d", c)
	}
	h.ack(h.ack(rd, 0), 0)
	if got := h.init(4, "x"); got.Code != 0 || got.Epoch != a.Epoch+2 {
		t.Fatalf("init after the abort: %+v", got)
	}
}

func TestEndTxnErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		setup  func(h *harness) Answer // leaves "x" in some state
		commit bool
		pid    func(Answer) int64
		want   int16
	}{
		{"unknown id", func(h *harness) Answer { return Answer{ProducerID: 5} }, true, nil, kerr.InvalidProducerIDMapping.Code},
		{"other producer id", func(h *harness) Answer { return h.init(1, "x") }, true, func(a Answer) int64 { return a.ProducerID + 1 }, kerr.InvalidProducerIDMapping.Code},
		{"Empty", func(h *harness) Answer { return h.init(1, "x") }, true, nil, kerr.InvalidTxnState.Code},
		{"commit while Add is written", func(h *harness) Answer {
			a := h.init(1, "x")
			h.step(AddPartitions{Req: 2, Version: 3, TransactionalID: "x", ProducerID: a.ProducerID, Epoch: a.Epoch, Partitions: []engine.Partition{tp0}})
			return a
		}, true, nil, kerr.ConcurrentTransactions.Code},
		{"commit in PrepareCommit", func(h *harness) Answer { return prepared(h, true) }, true, nil, kerr.ConcurrentTransactions.Code},
		{"abort in PrepareCommit", func(h *harness) Answer { return prepared(h, true) }, false, nil, kerr.InvalidTxnState.Code},
		{"abort in PrepareAbort", func(h *harness) Answer { return prepared(h, false) }, false, nil, kerr.ConcurrentTransactions.Code},
		{"abort after CompleteCommit", func(h *harness) Answer { return completed(h, true) }, false, nil, kerr.InvalidTxnState.Code},
		{"commit after CompleteAbort", func(h *harness) Answer { return completed(h, false) }, true, nil, kerr.InvalidTxnState.Code},
		{"abort after CompleteAbort", func(h *harness) Answer { return completed(h, false) }, false, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Options{})
			a := tc.setup(h)
			pid := a.ProducerID
			if tc.pid != nil {
				pid = tc.pid(a)
			}
			h.step(EndTxn{Req: 99, Version: 3, TransactionalID: "x", ProducerID: pid, Epoch: a.Epoch, Commit: tc.commit})
			if c := h.answer(99).Code; c != tc.want {
				t.Fatalf("code %d (%v), want %d", c, kerr.ErrorForCode(c), tc.want)
			}
		})
	}
}

// prepared leaves "x" in PrepareCommit or PrepareAbort, markers unsent.
func prepared(h *harness, commit bool) Answer {
	a := h.begin("x", tp0)
	h.ack(h.step(EndTxn{Req: 50, Version: 3, TransactionalID: "x", ProducerID: a.ProducerID, Epoch: a.Epoch, Commit: commit}), 0)
	return a
}

// completed leaves "x" in CompleteCommit or CompleteAbort.
func completed(h *harness, commit bool) Answer {
	a := h.begin("x", tp0)
	rd := h.ack(h.step(EndTxn{Req: 50, Version: 3, TransactionalID: "x", ProducerID: a.ProducerID, Epoch: a.Epoch, Commit: commit}), 0)
	h.ack(h.ack(rd, 0), 0)
	return a
}

func TestInitProducerIDErrors(t *testing.T) {
	h := newHarness(t, Options{MaxTimeoutMs: 1000})
	for req, ev := range map[uint64]InitProducerID{
		1: {TransactionalID: "", TimeoutMs: 10},
		2: {TransactionalID: "x", TimeoutMs: 0},
		3: {TransactionalID: "x", TimeoutMs: 1001},
	} {
		ev.Req, ev.Version, ev.ProducerID, ev.Epoch = req, 4, -1, -1
		h.step(ev)
	}
	for req, want := range map[uint64]int16{1: kerr.InvalidRequest.Code, 2: kerr.InvalidTransactionTimeout.Code, 3: kerr.InvalidTransactionTimeout.Code} {
		if c := h.answer(req).Code; c != want {
			t.Errorf("request %d: code %d, want %d", req, c, want)
		}
	}
	if len(h.writes) != 0 {
		t.Fatalf("refused inits wrote %d records", len(h.writes))
	}
	// PrepareCommit: CONCURRENT_TRANSACTIONS.
	h = newHarness(t, Options{})
	a := prepared(h, true)
	h.step(InitProducerID{Req: 4, Version: 4, TransactionalID: "x", TimeoutMs: 10, ProducerID: -1, Epoch: -1})
	if c := h.answer(4).Code; c != kerr.ConcurrentTransactions.Code {
		t.Errorf("init in PrepareCommit: code %d", c)
	}
	// KIP-360: another producer id is fenced.
	h.step(InitProducerID{Req: 5, Version: 4, TransactionalID: "x", TimeoutMs: 10, ProducerID: a.ProducerID + 9, Epoch: 0})
	if c := h.answer(5).Code; c != kerr.ProducerFenced.Code {
		t.Errorf("init with another producer id: code %d", c)
	}
}

func TestInitProducerIDKIP360Retry(t *testing.T) {
	h := newHarness(t, Options{})
	a := h.init(1, "x")
	bump := func(req uint64, epoch int16) Answer {
		h.ack(h.step(InitProducerID{Req: req, Version: 4, TransactionalID: "x", TimeoutMs: 10, ProducerID: a.ProducerID, Epoch: epoch}), 0)
		return h.answer(req)
	}
	if b := bump(2, a.Epoch); b.Code != 0 || b.Epoch != a.Epoch+1 {
		t.Fatalf("bump with the current epoch: %+v", b)
	}
	// A retry of that bump (its answer lost) gets the same epoch.
	if b := bump(3, a.Epoch); b.Code != 0 || b.Epoch != a.Epoch+1 {
		t.Fatalf("retried bump: %+v", b)
	}
	h.step(InitProducerID{Req: 4, Version: 4, TransactionalID: "x", TimeoutMs: 10, ProducerID: a.ProducerID, Epoch: a.Epoch + 7})
	if c := h.answer(4).Code; c != kerr.ProducerFenced.Code {
		t.Fatalf("bump with an unknown epoch: code %d", c)
	}
}

func TestEpochExhaustedRotatesProducerID(t *testing.T) {
	h := newHarness(t, Options{})
	m := Metadata{TransactionalID: "x", ProducerID: 77, Epoch: 32766, TimeoutMs: 10, State: CompleteCommit, StartMs: 1, UpdateMs: 1}
	if err := h.c.Load(EncodeKey("x"), EncodeValue(m, 1)); err != nil {
		t.Fatal(err)
	}
	h.step(Loaded{})
	if a := h.init(1, "x"); a.ProducerID == 77 || a.Epoch != 0 {
		t.Fatalf("init at an exhausted epoch: %+v", a)
	}
}

func TestAddPartitionsAndOffsets(t *testing.T) {
	h := newHarness(t, Options{OffsetsPartitions: 7})
	a := h.begin("x", tp0)
	// Already in the transaction: answered at once, nothing written.
	rd := h.step(AddPartitions{Req: 1, Version: 3, TransactionalID: "x", ProducerID: a.ProducerID, Epoch: a.Epoch, Partitions: []engine.Partition{tp0}})
	if len(rd.Writes) != 0 || h.answer(1).Code != 0 {
		t.Fatalf("re-adding: %+v", rd)
	}
	h.ack(h.step(AddOffsets{Req: 2, Version: 3, TransactionalID: "x", ProducerID: a.ProducerID, Epoch: a.Epoch, Group: "grp"}), 0)
	want := engine.Partition{Topic: OffsetsTopic, Partition: group.PartitionFor("grp", 7)}
	if m := h.state("x"); h.answer(2).Code != 0 || len(m.Partitions) != 2 || m.Partitions[0] != want {
		t.Fatalf("after AddOffsets: %+v", m)
	}
	// During PrepareCommit: CONCURRENT_TRANSACTIONS.
	h.ack(h.step(EndTxn{Req: 3, Version: 3, TransactionalID: "x", ProducerID: a.ProducerID, Epoch: a.Epoch, Commit: true}), 0)
	h.step(AddPartitions{Req: 4, Version: 3, TransactionalID: "x", ProducerID: a.ProducerID, Epoch: a.Epoch, Partitions: []engine.Partition{tp1}})
	if c := h.answer(4).Code; c != kerr.ConcurrentTransactions.Code {
		t.Fatalf("add in PrepareCommit: code %d", c)
	}
	h.step(AddPartitions{Req: 5, Version: 3, TransactionalID: "y", ProducerID: 1, Epoch: 0, Partitions: []engine.Partition{tp1}})
	if c := h.answer(5).Code; c != kerr.InvalidProducerIDMapping.Code {
		t.Fatalf("add for an unknown id: code %d", c)
	}
}

func TestFailedWritesAnswerErrorsAndChangeNothing(t *testing.T) {
	h := newHarness(t, Options{})
	h.ack(h.step(InitProducerID{Req: 1, Version: 4, TransactionalID: "x", TimeoutMs: 10, ProducerID: -1, Epoch: -1}), kerr.NotEnoughReplicas.Code)
	if c := h.answer(1).Code; c != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("init: code %d", c)
	}
	// Kafka keeps the new id, not yet written, and its producer id.
	if m, ok := h.c.Get("x"); !ok || m.Epoch != -1 || m.ProducerID != 1000 {
		t.Fatalf("after its first record failed: %+v, %v", m, ok)
	}
	a := h.begin("x", tp0)
	if a.ProducerID != 1000 || a.Epoch != 0 {
		t.Fatalf("init after a failed first record: %+v", a)
	}
	h.ack(h.step(AddPartitions{Req: 2, Version: 3, TransactionalID: "x", ProducerID: a.ProducerID, Epoch: a.Epoch, Partitions: []engine.Partition{tp1}}), kerr.NotLeaderForPartition.Code)
	if c, m := h.answer(2).Code, h.state("x"); c != kerr.NotCoordinator.Code || len(m.Partitions) != 1 {
		t.Fatalf("add: code %d, state %+v", c, m)
	}
	// A failed fence keeps the epoch bumped in memory and is not bumped again.
	h.ack(h.step(InitProducerID{Req: 3, Version: 4, TransactionalID: "x", TimeoutMs: 10, ProducerID: -1, Epoch: -1}), kerr.RequestTimedOut.Code)
	if c := h.answer(3).Code; c != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("fencing init: code %d", c)
	}
	h.step(EndTxn{Req: 4, Version: 3, TransactionalID: "x", ProducerID: a.ProducerID, Epoch: a.Epoch, Commit: true})
	if c := h.answer(4).Code; c != kerr.ProducerFenced.Code {
		t.Fatalf("old producer after a failed fence: code %d", c)
	}
	rd := h.step(InitProducerID{Req: 5, Version: 4, TransactionalID: "x", TimeoutMs: 10, ProducerID: -1, Epoch: -1})
	if m := decode(t, rd.Writes[0]); m.Epoch != a.Epoch+1 || m.State != PrepareAbort {
		t.Fatalf("second fence record %+v", m)
	}
}

func TestTimedOutTransactionIsAbortedAndFenced(t *testing.T) {
	h := newHarness(t, Options{})
	a := h.begin("x", tp0) // started at 1, timeout 60000
	if rd := h.step(Tick{NowMs: 60001}, AbortTimedOut{}); len(rd.Writes) != 0 {
		t.Fatalf("aborted at its timeout: %+v", rd)
	}
	rd := h.step(Tick{NowMs: 60002}, AbortTimedOut{})
	if len(rd.Writes) != 1 || len(rd.Answers) != 0 {
		t.Fatalf("past its timeout: %+v", rd)
	}
	if m := decode(t, rd.Writes[0]); m.State != PrepareAbort || m.Epoch != a.Epoch+1 {
		t.Fatalf("abort record %+v", m)
	}
	rd = h.ack(rd, 0)
	if len(rd.Markers) != 1 || rd.Markers[0].Commit || len(rd.Answers) != 0 {
		t.Fatalf("after the abort record: %+v", rd)
	}
	h.ack(h.ack(rd, 0), 0)
	h.step(EndTxn{Req: 1, Version: 3, TransactionalID: "x", ProducerID: a.ProducerID, Epoch: a.Epoch, Commit: true})
	if m, c := h.state("x"), h.answer(1).Code; m.State != CompleteAbort || c != kerr.ProducerFenced.Code {
		t.Fatalf("state %v, late commit code %d", m.State, c)
	}
}

func TestIdleIDsExpire(t *testing.T) {
	h := newHarness(t, Options{ExpirationMs: 1000})
	h.init(1, "x")
	h.begin("y", tp0) // Ongoing: never expires
	if rd := h.step(Tick{NowMs: 1000}, ExpireIDs{}); len(rd.Writes) != 0 {
		t.Fatalf("expired early: %+v", rd)
	}
	rd := h.step(Tick{NowMs: 1001}, ExpireIDs{})
	if len(rd.Writes) != 1 || rd.Writes[0].TransactionalID != "x" || rd.Writes[0].Value != nil {
		t.Fatalf("expiry: %+v", rd)
	}
	if _, ok := h.c.Get("x"); !ok {
		t.Fatal("forgotten before its tombstone is written")
	}
	h.ack(rd, 0)
	if _, ok := h.c.Get("x"); ok {
		t.Fatal("kept after its tombstone")
	}
	if a := h.init(2, "x"); a.ProducerID == 1000 || a.Epoch != 0 {
		t.Fatalf("a new producer after expiry: %+v", a)
	}
}

func TestLoadResendsMarkersOfPreparedTransactions(t *testing.T) {
	h := newHarness(t, Options{})
	m := Metadata{TransactionalID: "x", ProducerID: 5, Epoch: 2, TimeoutMs: 10, State: PrepareCommit, Partitions: []engine.Partition{tp0, tp1}, StartMs: 1, UpdateMs: 2}
	for _, v := range []int16{0, 1} {
		if err := h.c.Load(EncodeKey("x"), EncodeValue(m, v)); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.c.Load(EncodeKey("gone"), EncodeValue(Metadata{TransactionalID: "gone", State: Empty}, 1)); err != nil {
		t.Fatal(err)
	}
	if err := h.c.Load(EncodeKey("gone"), nil); err != nil {
		t.Fatal(err)
	}
	if err := h.c.Load([]byte{0, 9}, nil); err == nil {
		t.Fatal("a bad key loaded")
	}
	rd := h.step(Loaded{})
	if len(rd.Markers) != 2 || !rd.Markers[0].Commit || rd.Markers[0].Epoch != 2 {
		t.Fatalf("markers after load: %+v", rd.Markers)
	}
	if ids := h.c.IDs(); len(ids) != 1 || ids[0] != "x" {
		t.Fatalf("ids %v", ids)
	}
	h.ack(h.ack(rd, 0), 0)
	if st := h.state("x").State; st != CompleteCommit {
		t.Fatalf("state %v", st)
	}
}

func TestTransitions(t *testing.T) {
	legal := map[[2]State]bool{}
	for to, froms := range validPrevious {
		for _, from := range froms {
			legal[[2]State{from, State(to)}] = true
		}
	}
	for from := Empty; from <= PrepareEpochFence; from++ {
		for to := Empty; to <= PrepareEpochFence; to++ {
			if CanMove(from, to) != legal[[2]State{from, to}] {
				t.Errorf("%v -> %v", from, to)
			}
		}
	}
	if CanMove(Empty, PrepareCommit) || CanMove(CompleteCommit, CompleteAbort) || !CanMove(PrepareEpochFence, PrepareAbort) {
		t.Error("Kafka's table not kept")
	}
}

func TestMarkerFencedAtLeaderStopsSending(t *testing.T) {
	h := newHarness(t, Options{})
	a := h.begin("x", tp0, tp1)
	rd := h.ack(h.step(EndTxn{Req: 1, Version: 3, TransactionalID: "x", ProducerID: a.ProducerID, Epoch: a.Epoch, Commit: true}), 0)
	rd = h.step(MarkerResult{ID: rd.Markers[0].ID, Code: kerr.TransactionCoordinatorFenced.Code}, MarkerResult{ID: rd.Markers[1].ID, Code: kerr.NotLeaderForPartition.Code})
	if !rd.Empty() {
		t.Fatalf("after a fenced marker: %+v", rd)
	}
	if st := h.state("x").State; st != PrepareCommit {
		t.Fatalf("state %v, want PrepareCommit until a newer coordinator loads it", st)
	}
}

func TestExhaustedEpochWithOtherExpectedEpochIsNotBumped(t *testing.T) {
	h := newHarness(t, Options{})
	m := Metadata{TransactionalID: "x", ProducerID: 77, Epoch: 32766, TimeoutMs: 10, State: Empty, StartMs: -1, UpdateMs: 1}
	if err := h.c.Load(EncodeKey("x"), EncodeValue(m, 1)); err != nil {
		t.Fatal(err)
	}
	h.step(Loaded{}, InitProducerID{Req: 1, Version: 4, TransactionalID: "x", TimeoutMs: 10, ProducerID: 77, Epoch: 5})
	if c := h.answer(1).Code; c != kerr.ProducerFenced.Code {
		t.Fatalf("code %d, want PRODUCER_FENCED", c)
	}
	h.ack(h.step(InitProducerID{Req: 2, Version: 4, TransactionalID: "x", TimeoutMs: 10, ProducerID: 77, Epoch: 32766}), 0)
	if a := h.answer(2); a.ProducerID == 77 || a.Epoch != 0 {
		t.Fatalf("rotation with the current epoch expected: %+v", a)
	}
	if m := h.state("x"); m.LastProducerID != 77 || m.LastEpoch != 32766 {
		t.Fatalf("last producer %d epoch %d", m.LastProducerID, m.LastEpoch)
	}
}

// KIP-360's InitProducerId from the producer of an Ongoing transaction (as
// franz-go sends it to heal an EndTxn whose outcome it never learned):
// the transaction is aborted under a fencing epoch and the request answered
// CONCURRENT_TRANSACTIONS; its retry at the same epoch is then
// PRODUCER_FENCED, as with Kafka, whose prepareFenceProducerEpoch records
// no last epoch. The producer must start again without an expected epoch.
func TestKIP360InitDuringOngoingFencesTheRetry(t *testing.T) {
	h := newHarness(t, Options{})
	a := h.begin("x", tp0)
	init := func(req uint64, pid int64, epoch int16) Ready {
		return h.step(InitProducerID{Req: req, Version: 4, TransactionalID: "x", TimeoutMs: 60000, ProducerID: pid, Epoch: epoch})
	}
	rd := init(1, a.ProducerID, a.Epoch)
	if len(rd.Writes) != 1 {
		t.Fatalf("init during Ongoing: %+v", rd)
	}
	rd = h.ack(rd, 0)
	if got := h.answer(1); got.Code != kerr.ConcurrentTransactions.Code {
		t.Fatalf("init answered %+v", got)
	}
	h.ack(h.ack(rd, 0), 0) // the abort's markers, then CompleteAbort
	init(2, a.ProducerID, a.Epoch)
	if got := h.answer(2); got.Code != kerr.ProducerFenced.Code {
		t.Fatalf("the retry at the fenced epoch: %+v", got)
	}
	if got := h.init(3, "x"); got.Code != 0 || got.Epoch != a.Epoch+2 {
		t.Fatalf("a new producer: %+v", got)
	}
}
