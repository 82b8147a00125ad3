package config

import (
	"maps"
	"math"
	"testing"
)

// Each broker takes the entries of *.replication.throttled.replicas that
// name it, as Kafka's parseThrottledPartitions; "*" names every replica.
func TestNamesReplica(t *testing.T) {
	for _, c := range []struct {
		list      string
		partition int32
		broker    int32
		want      bool
	}{
		{"", 0, 0, false},
		{"*", 3, 7, true},
		{" * ", 3, 7, true},
		{"0:1,1:2", 0, 1, true},
		{"0:1,1:2", 1, 2, true},
		{"0:1,1:2", 0, 2, false},
		{"0:1,1:2", 1, 1, false},
		{"0:1 , 12:3", 12, 3, true},
		{"10:1", 1, 1, false},
		{"1:10", 1, 1, false},
	} {
		if got := namesReplica(c.list, c.partition, c.broker); got != c.want {
			t.Errorf("namesReplica(%q, %d, %d) = %v, want %v", c.list, c.partition, c.broker, got, c.want)
		}
	}
}

// TestLayersPrecedence: a value comes from this broker's dynamic layer,
// else the cluster-wide default, else the configuration file, else Kafka's
// default, for a topic through its broker synonym unless it overrides it.
func TestLayersPrecedence(t *testing.T) {
	l := Layers{Static: map[string]string{"min.insync.replicas": "2", "follower.replication.throttled.rate": "300"},
		Dynamic: &DynamicConfigs{}}
	if n := l.MinInsyncReplicas(nil); n != 2 {
		t.Errorf("static min.insync.replicas: %d", n)
	}
	l.Dynamic = &DynamicConfigs{Cluster: map[string]string{"min.insync.replicas": "3", "leader.replication.throttled.rate": "100"}}
	if n := l.MinInsyncReplicas(nil); n != 3 {
		t.Errorf("cluster default over static: %d", n)
	}
	l.Dynamic = &DynamicConfigs{Cluster: l.Dynamic.Cluster, Node: map[string]string{"leader.replication.throttled.rate": "50"}}
	if n := l.MinInsyncReplicas(map[string]string{"min.insync.replicas": "1"}); n != 1 {
		t.Errorf("topic override: %d", n)
	}
	if leader, follower := l.ReplicationRates(); leader != 50 || follower != 300 {
		t.Errorf("rates: leader %d (this broker's), follower %d (static)", leader, follower)
	}
	if _, follower := (Layers{Dynamic: &DynamicConfigs{}}).ReplicationRates(); follower != math.MaxInt64 {
		t.Errorf("no rate: %d, want unbounded", follower)
	}
	if l.UncleanLeaderElection(nil) || !l.UncleanLeaderElection(map[string]string{UncleanLeaderElectionKey: "TRUE"}) {
		t.Error("unclean.leader.election.enable: default false, override true")
	}
}

// TestMigratedOffsetsTopicConfigs: a __consumer_offsets of the interim
// keep-everything configs becomes compacted, its own segment.bytes and
// other overrides kept; one already compacted is left alone.
func TestMigratedOffsetsTopicConfigs(t *testing.T) {
	gc := GroupConfig{}.WithDefaults()
	next, ok := MigratedOffsetsTopicConfigs(map[string]string{"retention.ms": "-1", "retention.bytes": "-1",
		"segment.bytes": "1048576", "max.message.bytes": "2000000"}, gc)
	want := map[string]string{"cleanup.policy": "compact", "compression.type": "producer",
		"segment.bytes": "1048576", "max.message.bytes": "2000000"}
	if !ok || !maps.Equal(next, want) {
		t.Errorf("migrated: %v, %v; want %v", next, ok, want)
	}
	if _, ok := MigratedOffsetsTopicConfigs(OffsetsTopicConfigs(gc), gc); ok {
		t.Error("compacted topic migrated again")
	}
}
