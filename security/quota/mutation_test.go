package quota

import (
	"testing"
	"time"
)

// A strict quota of 1/s with 2 samples of 1 s holds a burst of 2: a first
// 3-partition mutation is taken (the bucket was not below zero), the next
// refused with the time to refill the bucket to zero; a second later it is
// taken again. A permissive one takes all and throttles.
func TestMutationsStrictAndPermissive(t *testing.T) {
	m := NewManager(Config{MutationSamples: 2, MutationWindow: time.Second})
	m.Set(ControllerMutationRate, Entity{ClientID: "c"}, 1, true)
	var c Client
	m.Resolve(&c, "u", "c", 0)
	q := m.Mutations(&c, true)
	if !q.Record(3, 0) {
		t.Fatal("first mutation refused, want taken (the bucket was full)")
	}
	if d := q.Throttle(0); d != 0 {
		t.Fatalf("throttle after a taken mutation = %v, want 0", d)
	}
	if q.Record(1, 0) {
		t.Fatal("mutation with the bucket at -1 taken, want refused")
	}
	if d := q.Throttle(0); d != time.Second {
		t.Fatalf("throttle = %v, want 1s", d)
	}
	if d := q.Throttle(sec / 4); d != 750*time.Millisecond {
		t.Fatalf("throttle 250 ms later = %v, want 750ms", d)
	}
	q = m.Mutations(&c, true)
	if !q.Record(1, sec) || q.Throttle(sec) != 0 {
		t.Fatal("a second later (bucket at 0) the mutation is refused or throttled, want taken")
	}
	p := m.Mutations(&c, false)
	if !p.Record(4, sec) {
		t.Fatal("permissive mutation refused")
	}
	// The bucket: 0 - 1 - 4 = -5 at 1 s.
	if d := p.Throttle(sec); d != 5*time.Second {
		t.Fatalf("permissive throttle = %v, want 5s", d)
	}
	var none Client
	m.Resolve(&none, "u", "other", sec)
	u := m.Mutations(&none, true)
	if !u.Record(1e9, sec) || u.Throttle(sec) != 0 {
		t.Fatal("a client without a quota is refused or throttled")
	}
}
