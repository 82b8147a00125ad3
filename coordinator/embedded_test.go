package coordinator

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/coordinator/controller"
)

func counts(n int32) controller.TopicRequest {
	return controller.TopicRequest{NumPartitions: n, ReplicationFactor: 1}
}

// Every change is on disk when the call returns: a reopened backend sees
// the topics, partition counts and configurations, and the topics marked
// for deletion.
func TestEmbeddedChangesSurviveReopen(t *testing.T) {
	dir := t.TempDir()
	self := Broker{ID: 1, Host: "localhost", Port: 9092}
	e, err := OpenEmbedded(dir, self)
	if err != nil {
		t.Fatal(err)
	}
	a, err := e.CreateTopic("a", counts(1), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.CreateTopic("b", counts(2), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := e.CreateTopic("a", counts(1), nil); !errors.Is(err, ErrTopicExists) {
		t.Fatalf("second create: %v, want ErrTopicExists", err)
	}
	if got, err := e.AddPartitions("a", 4, nil); err != nil || len(got.Replicas) != 4 || got.ID != a.ID {
		t.Fatalf("AddPartitions: %+v, %v", got, err)
	}
	for _, n := range []int32{4, 3} {
		if _, err := e.AddPartitions("a", n, nil); controller.Code(err) != kerr.InvalidPartitions.Code {
			t.Fatalf("AddPartitions(%d): %v, want INVALID_PARTITIONS", n, err)
		}
	}
	if _, err := e.AddPartitions("nope", 2, nil); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("AddPartitions of unknown topic: %v", err)
	}
	cfg := map[string]string{"retention.ms": "1000"}
	if _, err := e.SetTopicConfigs("a", cfg); err != nil {
		t.Fatal(err)
	}
	cfg["retention.ms"] = "changed by the caller afterwards"
	if _, err := e.SetTopicConfigs("nope", cfg); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("SetTopicConfigs of unknown topic: %v", err)
	}
	if err := e.DeleteTopic("b"); err != nil {
		t.Fatal(err)
	}
	if err := e.DeleteTopic("b"); err != nil {
		t.Fatalf("second delete of a marked topic: %v, want none (as Kafka)", err)
	}
	if err := e.DeleteTopic("nope"); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("delete of unknown topic: %v, want ErrUnknownTopic", err)
	}
	if _, err := e.CreateTopic("b", counts(1), nil); !errors.Is(err, ErrTopicExists) {
		t.Fatalf("create of a topic marked for deletion: %v, want ErrTopicExists", err)
	}
	if err := e.SetBrokerConfigs(map[string]string{"log.retention.ms": "5"}); err != nil {
		t.Fatal(err)
	}
	node := map[string]string{"log.segment.bytes": "1024"}
	if err := e.SetNodeConfigs(1, node); err != nil {
		t.Fatal(err)
	}
	node["log.segment.bytes"] = "changed by the caller afterwards"
	if err := e.SetNodeConfigs(2, map[string]string{"message.max.bytes": "10"}); err != nil {
		t.Fatal(err)
	}
	if err := e.SetNodeConfigs(2, nil); err != nil {
		t.Fatal(err)
	}
	e.Close()

	e, err = OpenEmbedded(dir, self)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	topics := e.Topics()
	if len(topics) != 2 || topics[0].Name != "a" || topics[0].Partitions != 4 || topics[0].ID != a.ID {
		t.Fatalf("after reopen: %+v", topics)
	}
	if !maps.Equal(topics[0].Configs, map[string]string{"retention.ms": "1000"}) {
		t.Fatalf("configs after reopen: %v", topics[0].Configs)
	}
	if !e.mu.deleting["b"] || e.mu.deleting["a"] {
		t.Fatalf("marked for deletion after reopen: %v, want b alone", e.mu.deleting)
	}
	if got := e.BrokerConfigs(); !maps.Equal(got, map[string]string{"log.retention.ms": "5"}) {
		t.Fatalf("broker configs after reopen: %v", got)
	}
	if got := e.NodeConfigs(1); !maps.Equal(got, map[string]string{"log.segment.bytes": "1024"}) {
		t.Fatalf("node 1 configs after reopen: %v", got)
	}
	if got := e.NodeConfigs(2); got != nil {
		t.Fatalf("node 2 configs after they were cleared: %v", got)
	}
}

// The single node refuses what only a cluster could hold.
func TestEmbeddedRefusesOtherBrokers(t *testing.T) {
	e, err := OpenEmbedded(t.TempDir(), Broker{ID: 3, Host: "localhost", Port: 9092})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if _, err := e.CreateTopic("rf2", controller.TopicRequest{NumPartitions: 1, ReplicationFactor: 2}, nil); controller.Code(err) != kerr.InvalidReplicationFactor.Code {
		t.Fatalf("replication factor 2: %v", err)
	}
	other := controller.TopicRequest{NumPartitions: -1, ReplicationFactor: -1, Assignments: []controller.PartitionAssignment{{Partition: 0, Replicas: []int32{4}}}}
	if _, err := e.CreateTopic("elsewhere", other, nil); controller.Code(err) != kerr.InvalidReplicaAssignment.Code {
		t.Fatalf("assignment to broker 4: %v", err)
	}
	mine := controller.TopicRequest{NumPartitions: -1, ReplicationFactor: -1, Assignments: []controller.PartitionAssignment{{Partition: 0, Replicas: []int32{3}}}}
	if _, err := e.CreateTopic("here", mine, nil); err != nil {
		t.Fatalf("assignment to the single broker: %v", err)
	}
	if _, err := e.AddPartitions("here", 2, [][]int32{{4}}); controller.Code(err) != kerr.InvalidReplicaAssignment.Code {
		t.Fatalf("new partition on broker 4: %v", err)
	}
}

// recorder is a broker that answers the controller's requests without
// error and remembers them.
type recorder struct {
	mu   sync.Mutex
	reqs []kmsg.Request
}

func (r *recorder) send(req kmsg.Request) (kmsg.Response, error) {
	r.mu.Lock()
	r.reqs = append(r.reqs, req)
	r.mu.Unlock()
	resp := req.ResponseKind()
	if sr, ok := req.(*kmsg.StopReplicaRequest); ok {
		out := resp.(*kmsg.StopReplicaResponse)
		for _, t := range sr.Topics {
			for _, p := range t.PartitionStates {
				rp := kmsg.NewStopReplicaResponsePartition()
				rp.Topic, rp.Partition = t.Topic, p.Partition
				out.Partitions = append(out.Partitions, rp)
			}
		}
	}
	return resp, nil
}

// taken returns the requests received since the last call, by name.
func (r *recorder) taken() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, req := range r.reqs {
		out = append(out, kmsg.NameForKey(req.Key()))
	}
	r.reqs = nil
	return out
}

// The single node's controller is a cluster's: a start tells the broker
// every partition it leads, a topic created or deleted goes through
// LeaderAndIsr, UpdateMetadata and StopReplica, and a deletion is done
// when the broker has deleted the replicas.
func TestLocalController(t *testing.T) {
	dir := t.TempDir()
	self := Broker{ID: 0, Host: "localhost", Port: 9092}
	e, err := OpenEmbedded(dir, self)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.CreateTopic("before", counts(2), nil); err != nil {
		t.Fatal(err)
	}
	if err := e.WaitIdle(context.Background()); !errors.Is(err, ErrNoController) {
		t.Fatalf("WaitIdle without a controller: %v", err)
	}
	var r recorder
	if err := e.StartController(self.Host, self.Port, r.send); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	idle := func() {
		t.Helper()
		if err := e.WaitIdle(ctx); err != nil {
			t.Fatal(err)
		}
	}
	idle()
	// The live brokers first, then the partitions once their states are
	// written.
	if got := r.taken(); !slices.Equal(got, []string{"UpdateMetadata", "LeaderAndISR", "UpdateMetadata"}) {
		t.Fatalf("at start the broker was sent %v", got)
	}
	if _, err := e.CreateTopic("new", counts(1), nil); err != nil {
		t.Fatal(err)
	}
	idle()
	if got := r.taken(); !slices.Equal(got, []string{"LeaderAndISR", "UpdateMetadata"}) {
		t.Fatalf("for a new topic the broker was sent %v", got)
	}
	if err := e.DeleteTopic("new"); err != nil {
		t.Fatal(err)
	}
	if err := e.AwaitDeleted(ctx, "new"); err != nil {
		t.Fatal(err)
	}
	idle()
	if got := r.taken(); !slices.Equal(got, []string{"UpdateMetadata", "StopReplica"}) {
		t.Fatalf("for a deletion the broker was sent %v", got)
	}
	if _, ok := e.Topic("new"); ok {
		t.Fatal("the deleted topic is still in the metadata")
	}
	if _, err := e.CreateTopic("new", counts(1), nil); err != nil {
		t.Fatalf("re-create after the deletion: %v", err)
	}
	e.Close()
	if err := e.WaitIdle(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("WaitIdle after Close: %v", err)
	}
}

// startWithTopic starts e's controller, recording its requests, and
// creates a topic of one partition.
func startWithTopic(ctx context.Context, t *testing.T, e *Embedded, self Broker, topic string) *recorder {
	t.Helper()
	var r recorder
	if err := e.StartController(self.Host, self.Port, r.send); err != nil {
		t.Fatal(err)
	}
	if _, err := e.CreateTopic(topic, counts(1), nil); err != nil {
		t.Fatal(err)
	}
	if err := e.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	return &r
}

// The broker's own AlterPartition reaches the single node's controller by
// a call and is answered as a cluster's controller answers it: the
// committed state for an ISR already held, FENCED_LEADER_EPOCH for an
// older leader epoch; without a controller, NOT_CONTROLLER.
func TestLocalControllerAlterPartition(t *testing.T) {
	self := Broker{ID: 0, Host: "localhost", Port: 9092}
	e, err := OpenEmbedded(t.TempDir(), self)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	alter := func(leaderEpoch int32) *kmsg.AlterPartitionResponse {
		t.Helper()
		req := kmsg.NewPtrAlterPartitionRequest()
		req.Version, req.BrokerID, req.BrokerEpoch = 1, 0, localEpoch
		req.Topics = []kmsg.AlterPartitionRequestTopic{{Topic: "t", Partitions: []kmsg.AlterPartitionRequestTopicPartition{
			{Partition: 0, LeaderEpoch: leaderEpoch, NewISR: []int32{0}}}}}
		resp, err := e.AlterPartition(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	if resp := alter(0); resp.ErrorCode != kerr.NotController.Code {
		t.Fatalf("without a controller: %+v", resp)
	}
	r := startWithTopic(ctx, t, e, self, "t")
	r.taken()
	resp := alter(0)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("answer %+v", resp)
	}
	if rp := resp.Topics[0].Partitions[0]; rp.ErrorCode != 0 || rp.LeaderID != 0 || !slices.Equal(rp.ISR, []int32{0}) || rp.PartitionEpoch != 0 {
		t.Fatalf("answer %+v", rp)
	}
	if resp := alter(-1); resp.Topics[0].Partitions[0].ErrorCode != kerr.FencedLeaderEpoch.Code {
		t.Fatalf("older leader epoch answered %+v", resp)
	}
	if err := e.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	if got := r.taken(); !slices.Equal(got, []string{"UpdateMetadata", "UpdateMetadata"}) {
		t.Fatalf("after two AlterPartitions the broker was sent %v", got)
	}
}

// A single node's client entity configs are kept in its metadata file and
// read back after a reopen; an alteration that fails changes nothing.
func TestEmbeddedEntityConfigsSurviveReopen(t *testing.T) {
	dir := t.TempDir()
	self := Broker{ID: 0, Host: "localhost", Port: 9092}
	e, err := OpenEmbedded(dir, self)
	if err != nil {
		t.Fatal(err)
	}
	add := func(path, k, v string) error {
		return e.AlterEntityConfigs(path, func(cur map[string]string) (map[string]string, error) {
			cur[k] = v
			return cur, nil
		})
	}
	if err := add(UserEntity("alice"), "SCRAM-SHA-256", "salt=a,stored_key=b,server_key=c,iterations=4096"); err != nil {
		t.Fatal(err)
	}
	if err := add(UserClientEntity("alice", "c1"), "producer_byte_rate", "100"); err != nil {
		t.Fatal(err)
	}
	refused := errors.New("refused")
	if err := e.AlterEntityConfigs(UserEntity("alice"), func(map[string]string) (map[string]string, error) { return nil, refused }); !errors.Is(err, refused) {
		t.Fatalf("a refusing alter: %v", err)
	}
	if err := e.AlterEntityConfigs("topics/x", func(m map[string]string) (map[string]string, error) { return m, nil }); err == nil {
		t.Fatal("a topic path was accepted as a client entity")
	}
	e.Close()
	if e, err = OpenEmbedded(dir, self); err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	got, err := e.EntityConfigs(UserEntity("alice"))
	if err != nil || got["SCRAM-SHA-256"] != "salt=a,stored_key=b,server_key=c,iterations=4096" || len(got) != 1 {
		t.Fatalf("after reopen: %v, %v", got, err)
	}
	users, err := e.Entities("users")
	if err != nil || !slices.Equal(users, []string{"users/alice", "users/alice/clients/c1"}) {
		t.Fatalf("Entities(users): %v, %v", users, err)
	}
	if err := e.AlterEntityConfigs(UserClientEntity("alice", "c1"), func(map[string]string) (map[string]string, error) { return nil, nil }); err != nil {
		t.Fatal(err)
	}
	if users, _ := e.Entities("users"); !slices.Equal(users, []string{"users/alice"}) {
		t.Fatalf("Entities(users) after emptying one: %v", users)
	}
}
