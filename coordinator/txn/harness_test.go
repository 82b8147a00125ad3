package txn

import (
	"testing"

	"github.com/sluice-io/sluice/engine"
)

// harness drives one Coordinator as a driver would, keeping what each
// Ready asked for.
type harness struct {
	t       *testing.T
	c       *Coordinator
	nextPID int64
	writes  []Write
	markers []Marker
	answers map[uint64]Answer
}

func newHarness(t *testing.T, opts Options) *harness {
	h := &harness{t: t, nextPID: 1000, answers: map[uint64]Answer{}}
	opts.NewProducerID = func() (int64, int16) { h.nextPID++; return h.nextPID - 1, 0 }
	h.c = New(3, 7, opts)
	return h
}

// step feeds events, then takes and acknowledges a Ready, returning it.
func (h *harness) step(evs ...Event) Ready {
	h.t.Helper()
	for _, ev := range evs {
		h.c.Step(ev)
	}
	rd := h.c.Ready()
	h.c.Advance(rd)
	h.writes = append(h.writes, rd.Writes...)
	h.markers = append(h.markers, rd.Markers...)
	for _, a := range rd.Answers {
		if _, dup := h.answers[a.Req]; dup {
			h.t.Fatalf("request %d answered twice", a.Req)
		}
		h.answers[a.Req] = a
	}
	return rd
}

// ack answers every write and marker of rd with code and returns the
// next Ready.
func (h *harness) ack(rd Ready, code int16) Ready {
	h.t.Helper()
	var evs []Event
	for _, w := range rd.Writes {
		evs = append(evs, WriteResult{ID: w.ID, Code: code})
	}
	for _, m := range rd.Markers {
		evs = append(evs, MarkerResult{ID: m.ID, Code: code})
	}
	return h.step(evs...)
}

// answer returns the answer to req, failing if there is none.
func (h *harness) answer(req uint64) Answer {
	h.t.Helper()
	a, ok := h.answers[req]
	if !ok {
		h.t.Fatalf("request %d not answered", req)
	}
	return a
}

// init runs an InitProducerId to its written answer.
func (h *harness) init(req uint64, id string) Answer {
	h.t.Helper()
	h.ack(h.step(Tick{NowMs: 1}, InitProducerID{Req: req, Version: 4, TransactionalID: id, TimeoutMs: 60000, ProducerID: -1, Epoch: -1}), 0)
	return h.answer(req)
}

// begin runs an init and an AddPartitions of tps, written.
func (h *harness) begin(id string, tps ...engine.Partition) Answer {
	h.t.Helper()
	a := h.init(900, id)
	h.ack(h.step(AddPartitions{Req: 901, Version: 3, TransactionalID: id, ProducerID: a.ProducerID, Epoch: a.Epoch, Partitions: tps}), 0)
	if c := h.answer(901).Code; c != 0 {
		h.t.Fatalf("AddPartitions: code %d", c)
	}
	delete(h.answers, 900)
	delete(h.answers, 901)
	return a
}

// state returns the state of id, failing if unknown.
func (h *harness) state(id string) Metadata {
	h.t.Helper()
	m, ok := h.c.Get(id)
	if !ok {
		h.t.Fatalf("%q unknown", id)
	}
	return m
}

func decode(t *testing.T, w Write) Metadata {
	t.Helper()
	m, _, err := DecodeRecord(w.Key, w.Value)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

var tp0, tp1 = engine.Partition{Topic: "a", Partition: 0}, engine.Partition{Topic: "b", Partition: 1}
