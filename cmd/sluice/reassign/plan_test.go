package reassign

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// roundRobin is Kafka's placement without racks from broker start:
// partition p on brokers[(p+start+i) % n] for each replica i.
func roundRobin(topic string, partitions, rf int, brokers []int32, start int) []Assignment {
	var out []Assignment
	for p := range partitions {
		var reps []int32
		for i := range rf {
			reps = append(reps, brokers[(p+start+i)%len(brokers)])
		}
		out = append(out, Assignment{Topic: topic, Partition: int32(p), Replicas: reps})
	}
	return out
}

func plainBrokers(ids ...int32) []Broker {
	var out []Broker
	for _, id := range ids {
		out = append(out, Broker{ID: id})
	}
	return out
}

// checkedPlan plans in and checks rules 1 and 2 of the planner on the
// result, which it returns with the moves.
func checkedPlan(t *testing.T, in Input) ([]Move, []Assignment) {
	t.Helper()
	moves, err := Plan(in)
	if err != nil {
		t.Fatal(err)
	}
	after := Apply(in.Partitions, moves)
	rack := map[int32]string{}
	for _, b := range in.Brokers {
		if !slices.Contains(in.Drain, b.ID) {
			rack[b.ID] = b.Rack
		}
	}
	racks := map[string]bool{}
	for _, r := range rack {
		racks[r] = true
	}
	for i, p := range after {
		if len(p.Replicas) != len(in.Partitions[i].Replicas) {
			t.Fatalf("%s-%d: replicas %v, was %v", p.Topic, p.Partition, p.Replicas, in.Partitions[i].Replicas)
		}
		onRack := map[string]int{}
		for j, r := range p.Replicas {
			if _, ok := rack[r]; !ok {
				t.Fatalf("%s-%d: replicas %v: broker %d is not a target", p.Topic, p.Partition, p.Replicas, r)
			}
			if slices.Contains(p.Replicas[:j], r) {
				t.Fatalf("%s-%d: replicas %v hold %d twice", p.Topic, p.Partition, p.Replicas, r)
			}
			onRack[rack[r]]++
		}
		if !in.IgnoreRacks && rack[p.Replicas[0]] != "" {
			limit := (len(p.Replicas) + len(racks) - 1) / len(racks)
			for r, n := range onRack {
				if n > limit {
					t.Fatalf("%s-%d: replicas %v: %d on rack %s, limit %d", p.Topic, p.Partition, p.Replicas, n, r, limit)
				}
			}
		}
	}
	for _, m := range moves {
		if slices.Equal(m.From, m.To) {
			t.Fatalf("%s-%d: a move that changes nothing", m.Topic, m.Partition)
		}
	}
	return moves, after
}

// spread returns the lowest and highest of counts over brokers (a broker
// missing from counts has 0).
func spread(counts map[int32]int, brokers []int32) (lo, hi int) {
	lo, hi = counts[brokers[0]], counts[brokers[0]]
	for _, b := range brokers {
		lo, hi = min(lo, counts[b]), max(hi, counts[b])
	}
	return lo, hi
}

// wantBalanced fails unless every broker's replica and preferred-leader
// counts, over all topics and per topic, are within 1 of each other.
func wantBalanced(t *testing.T, parts []Assignment, brokers []int32, perTopic bool) {
	t.Helper()
	check := func(what string, parts []Assignment) {
		replicas, leaders := Counts(parts)
		if lo, hi := spread(replicas, brokers); hi-lo > 1 {
			t.Errorf("%s: replicas per broker %v (brokers %v)", what, replicas, brokers)
		}
		if lo, hi := spread(leaders, brokers); hi-lo > 1 {
			t.Errorf("%s: leaders per broker %v (brokers %v)", what, leaders, brokers)
		}
	}
	check("all topics", parts)
	if !perTopic {
		return
	}
	byTopic := map[string][]Assignment{}
	for _, p := range parts {
		byTopic[p.Topic] = append(byTopic[p.Topic], p)
	}
	for topic, ps := range byTopic {
		check("topic "+topic, ps)
	}
}

// replicasMoved counts the replicas the moves copy to a new broker.
func replicasMoved(moves []Move) int {
	n := 0
	for _, m := range moves {
		n += len(m.Adding())
	}
	return n
}

func TestPlanBalancedClusterIsLeftAlone(t *testing.T) {
	parts := append(roundRobin("a", 12, 2, []int32{1, 2, 3, 4}, 0), roundRobin("b", 5, 3, []int32{1, 2, 3, 4}, 1)...)
	moves, _ := checkedPlan(t, Input{Partitions: parts, Brokers: plainBrokers(1, 2, 3, 4)})
	if len(moves) != 0 {
		t.Fatalf("a balanced cluster gets moves: %v", moves)
	}
}

// The case: 3 brokers, 12 partitions RF 2 (and the offsets
// topic), a fourth broker joins: it takes 6 replicas of the topic and
// leads 3, moving no more replicas than it needs.
func TestPlanNewBrokerTakesItsShare(t *testing.T) {
	parts := append(roundRobin("orders", 12, 2, []int32{1, 2, 3}, 0), roundRobin("__consumer_offsets", 6, 3, []int32{1, 2, 3}, 0)...)
	moves, after := checkedPlan(t, Input{Partitions: parts, Brokers: plainBrokers(1, 2, 3, 4)})
	wantBalanced(t, after, []int32{1, 2, 3, 4}, true)
	// 42 replicas over 4 brokers: the new one needs 10 (6 of orders, 4
	// or 5 of the offsets topic); nothing else need move.
	replicas, _ := Counts(after)
	if got := replicasMoved(moves); got != replicas[4] {
		t.Fatalf("%d replicas moved, broker 4 took %d: %v", got, replicas[4], moves)
	}
	for _, m := range moves {
		for _, r := range m.Adding() {
			if r != 4 {
				t.Fatalf("%s-%d: %v → %v adds a replica on %d, not the new broker", m.Topic, m.Partition, m.From, m.To, r)
			}
		}
	}
	var orders []Assignment
	for _, p := range after {
		if p.Topic == "orders" {
			orders = append(orders, p)
		}
	}
	or, ol := Counts(orders)
	for _, b := range []int32{1, 2, 3, 4} {
		if or[b] != 6 || ol[b] != 3 {
			t.Errorf("orders: broker %d holds %d replicas and leads %d, want 6 and 3", b, or[b], ol[b])
		}
	}
}

func TestPlanDecommissionEmptiesTheBroker(t *testing.T) {
	parts := append(roundRobin("a", 12, 2, []int32{1, 2, 3, 4}, 0), roundRobin("b", 7, 3, []int32{1, 2, 3, 4}, 2)...)
	moves, after := checkedPlan(t, Input{Partitions: parts, Brokers: plainBrokers(1, 2, 3, 4), Drain: []int32{3}})
	replicas, leaders := Counts(after)
	if replicas[3] != 0 || leaders[3] != 0 {
		t.Fatalf("broker 3 still holds %d replicas, leads %d", replicas[3], leaders[3])
	}
	wantBalanced(t, after, []int32{1, 2, 4}, true)
	before, _ := Counts(parts)
	if got := replicasMoved(moves); got != before[3] {
		t.Fatalf("%d replicas moved, broker 3 held %d: %v", got, before[3], moves)
	}
}

// A broker missing from the target brokers (dead, or not in
// --broker-list) loses its replicas as a drained one does.
func TestPlanReplicasOffTargetBrokersMove(t *testing.T) {
	parts := roundRobin("a", 6, 2, []int32{1, 2, 3}, 0)
	_, after := checkedPlan(t, Input{Partitions: parts, Brokers: plainBrokers(1, 2)})
	wantBalanced(t, after, []int32{1, 2}, true)
}

func rackBrokers(racks map[int32]string) []Broker {
	var out []Broker
	for id, r := range racks {
		out = append(out, Broker{ID: id, Rack: r})
	}
	slices.SortFunc(out, func(a, b Broker) int { return int(a.ID - b.ID) })
	return out
}

// Replicas placed without racks (brokers 1 and 2 share rack x) are
// repaired onto distinct racks, balanced, and a broker joining rack z
// takes its share without breaking them.
func TestPlanRacks(t *testing.T) {
	brokers := rackBrokers(map[int32]string{1: "x", 2: "x", 3: "y", 4: "y", 5: "z", 6: "z"})
	parts := roundRobin("a", 12, 3, []int32{1, 2, 3, 4, 5, 6}, 0)
	_, after := checkedPlan(t, Input{Partitions: parts, Brokers: brokers})
	wantBalanced(t, after, []int32{1, 2, 3, 4, 5, 6}, true)

	brokers = append(brokers, Broker{ID: 7, Rack: "z"})
	moves, again := checkedPlan(t, Input{Partitions: after, Brokers: brokers})
	// Rack z's three brokers share what its two held: 12 replicas.
	replicas, _ := Counts(again)
	if replicas[5]+replicas[6]+replicas[7] != 12 || replicas[7] < 3 {
		t.Fatalf("rack z holds %d, %d, %d", replicas[5], replicas[6], replicas[7])
	}
	for _, m := range moves {
		if slices.ContainsFunc(m.Removing(), func(b int32) bool { return b < 5 }) {
			t.Fatalf("%s-%d: %v → %v moves a replica off racks x or y", m.Topic, m.Partition, m.From, m.To)
		}
	}
}

// With fewer racks than the replication factor a rack holds at most
// ceil(RF/racks) replicas of a partition.
func TestPlanFewerRacksThanReplicas(t *testing.T) {
	brokers := rackBrokers(map[int32]string{1: "x", 2: "x", 3: "x", 4: "y", 5: "y", 6: "y"})
	parts := roundRobin("a", 10, 3, []int32{1, 2, 3, 4, 5, 6}, 0)
	checkedPlan(t, Input{Partitions: parts, Brokers: brokers})
	_, after := checkedPlan(t, Input{Partitions: parts, Brokers: brokers, Drain: []int32{6}})
	replicas, _ := Counts(after)
	if replicas[6] != 0 {
		t.Fatalf("broker 6 still holds %d", replicas[6])
	}
}

func TestPlanErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   Input
	}{
		{"more replicas than brokers", Input{Partitions: roundRobin("a", 2, 3, []int32{1, 2, 3}, 0), Brokers: plainBrokers(1, 2, 3), Drain: []int32{3}}},
		{"some brokers without a rack", Input{Partitions: roundRobin("a", 2, 2, []int32{1, 2}, 0), Brokers: []Broker{{ID: 1, Rack: "x"}, {ID: 2}}}},
		{"no broker", Input{Partitions: roundRobin("a", 2, 1, []int32{1}, 0), Brokers: plainBrokers(1), Drain: []int32{1}}},
		{"a partition without replicas", Input{Partitions: []Assignment{{Topic: "a"}}, Brokers: plainBrokers(1)}},
		{"a partition twice", Input{Partitions: append(roundRobin("a", 2, 1, []int32{1}, 0), roundRobin("a", 1, 1, []int32{1}, 0)...), Brokers: plainBrokers(1)}},
	} {
		if _, err := Plan(tc.in); !errors.Is(err, ErrNoPlan) {
			t.Errorf("%s: error %v, want ErrNoPlan", tc.name, err)
		}
	}
	// Racks ignored, the mixed brokers plan.
	in := Input{Partitions: roundRobin("a", 2, 2, []int32{1, 2}, 0), Brokers: []Broker{{ID: 1, Rack: "x"}, {ID: 2}}, IgnoreRacks: true}
	if _, err := Plan(in); err != nil {
		t.Fatal(err)
	}
}

// randomCluster is a cluster of random shape whose replicas sit on
// brokers 1..n, unevenly.
func randomCluster(r *rand.Rand) ([]Assignment, int) {
	n := 2 + r.IntN(6)
	var parts []Assignment
	for topic := range 1 + r.IntN(5) {
		rf := 1 + r.IntN(min(n, 3))
		for p := range 1 + r.IntN(20) {
			reps := make([]int32, 0, rf)
			for len(reps) < rf {
				// Skewed towards low ids, so that there is work.
				b := int32(1 + min(r.IntN(n), r.IntN(n)))
				if !slices.Contains(reps, b) {
					reps = append(reps, b)
				}
			}
			parts = append(parts, Assignment{Topic: fmt.Sprintf("t%d", topic), Partition: int32(p), Replicas: reps})
		}
	}
	return parts, n
}

// On random clusters, without racks: the rules hold, replicas and leaders
// are balanced within 1 over all topics, replicas per topic too, and
// planning again from the result moves nothing.
func TestPlanRandomClusters(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 4))
	for i := range 300 {
		parts, n := randomCluster(r)
		var ids []int32
		for id := range int32(n) + 1 {
			if id > 0 {
				ids = append(ids, id)
			}
		}
		in := Input{Partitions: parts, Brokers: plainBrokers(append(ids, int32(n)+1)...)}
		if r.IntN(3) == 0 && n > 3 {
			in.Drain = []int32{ids[r.IntN(n)]}
		}
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			moves, after := checkedPlan(t, in)
			targets := slices.DeleteFunc(append(slices.Clone(ids), int32(n)+1), func(b int32) bool { return slices.Contains(in.Drain, b) })
			wantBalanced(t, after, targets, false)
			byTopic := map[string][]Assignment{}
			for _, p := range after {
				byTopic[p.Topic] = append(byTopic[p.Topic], p)
			}
			for topic, ps := range byTopic {
				replicas, _ := Counts(ps)
				if lo, hi := spread(replicas, targets); hi-lo > 1 {
					t.Errorf("topic %s: replicas per broker %v", topic, replicas)
				}
			}
			again, err := Plan(Input{Partitions: after, Brokers: in.Brokers, Drain: in.Drain})
			if err != nil || len(again) != 0 {
				t.Fatalf("planned again: %v, %v (first plan %v)", again, err, moves)
			}
		})
	}
}

// The same cluster, given in any order, gets the same plan.
func TestPlanDeterministic(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	parts, n := randomCluster(r)
	brokers := plainBrokers(1, 2, 3, 4, 5, 6, 7, 8)[:n+1]
	first, err := Plan(Input{Partitions: parts, Brokers: brokers})
	if err != nil {
		t.Fatal(err)
	}
	if len(first) == 0 {
		t.Fatal("the random cluster needs no moves: pick another seed")
	}
	for range 20 {
		shuffled := slices.Clone(parts)
		r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		bs := slices.Clone(brokers)
		r.Shuffle(len(bs), func(i, j int) { bs[i], bs[j] = bs[j], bs[i] })
		got, err := Plan(Input{Partitions: shuffled, Brokers: bs})
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != fmt.Sprint(first) {
			t.Fatalf("plans differ:\n%v\n%v", got, first)
		}
	}
}

// BenchmarkPlanReassignment plans the spread of a cluster of 10 brokers,
// topics of 100 partitions RF 3 each placed round-robin from its own
// broker, onto 12 brokers: what sluice cluster rebalance computes before
// it prints anything, on clusters of 1,000 to 10,000 partitions.
func BenchmarkPlanReassignment(b *testing.B) {
	old := []int32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, n := range []int{1000, 5000, 10000} {
		var parts []Assignment
		for i := range n / 100 {
			parts = append(parts, roundRobin(fmt.Sprintf("t%03d", i), 100, 3, old, i)...)
		}
		in := Input{Partitions: parts, Brokers: plainBrokers(append(old, 11, 12)...)}
		b.Run(fmt.Sprintf("partitions=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			var moves []Move
			for b.Loop() {
				var err error
				if moves, err = Plan(in); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(replicasMoved(moves)), "replicas-moved")
			b.ReportMetric(float64(len(moves)), "partitions-changed")
		})
	}
}
