package controller

import (
	"errors"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func parts(m ...[]int32) []PartitionAssignment {
	out := make([]PartitionAssignment, len(m))
	for i, rs := range m {
		out[i] = PartitionAssignment{Partition: int32(i), Replicas: rs}
	}
	return out
}

func wantError(t *testing.T, what string, err, kind error, msg string) {
	t.Helper()
	if !errors.Is(err, kind) || Code(err) != codes[kind] || Message(err) != msg {
		t.Errorf("%s: got %v, want %v with %q", what, err, kind, msg)
	}
}

func TestCheckTopicAssignment(t *testing.T) {
	five := plain(0, 1, 2, 3, 4)
	// AdminZkClientTest.testManualReplicaAssignment.
	good := parts([]int32{0, 1, 2}, []int32{1, 2, 3})
	got, err := CheckTopicAssignment(good, five)
	if err != nil || !reflect.DeepEqual(got, [][]int32{{0, 1, 2}, {1, 2, 3}}) {
		t.Errorf("good assignment: %v, %v", got, err)
	}
	got[0][0] = 9
	if good[0].Replicas[0] != 0 {
		t.Error("the result shares the request's slices")
	}
	// Given out of order, read back by partition.
	got, err = CheckTopicAssignment([]PartitionAssignment{{1, []int32{4, 0}}, {0, []int32{2, 3}}}, nil)
	if err != nil || !reflect.DeepEqual(got, [][]int32{{2, 3}, {4, 0}}) {
		t.Errorf("out of order: %v, %v", got, err)
	}

	const consecutive = "partitions should be a consecutive 0-based integer sequence"
	for _, c := range []struct {
		name string
		a    []PartitionAssignment
		msg  string
	}{
		{"duplicate brokers", parts([]int32{0, 0}), "The manual partition assignment includes the broker 0 more than once."},
		{"inconsistent replication factor", parts([]int32{0, 1}, []int32{0}), "All partitions should have the same number of replicas"},
		{"not 0-based", []PartitionAssignment{{1, []int32{1, 2}}, {2, []int32{1, 2}}}, consecutive},
		{"gap", []PartitionAssignment{{0, []int32{1, 2}}, {3, []int32{1, 2}}}, consecutive},
		{"negative", []PartitionAssignment{{-1, []int32{1, 2}}, {1, []int32{1, 2}}, {2, []int32{1, 2}}, {4, []int32{1, 2}}}, consecutive},
		// AddPartitionsTest.testMissingPartitionsInCreateTopics.
		{"new-topic6", []PartitionAssignment{{1, []int32{0, 1}}, {2, []int32{1, 0}}}, consecutive},
		{"new-topic7", []PartitionAssignment{{2, []int32{0, 1}}, {3, []int32{1, 0}}}, consecutive},
		{"partition twice", []PartitionAssignment{{0, []int32{1, 2}}, {0, []int32{1, 2}}, {1, []int32{1, 2}}}, "Found multiple manual partition assignments for partition 0"},
		{"empty list", parts([]int32{}), "The manual partition assignment includes an empty replica list."},
		{"unknown broker", parts([]int32{0, 7}), "The manual partition assignment includes broker 7, but no such broker is registered."},
		{"no partitions", nil, consecutive},
	} {
		_, err := CheckTopicAssignment(c.a, five)
		wantError(t, c.name, err, ErrInvalidReplicaAssignment, c.msg)
	}
	// Without known brokers (ZooKeeper mode), any broker id goes.
	if _, err := CheckTopicAssignment(parts([]int32{0, 7}), nil); err != nil {
		t.Errorf("unknown broker, not checked: %v", err)
	}
}

func TestPlaceTopic(t *testing.T) {
	three := plain(1, 2, 3)
	d := Defaults{Partitions: 6, ReplicationFactor: 2}
	r := rand.New(rand.NewPCG(1, 1))

	_, err := PlaceTopic(TopicRequest{NumPartitions: 3, ReplicationFactor: -1, Assignments: parts([]int32{1})}, d, three, r)
	wantError(t, "counts and assignment", err, ErrInvalidRequest, "Both numPartitions or replicationFactor and replicasAssignments were set. Both cannot be used at the same time.")
	_, err = PlaceTopic(TopicRequest{NumPartitions: -1, ReplicationFactor: 2, Assignments: parts([]int32{1})}, d, three, r)
	wantError(t, "factor and assignment", err, ErrInvalidRequest, "Both numPartitions or replicationFactor and replicasAssignments were set. Both cannot be used at the same time.")

	// An explicit assignment is kept as given, even on brokers not live.
	got, err := PlaceTopic(TopicRequest{NumPartitions: -1, ReplicationFactor: -1, Assignments: parts([]int32{3, 9}, []int32{9, 1})}, d, three, r)
	if err != nil || !reflect.DeepEqual(got, [][]int32{{3, 9}, {9, 1}}) {
		t.Errorf("explicit: %v, %v", got, err)
	}
	_, err = PlaceTopic(TopicRequest{NumPartitions: -1, ReplicationFactor: -1, Assignments: parts([]int32{3, 3})}, d, three, r)
	wantError(t, "explicit duplicate", err, ErrInvalidReplicaAssignment, "The manual partition assignment includes the broker 3 more than once.")

	got, err = PlaceTopic(TopicRequest{NumPartitions: -1, ReplicationFactor: -1}, d, three, r)
	if err != nil || len(got) != 6 || len(got[0]) != 2 {
		t.Errorf("defaults: %v, %v", got, err)
	}
	got, err = PlaceTopic(TopicRequest{NumPartitions: 12, ReplicationFactor: 3}, d, three, r)
	if err == nil {
		err = checkPlacement(got, three, 12, 3, 0)
	}
	if err != nil {
		t.Errorf("12 partitions rf 3: %v", err)
	}

	_, err = PlaceTopic(TopicRequest{NumPartitions: 1, ReplicationFactor: 4}, d, three, r)
	wantError(t, "rf above brokers", err, ErrInvalidReplicationFactor, "Replication factor: 4 larger than available brokers: 3.")
	if Code(err) != kerr.InvalidReplicationFactor.Code {
		t.Errorf("code %d", Code(err))
	}
	_, err = PlaceTopic(TopicRequest{NumPartitions: 0, ReplicationFactor: 1}, d, three, r)
	wantError(t, "0 partitions", err, ErrInvalidPartitions, "Number of partitions must be larger than 0.")
	_, err = PlaceTopic(TopicRequest{NumPartitions: -2, ReplicationFactor: 1}, d, three, r)
	wantError(t, "-2 partitions", err, ErrInvalidPartitions, "Number of partitions must be larger than 0.")

	// The same seed places the same way.
	a1, _ := PlaceTopic(TopicRequest{NumPartitions: 10, ReplicationFactor: 2}, d, three, rand.New(rand.NewPCG(5, 5)))
	a2, _ := PlaceTopic(TopicRequest{NumPartitions: 10, ReplicationFactor: 2}, d, three, rand.New(rand.NewPCG(5, 5)))
	if !reflect.DeepEqual(a1, a2) {
		t.Errorf("same seed, different placements: %v, %v", a1, a2)
	}
}

// TestPlaceNewPartitions runs Kafka's AddPartitionsTest on its 4 brokers.
func TestPlaceNewPartitions(t *testing.T) {
	four := plain(0, 1, 2, 3)
	topic1 := [][]int32{{0, 1}}
	topic2 := [][]int32{{1, 2}}
	topic3 := [][]int32{{2, 3, 0, 1}}

	// testReplicaPlacementAllServers: new partitions start after the broker
	// leading partition 0, and go on round robin.
	got, err := PlaceNewPartitions(topic3, 7, nil, four)
	want := [][]int32{{3, 2, 0, 1}, {0, 3, 1, 2}, {1, 0, 2, 3}, {2, 3, 0, 1}, {3, 0, 1, 2}, {0, 1, 2, 3}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("all servers:\n got %v, %v\nwant %v", got, err, want)
	}
	// testReplicaPlacementPartialServers.
	got, err = PlaceNewPartitions(topic2, 3, nil, four)
	if err != nil || !reflect.DeepEqual(got, [][]int32{{2, 0}, {3, 1}}) {
		t.Errorf("partial servers: %v, %v", got, err)
	}
	// testManualAssignmentOfReplicas.
	manual := [][]int32{{0, 1}, {2, 3}}
	got, err = PlaceNewPartitions(topic2, 3, manual, four)
	if err != nil || !reflect.DeepEqual(got, manual) {
		t.Errorf("manual: %v, %v", got, err)
	}
	// testIncrementPartitions: two partitions of two replicas.
	got, err = PlaceNewPartitions(topic1, 3, nil, four)
	if err != nil || len(got) != 2 || len(got[0]) != 2 || len(got[1]) != 2 {
		t.Errorf("increment: %v, %v", got, err)
	}
	// The first replica of partition 0 is no longer a broker: start at the
	// next id up, or at the first broker.
	if s := NewPartitionsStart(plain(3, 0, 5), 4); s != (Start{2, 2}) {
		t.Errorf("start after 4 of [0 3 5]: %+v", s)
	}
	if s := NewPartitionsStart(plain(3, 0, 5), 9); s != (Start{0, 0}) {
		t.Errorf("start after 9 of [0 3 5]: %+v", s)
	}

	for _, c := range []struct {
		name     string
		existing [][]int32
		count    int32
		manual   [][]int32
		brokers  []Broker
		kind     error
		msg      string
	}{
		// testWrongReplicaCount.
		{"wrong replica count", topic1, 2, [][]int32{{0, 1, 2}}, four, ErrInvalidReplicaAssignment,
			"Inconsistent replication factor between partitions, partition 0 has 2 while partitions [1] have replication factors [3], respectively."},
		// testMissingPartitionsInCreatePartitions.
		{"missing partitions", topic1, 3, [][]int32{{0, 1, 2}}, four, ErrInvalidReplicaAssignment,
			"Increasing the number of partitions by 2 but 1 assignments provided."},
		{"unknown brokers", topic1, 3, [][]int32{{9, 1}, {5, 9}}, four, ErrInvalidReplicaAssignment,
			"Unknown broker(s) in replica assignment: 5, 9."},
		{"duplicate brokers", topic1, 2, [][]int32{{1, 1}}, four, ErrInvalidReplicaAssignment,
			"Duplicate brokers not allowed in replica assignment: 1, 1 for partition id 1."},
		{"empty list", topic1, 2, [][]int32{{}}, four, ErrInvalidReplicaAssignment,
			"Cannot have replication factor of 0 for partition id 1."},
		{"fewer partitions", [][]int32{{0}, {1}, {2}}, 2, nil, four, ErrInvalidPartitions,
			"Topic currently has 3 partitions, which is higher than the requested 2."},
		{"same partitions", topic1, 1, nil, four, ErrInvalidPartitions, "Topic already has 1 partitions."},
		{"rf above live brokers", topic3, 5, nil, plain(0, 1), ErrInvalidReplicationFactor,
			"Replication factor: 4 larger than available brokers: 2."},
	} {
		_, err := PlaceNewPartitions(c.existing, c.count, c.manual, c.brokers)
		wantError(t, c.name, err, c.kind, c.msg)
	}
	_, err = PlaceNewPartitions(nil, 3, nil, four)
	if err == nil || Code(err) != kerr.UnknownServerError.Code || !strings.Contains(Message(err), "partition id 0 is missing") {
		t.Errorf("no partition 0: %v", err)
	}
}
