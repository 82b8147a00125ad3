package controller

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// racked returns brokers with the racks given by id.
func racked(racks map[int32]string) []Broker {
	var bs []Broker
	for id, r := range racks {
		bs = append(bs, Broker{ID: id, Rack: &r})
	}
	return bs
}

func plain(ids ...int32) []Broker {
	bs := make([]Broker, len(ids))
	for i, id := range ids {
		bs[i] = Broker{ID: id}
	}
	return bs
}

func assign(t *testing.T, brokers []Broker, count int32, rf int16, start Start, first int32) [][]int32 {
	t.Helper()
	a, err := AssignReplicas(brokers, count, rf, start, first)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// Kafka's AdminRackAwareTest.testGetRackAlternatedBrokerListAndAssignReplicasToBrokers
// and the example of getRackAlternatedBrokerList's doc.
func TestRackAlternated(t *testing.T) {
	racks := map[int32]string{0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}
	if got := RackAlternated(racked(racks)); !slices.Equal(got, []int32{0, 3, 1, 5, 4, 2}) {
		t.Errorf("got %v", got)
	}
	delete(racks, 5)
	if got := RackAlternated(racked(racks)); !slices.Equal(got, []int32{0, 3, 1, 4, 2}) {
		t.Errorf("without 5: got %v", got)
	}
	nine := map[int32]string{0: "rack1", 1: "rack1", 2: "rack1", 3: "rack2", 4: "rack2", 5: "rack2", 6: "rack3", 7: "rack3", 8: "rack3"}
	if got := RackAlternated(racked(nine)); !slices.Equal(got, []int32{0, 3, 6, 1, 4, 7, 2, 5, 8}) {
		t.Errorf("nine: got %v", got)
	}
}

// TestAssignReplicasExact checks the assignments Kafka's own tests expect.
func TestAssignReplicasExact(t *testing.T) {
	// AdminRackAwareTest.testReplicaAssignment (and the table in the doc of
	// AdminUtils.assignReplicasToBrokers): 5 brokers, no racks, start 0.
	got := assign(t, plain(0, 1, 2, 3, 4), 10, 3, Start{0, 0}, 0)
	want := [][]int32{{0, 1, 2}, {1, 2, 3}, {2, 3, 4}, {3, 4, 0}, {4, 0, 1}, {0, 2, 3}, {1, 3, 4}, {2, 4, 0}, {3, 0, 1}, {4, 1, 2}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("rack-unaware:\n got %v\nwant %v", got, want)
	}
	// The brokers' order in the request does not matter.
	if got := assign(t, plain(3, 1, 4, 0, 2), 10, 3, Start{0, 0}, 0); !reflect.DeepEqual(got, want) {
		t.Errorf("shuffled brokers: %v", got)
	}

	// testGetRackAlternatedBrokerListAndAssignReplicasToBrokers: partition
	// 6 starts the second round with shifted followers (0,4,2, not 0,3,1).
	racks := map[int32]string{0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}
	got = assign(t, racked(racks), 7, 3, Start{0, 0}, 0)
	want = [][]int32{{0, 3, 1}, {3, 1, 5}, {1, 5, 4}, {5, 4, 2}, {4, 2, 0}, {2, 0, 3}, {0, 4, 2}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("rack-aware:\n got %v\nwant %v", got, want)
	}

	// One broker, one replica.
	if got := assign(t, plain(7), 3, 1, Start{0, 0}, 0); !reflect.DeepEqual(got, [][]int32{{7}, {7}, {7}}) {
		t.Errorf("one broker: %v", got)
	}
}

// distribution is RackAwareTest.getReplicaDistribution.
type distribution struct {
	leaders, replicas map[int32]int
	racks             [][]string // each partition's racks, in replica order
}

func distributionOf(a [][]int32, racks map[int32]string) distribution {
	d := distribution{leaders: map[int32]int{}, replicas: map[int32]int{}}
	for _, rs := range a {
		d.leaders[rs[0]]++
		var pr []string
		for _, b := range rs {
			d.replicas[b]++
			pr = append(pr, racks[b])
		}
		d.racks = append(d.racks, pr)
	}
	return d
}

func distinct[T comparable](xs []T) int {
	seen := map[T]bool{}
	for _, x := range xs {
		seen[x] = true
	}
	return len(seen)
}

// checkDistribution is RackAwareTest.checkReplicaDistribution: replicas of
// a partition distinct, and optionally each partition on rf racks, leaders
// and replicas spread exactly evenly.
func checkDistribution(a [][]int32, racks map[int32]string, partitions, rf int, rackAware, leaders, replicas bool) error {
	brokers := len(racks)
	if len(a) != partitions {
		return fmt.Errorf("%d partitions, want %d", len(a), partitions)
	}
	for p, rs := range a {
		if len(rs) != rf || distinct(rs) != rf {
			return fmt.Errorf("partition %d: replicas %v", p, rs)
		}
	}
	d := distributionOf(a, racks)
	for p, pr := range d.racks {
		if rackAware && distinct(pr) != rf {
			return fmt.Errorf("partition %d on racks %v", p, pr)
		}
	}
	for id := range racks {
		if leaders && d.leaders[id] != partitions/brokers {
			return fmt.Errorf("broker %d leads %d, want %d: %v", id, d.leaders[id], partitions/brokers, a)
		}
		if replicas && d.replicas[id] != partitions*rf/brokers {
			return fmt.Errorf("broker %d holds %d, want %d: %v", id, d.replicas[id], partitions*rf/brokers, a)
		}
	}
	return nil
}

// TestRackAwareDistribution runs the cases of Kafka's AdminRackAwareTest.
// Those with a random start run over many seeds.
func TestRackAwareDistribution(t *testing.T) {
	six := map[int32]string{0: "rack1", 1: "rack2", 2: "rack2", 3: "rack3", 4: "rack3", 5: "rack1"}
	const random = -1
	cases := []struct {
		name                         string
		racks                        map[int32]string
		partitions, rf, start, first int
		rackAware, leaders, replicas bool
	}{
		{"testAssignmentWithRackAware", six, 6, 3, 2, 0, true, true, true},
		{"testAssignmentWithRackAwareWithRandomStartIndex", six, 6, 3, random, 0, true, true, true},
		{"testAssignmentWithRackAwareWithUnevenReplicas", six, 13, 3, 0, 0, true, false, false},
		{"testAssignmentWithRackAwareWithUnevenRacks", map[int32]string{0: "rack1", 1: "rack1", 2: "rack2", 3: "rack3", 4: "rack3", 5: "rack1"}, 12, 3, random, 0, true, true, false},
		{"testAssignmentWith2ReplicasRackAware", six, 12, 2, random, 0, true, true, true},
		{"testRackAwareExpansion", map[int32]string{6: "rack1", 7: "rack2", 8: "rack2", 9: "rack3", 10: "rack3", 11: "rack1"}, 12, 2, random, 12, true, true, true},
		{"testAssignmentWith2ReplicasRackAwareWith6Partitions", six, 6, 2, random, 0, true, true, true},
		{"testAssignmentWith2ReplicasRackAwareWith6PartitionsAnd3Brokers", map[int32]string{0: "rack1", 1: "rack2", 4: "rack3"}, 3, 2, random, 0, true, true, true},
		{"testLargeNumberPartitionsAssignment", map[int32]string{0: "rack1", 1: "rack2", 2: "rack2", 3: "rack3", 4: "rack3", 5: "rack1",
			6: "rack1", 7: "rack2", 8: "rack2", 9: "rack3", 10: "rack1", 11: "rack3"}, 96, 3, random, 0, true, true, true},
		{"testSkipBrokerWithReplicaAlreadyAssigned", map[int32]string{0: "a", 1: "b", 2: "c", 3: "a", 4: "a"}, 6, 4, 2, 0, false, false, false},
	}
	r := rand.New(rand.NewPCG(14, 3))
	for _, c := range cases {
		runs := 1
		if c.start == random {
			runs = 200
		}
		for range runs {
			start := Start{c.start, c.start}
			if c.start == random {
				start = RandomStart(r, len(c.racks))
			}
			a := assign(t, racked(c.racks), int32(c.partitions), int16(c.rf), start, int32(c.first))
			if err := checkDistribution(a, c.racks, c.partitions, c.rf, c.rackAware, c.leaders, c.replicas); err != nil {
				t.Fatalf("%s, start %+v: %v", c.name, start, err)
			}
		}
	}

	// testMoreReplicasThanRacks, testLessReplicasThanRacks, testSingleRack:
	// each partition spans min(rf, racks) racks.
	threeRacks := map[int32]string{0: "rack1", 1: "rack2", 2: "rack2", 3: "rack3", 4: "rack3", 5: "rack2"}
	oneRack := map[int32]string{0: "rack1", 1: "rack1", 2: "rack1", 3: "rack1", 4: "rack1", 5: "rack1"}
	for range 200 {
		for _, c := range []struct {
			racks    map[int32]string
			rf, span int
		}{{threeRacks, 5, 3}, {threeRacks, 2, 2}, {oneRack, 3, 1}} {
			start := RandomStart(r, 6)
			a := assign(t, racked(c.racks), 6, int16(c.rf), start, 0)
			d := distributionOf(a, c.racks)
			for p, pr := range d.racks {
				if len(pr) != c.rf || distinct(pr) != c.span {
					t.Fatalf("rf %d, start %+v: partition %d on racks %v, want %d racks", c.rf, start, p, pr, c.span)
				}
			}
			if c.span == 1 {
				for id := range c.racks {
					if d.leaders[id] != 1 {
						t.Fatalf("single rack: broker %d leads %d", id, d.leaders[id])
					}
				}
			}
		}
	}
}

// TestThreeBrokersSpreadEvenly is the cluster case of issue 14: 3 brokers,
// 12 partitions; each broker leads 4 and, at RF 3, holds 12 replicas (4 at
// RF 1), whatever the random start.
func TestThreeBrokersSpreadEvenly(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 12))
	for range 100 {
		for _, rf := range []int16{1, 3} {
			a := assign(t, plain(1, 2, 3), 12, rf, RandomStart(r, 3), 0)
			d := distributionOf(a, nil)
			for _, id := range []int32{1, 2, 3} {
				if d.leaders[id] != 4 || d.replicas[id] != 4*int(rf) {
					t.Fatalf("rf %d: broker %d leads %d, holds %d: %v", rf, id, d.leaders[id], d.replicas[id], a)
				}
			}
		}
	}
}

func TestAssignReplicasErrors(t *testing.T) {
	// AdminRackAwareTest.testAssignReplicasToBrokersWithInvalidParameters:
	// broker 4 has no rack.
	r1, r2, r3 := "rack1", "rack2", "rack3"
	mixed := []Broker{{0, &r1}, {1, &r3}, {2, &r3}, {3, &r2}, {4, nil}}
	cases := []struct {
		brokers    []Broker
		partitions int32
		rf         int16
		kind       error
		code       int16
		msg        string
	}{
		{mixed, 0, 0, ErrInvalidPartitions, kerr.InvalidPartitions.Code, "Number of partitions must be larger than 0."},
		{mixed, 10, 0, ErrInvalidReplicationFactor, kerr.InvalidReplicationFactor.Code, "Replication factor must be larger than 0."},
		{mixed, 10, 6, ErrInvalidReplicationFactor, kerr.InvalidReplicationFactor.Code, "Replication factor: 6 larger than available brokers: 5."},
		{mixed, 10, 5, ErrIncompleteRacks, kerr.UnknownServerError.Code, "Not all brokers have rack information for replica rack aware assignment."},
		{plain(0, 1, 2, 3, 4), 10, 6, ErrInvalidReplicationFactor, kerr.InvalidReplicationFactor.Code, "Replication factor: 6 larger than available brokers: 5."},
		{nil, 1, 1, ErrInvalidReplicationFactor, kerr.InvalidReplicationFactor.Code, "Replication factor: 1 larger than available brokers: 0."},
	}
	for _, c := range cases {
		_, err := AssignReplicas(c.brokers, c.partitions, c.rf, Start{}, 0)
		if !errors.Is(err, c.kind) || Code(err) != c.code || Message(err) != c.msg {
			t.Errorf("%d partitions, rf %d: got %v (code %d, %q)", c.partitions, c.rf, err, Code(err), Message(err))
		}
	}
	for _, bad := range []struct {
		brokers []Broker
		start   Start
	}{{plain(1, 1), Start{}}, {plain(1, 2), Start{-1, 0}}} {
		_, err := AssignReplicas(bad.brokers, 1, 1, bad.start, 0)
		if err == nil || Code(err) != kerr.UnknownServerError.Code || Message(err) != err.Error() {
			t.Errorf("%+v: %v", bad, err)
		}
	}
	if Code(nil) != 0 || Message(nil) != "" {
		t.Error("nil error has a code or message")
	}
}

// checkPlacement checks the invariants placement promises for any start:
// count partitions of rf distinct known brokers; leaders in round robin
// over the list, so every broker leads count/n or count/n+1; with racks,
// each partition on min(rf, racks) racks; without, when the partitions
// are whole rounds (first and count multiples of n), every broker holding
// exactly count·rf/n replicas.
func checkPlacement(a [][]int32, brokers []Broker, count, rf, first int) error {
	n := len(brokers)
	rackOf := map[int32]string{}
	racks := map[string]bool{}
	for _, b := range brokers {
		rackOf[b.ID] = "-"
		if b.Rack != nil {
			rackOf[b.ID] = *b.Rack
			racks[*b.Rack] = true
		}
	}
	if len(a) != count {
		return fmt.Errorf("%d partitions, want %d", len(a), count)
	}
	d := distributionOf(a, rackOf)
	for p, rs := range a {
		if len(rs) != rf || distinct(rs) != rf {
			return fmt.Errorf("partition %d: replicas %v", first+p, rs)
		}
		for _, id := range rs {
			if _, ok := rackOf[id]; !ok {
				return fmt.Errorf("partition %d: unknown broker %d", first+p, id)
			}
		}
		if len(racks) > 0 && distinct(d.racks[p]) != min(rf, len(racks)) {
			return fmt.Errorf("partition %d on racks %v of %d", first+p, d.racks[p], len(racks))
		}
	}
	for _, b := range brokers {
		if l := d.leaders[b.ID]; l != count/n && l != (count+n-1)/n {
			return fmt.Errorf("broker %d leads %d of %d partitions", b.ID, l, count)
		}
		if len(racks) == 0 && first%n == 0 && count%n == 0 && d.replicas[b.ID] != count*rf/n {
			return fmt.Errorf("broker %d holds %d replicas, want %d", b.ID, d.replicas[b.ID], count*rf/n)
		}
	}
	return nil
}

// TestPlacementProperties checks checkPlacement's invariants over seeded
// random clusters, starts and topics, and that placement depends on
// neither the brokers' order nor anything but its arguments. A failure
// prints the seed and case.
func TestPlacementProperties(t *testing.T) {
	const seed = 20240914
	r := rand.New(rand.NewPCG(seed, 1))
	for i := range 3000 {
		n := 1 + r.IntN(12)
		brokers := make([]Broker, n)
		ids := r.Perm(100)
		numRacks := 0
		if r.IntN(2) == 0 {
			numRacks = 1 + r.IntN(min(n, 5))
		}
		for j := range brokers {
			brokers[j].ID = int32(ids[j])
			if numRacks > 0 {
				// The first numRacks brokers make sure each rack is used.
				rack := fmt.Sprintf("rack%d", j%numRacks)
				if j >= numRacks {
					rack = fmt.Sprintf("rack%d", r.IntN(numRacks))
				}
				brokers[j].Rack = &rack
			}
		}
		count := 1 + r.IntN(60)
		rf := 1 + r.IntN(n)
		first := 0
		if r.IntN(3) == 0 {
			first = r.IntN(40)
		}
		start := RandomStart(r, n)
		a, err := AssignReplicas(brokers, int32(count), int16(rf), start, int32(first))
		if err == nil {
			err = checkPlacement(a, brokers, count, rf, first)
		}
		if err != nil {
			t.Fatalf("seed %d, case %d: %d brokers %v, %d partitions from %d, rf %d, start %+v: %v", seed, i, n, brokers, count, first, rf, start, err)
		}
		shuffled := slices.Clone(brokers)
		r.Shuffle(n, func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		if again := assign(t, shuffled, int32(count), int16(rf), start, int32(first)); !reflect.DeepEqual(again, a) {
			t.Fatalf("seed %d, case %d: broker order changed the placement", seed, i)
		}
	}
}

// TestCheckPlacementCatchesBrokenPlacements proves the property checker
// can fail.
func TestCheckPlacementCatchesBrokenPlacements(t *testing.T) {
	three := plain(0, 1, 2)
	a, b := "a", "b"
	for name, c := range map[string]struct {
		a       [][]int32
		brokers []Broker
		rf      int
	}{
		"duplicate replica": {[][]int32{{0, 0}, {1, 2}, {2, 0}}, three, 2},
		"unknown broker":    {[][]int32{{0, 9}, {1, 2}, {2, 0}}, three, 2},
		"uneven leaders":    {[][]int32{{0, 1}, {0, 2}, {2, 1}}, three, 2},
		"uneven replicas":   {[][]int32{{0, 1}, {1, 0}, {2, 0}}, three, 2},
		"short partition":   {[][]int32{{0, 1}, {1}, {2, 0}}, three, 2},
		"one rack of two":   {[][]int32{{0, 1}, {1, 2}, {2, 0}}, []Broker{{0, &a}, {1, &b}, {2, &a}}, 2},
	} {
		if err := checkPlacement(c.a, c.brokers, 3, c.rf, 0); err == nil {
			t.Errorf("%s: not caught", name)
		}
	}
}
