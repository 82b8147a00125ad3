package controller

// Placement of the replicas of new topics and new partitions, Kafka's
// AdminUtils.assignReplicasToBrokers:
//
//   - Without racks (no broker has one): brokers in id order. Partition
//     p's first replica (its preferred leader) is broker
//     (p + start.Index) mod n, so leaders go round robin; its j-th
//     follower is 1 + (shift + j) mod (n-1) places after the leader, where
//     shift starts at start.Shift and grows by one each time p reaches a
//     multiple of n, so that later rounds do not repeat the same follower
//     sets.
//   - With racks (every broker has one): the same round robin over a
//     rack-alternated list (one broker of each rack in turn, racks sorted
//     by name, each rack's brokers by id), with the shift scaled by the
//     number of racks, and a follower skipped while its rack already holds
//     a replica of the partition and some rack holds none, or while the
//     broker itself holds one.
//
// Invariants, for any start: a partition's replicas are distinct brokers;
// the leaders of any n consecutive partitions are n distinct brokers (so
// leader counts differ by at most one); with racks, each partition spans
// min(replication factor, racks) racks. Kafka draws start.Index and
// start.Shift at random for a new topic; they are arguments here so that
// tests are deterministic.

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
)

// Broker is a live broker as placement sees it.
type Broker struct {
	ID int32
	// Rack is broker.rack; nil when the broker has none.
	Rack *string
}

// Start is where placement's round robin begins: partition p's leader is
// at index (p + Index) mod n of the broker list, and Shift is the follower
// shift of the round p is in at the first partition placed. Both are
// non-negative.
type Start struct {
	Index, Shift int
}

// RandomStart draws a start for n brokers as Kafka does for a new topic:
// the index, then the shift, each uniform in [0, n).
func RandomStart(rng *rand.Rand, n int) Start {
	if n <= 0 {
		return Start{}
	}
	index := rng.IntN(n)
	return Start{Index: index, Shift: rng.IntN(n)}
}

// NewPartitionsStart is the start Kafka uses to place partitions added to
// a topic whose partition 0 has first replica leader0
// (AdminZkClient.createNewPartitionsAssignment): the index, in id order, of
// the first broker whose id is at least leader0 (0 if none), as both index
// and shift.
func NewPartitionsStart(brokers []Broker, leader0 int32) Start {
	ids := make([]int32, len(brokers))
	for i, b := range brokers {
		ids[i] = b.ID
	}
	slices.Sort(ids)
	i := sort.Search(len(ids), func(i int) bool { return ids[i] >= leader0 })
	if i == len(ids) {
		i = 0
	}
	return Start{Index: i, Shift: i}
}

// AssignReplicas places the replicas of count partitions numbered from
// first on brokers: element i of the result is partition first+i's
// replicas, the preferred leader first. first is where the round robin
// stands (the partition count of the topic being grown, 0 for a new
// topic). Brokers are taken in id order, as AdminZkClient.getBrokerMetadatas
// lists them (Kafka's CreateTopics takes its metadata cache's order, which
// only changes which start gives which layout). The result is owned by the
// caller.
//
// Errors, in Kafka's order: ErrInvalidPartitions for count < 1,
// ErrInvalidReplicationFactor for a factor below 1 or above len(brokers),
// ErrIncompleteRacks when some brokers have a rack and some do not.
func AssignReplicas(brokers []Broker, count int32, replicationFactor int16, start Start, first int32) ([][]int32, error) {
	switch {
	case count <= 0:
		return nil, fail(ErrInvalidPartitions, "Number of partitions must be larger than 0.")
	case replicationFactor <= 0:
		return nil, fail(ErrInvalidReplicationFactor, "Replication factor must be larger than 0.")
	case int(replicationFactor) > len(brokers):
		return nil, fail(ErrInvalidReplicationFactor, "Replication factor: %d larger than available brokers: %d.", replicationFactor, len(brokers))
	case start.Index < 0 || start.Shift < 0:
		return nil, fmt.Errorf("controller: negative placement start %+v", start)
	}
	sorted := slices.Clone(brokers)
	slices.SortFunc(sorted, func(a, b Broker) int { return int(a.ID) - int(b.ID) })
	racks := 0
	for i, b := range sorted {
		if i > 0 && sorted[i-1].ID == b.ID {
			return nil, fmt.Errorf("controller: broker %d listed twice", b.ID)
		}
		if b.Rack != nil {
			racks++
		}
	}
	first = max(first, 0)
	rf := int(replicationFactor)
	if racks == 0 {
		ids := make([]int32, len(sorted))
		for i, b := range sorted {
			ids[i] = b.ID
		}
		return assignRackUnaware(ids, int(count), rf, start, int(first)), nil
	}
	if racks < len(sorted) {
		return nil, fail(ErrIncompleteRacks, "Not all brokers have rack information for replica rack aware assignment.")
	}
	return assignRackAware(sorted, int(count), rf, start, int(first)), nil
}

// assignRackUnaware is AdminUtils.assignReplicasToBrokersRackUnaware over
// ids, the brokers in id order.
func assignRackUnaware(ids []int32, count, rf int, start Start, first int) [][]int32 {
	n := len(ids)
	out := make([][]int32, count)
	roundRobin(count, n, first, start, func(i, leader, shift int) {
		replicas := make([]int32, rf)
		replicas[0] = ids[leader]
		for j := 1; j < rf; j++ {
			replicas[j] = ids[followerIndex(leader, shift, j-1, n)]
		}
		out[i] = replicas
	})
	return out
}

// assignRackAware is AdminUtils.assignReplicasToBrokersRackAware; every
// broker has a rack.
func assignRackAware(brokers []Broker, count, rf int, start Start, first int) [][]int32 {
	rackOf := make(map[int32]string, len(brokers))
	for _, b := range brokers {
		rackOf[b.ID] = *b.Rack
	}
	list := RackAlternated(brokers)
	n := len(list)
	numRacks := countRacks(brokers)
	out := make([][]int32, count)
	roundRobin(count, n, first, start, func(i, leader, shift int) {
		replicas := make([]int32, 1, rf)
		replicas[0] = list[leader]
		racksUsed := map[string]bool{rackOf[list[leader]]: true}
		// k walks the followers' positions for all of this partition's
		// replicas: a skipped broker is not offered again for the next one.
		for k := 0; len(replicas) < rf; k++ {
			b := list[followerIndex(leader, shift*numRacks, k, n)]
			rackFree := !racksUsed[rackOf[b]] || len(racksUsed) == numRacks
			brokerFree := !slices.Contains(replicas, b) || len(replicas) == n
			if rackFree && brokerFree {
				replicas = append(replicas, b)
				racksUsed[rackOf[b]] = true
			}
		}
		out[i] = replicas
	})
	return out
}

// roundRobin calls place for partitions first to first+count-1, i counting
// from 0, with the position of the partition's leader in a list of n
// brokers and the follower shift of its round: the shift grows by one at
// each partition number that is a multiple of n.
func roundRobin(count, n, first int, start Start, place func(i, leader, shift int)) {
	shift := start.Shift
	for i := range count {
		p := first + i
		if p > 0 && p%n == 0 {
			shift++
		}
		place(i, (p+start.Index)%n, shift)
	}
}

// followerIndex is AdminUtils.replicaIndex: the position of the j-th
// candidate follower of the replica at leader, among n > 1 brokers (never
// the leader's own position).
func followerIndex(leader, shift, j, n int) int {
	return (leader + 1 + (shift+j)%(n-1)) % n
}

// RackAlternated is AdminUtils.getRackAlternatedBrokerList: the brokers
// (all with racks) ordered one per rack in turn, racks sorted by name and
// each rack's brokers by id. Racks 1: [0 5], 2: [3 4], 3: [1 2] give
// 0 3 1 5 4 2.
func RackAlternated(brokers []Broker) []int32 {
	byRack := map[string][]int32{}
	for _, b := range brokers {
		byRack[*b.Rack] = append(byRack[*b.Rack], b.ID)
	}
	racks := make([]string, 0, len(byRack))
	for r, ids := range byRack {
		racks = append(racks, r)
		slices.Sort(ids)
	}
	slices.Sort(racks)
	out := make([]int32, 0, len(brokers))
	for round := 0; len(out) < len(brokers); round++ {
		for _, r := range racks {
			if round < len(byRack[r]) {
				out = append(out, byRack[r][round])
			}
		}
	}
	return out
}

func countRacks(brokers []Broker) int {
	seen := map[string]bool{}
	for _, b := range brokers {
		seen[*b.Rack] = true
	}
	return len(seen)
}
