package coordinator

import (
	"errors"
	"maps"
	"testing"
)

// Every change is on disk when the call returns: a reopened backend sees
// the topics, partition counts and configurations, and the deletions.
func TestEmbeddedChangesSurviveReopen(t *testing.T) {
	dir := t.TempDir()
	self := Broker{ID: 1, Host: "localhost", Port: 9092}
	e, err := OpenEmbedded(dir, self)
	if err != nil {
		t.Fatal(err)
	}
	a, err := e.CreateTopic(Topic{Name: "a", Partitions: 1, ReplicationFactor: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.CreateTopic(Topic{Name: "b", Partitions: 2, ReplicationFactor: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.CreateTopic(Topic{Name: "a"}); !errors.Is(err, ErrTopicExists) {
		t.Fatalf("second create: %v, want ErrTopicExists", err)
	}
	if got, err := e.SetPartitions("a", 4); err != nil || got.Partitions != 4 || got.ID != a.ID {
		t.Fatalf("SetPartitions: %+v, %v", got, err)
	}
	for _, n := range []int32{4, 3} {
		if _, err := e.SetPartitions("a", n); !errors.Is(err, ErrInvalidPartitions) {
			t.Fatalf("SetPartitions(%d): %v, want ErrInvalidPartitions", n, err)
		}
	}
	if _, err := e.SetPartitions("nope", 2); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("SetPartitions of unknown topic: %v", err)
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
	if err := e.DeleteTopic("b"); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("second delete: %v, want ErrUnknownTopic", err)
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
	if len(topics) != 1 || topics[0].Name != "a" || topics[0].Partitions != 4 || topics[0].ID != a.ID {
		t.Fatalf("after reopen: %+v", topics)
	}
	if !maps.Equal(topics[0].Configs, map[string]string{"retention.ms": "1000"}) {
		t.Fatalf("configs after reopen: %v", topics[0].Configs)
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
	// A deleted name can be created again, with a new ID.
	b2, err := e.CreateTopic(Topic{Name: "b", Partitions: 1, ReplicationFactor: 1})
	if err != nil || b2.ID == a.ID {
		t.Fatalf("re-create: %+v, %v", b2, err)
	}
}
