package config

import (
	"reflect"
	"testing"
	"time"
)

// producer.id.expiration.ms: Kafka's int of at least 1 ms, default one
// day, reaching every log's options.
func TestConfigProducerIDExpiration(t *testing.T) {
	var c Config
	if got := c.WithDefaults().ProducerIDExpiration; got != 24*time.Hour {
		t.Errorf("default %v, want 24h", got)
	}
	if _, err := c.Apply(map[string]string{"producer.id.expiration.ms": "3600000"}); err != nil {
		t.Fatal(err)
	}
	c = c.WithDefaults()
	if c.ProducerIDExpiration != time.Hour {
		t.Errorf("applied %v, want 1h", c.ProducerIDExpiration)
	}
	if got := c.LogOptions(map[string]string{"retention.ms": "1000"}).ProducerIDExpiration; got != time.Hour {
		t.Errorf("a topic's log options have %v, want 1h", got)
	}
	for _, bad := range []string{"0", "-1", "2147483648", "1h"} {
		var c Config
		if _, err := c.Apply(map[string]string{"producer.id.expiration.ms": bad}); err == nil {
			t.Errorf("producer.id.expiration.ms=%s accepted", bad)
		}
	}
}

// The group coordinator's keys parse from server.properties; bad values are
// errors, other keys are still reported unknown.
func TestConfigGroupKeys(t *testing.T) {
	var c Config
	unknown, err := c.Apply(map[string]string{
		"group.initial.rebalance.delay.ms":    "0",
		"group.min.session.timeout.ms":        "250",
		"group.max.session.timeout.ms":        "60000",
		"group.max.size":                      "7",
		"offsets.topic.num.partitions":        "3",
		"offsets.topic.segment.bytes":         "1048576",
		"offsets.topic.replication.factor":    "1",
		"offsets.retention.minutes":           "60",
		"offsets.retention.check.interval.ms": "1000",
		"offset.metadata.max.bytes":           "100",
		"no.such.key":                         "1",
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(unknown) != 1 || unknown[0] != "no.such.key" {
		t.Errorf("unknown keys %v", unknown)
	}
	g := c.Groups
	if g.InitialRebalanceDelay == nil || *g.InitialRebalanceDelay != 0 || g.MinSessionTimeout != 250*time.Millisecond ||
		g.MaxSessionTimeout != time.Minute || g.MaxSize != 7 || g.OffsetsPartitions != 3 || g.OffsetsSegmentBytes != 1<<20 ||
		g.OffsetsReplication != 1 || g.OffsetsRetention != time.Hour || g.OffsetsRetentionCheck != time.Second || g.OffsetMetadataMax != 100 {
		t.Errorf("applied %+v", g)
	}
	for _, bad := range []map[string]string{
		{"group.max.size": "x"},
		{"offsets.topic.num.partitions": "0"},
		{"group.min.session.timeout.ms": "-5"},
	} {
		var c Config
		if _, err := c.Apply(bad); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

// Every topic key the engine reads changes a topic's log options, and no
// other key does: a key bound to no engine option (segment.jitter.ms,
// preallocate) is stored and described only.
func TestTopicKeysReachTheEngine(t *testing.T) {
	var c Config
	c = c.WithDefaults()
	// The keys read beside their row's engine binding: the cleanup policy
	// and the codec with its levels (each level in its codec's company).
	combined := map[string]map[string]string{
		"cleanup.policy":         {"cleanup.policy": "compact"},
		"compression.type":       {"compression.type": "zstd"},
		"compression.gzip.level": {"compression.type": "gzip", "compression.gzip.level": "2"},
		"compression.lz4.level":  {"compression.type": "lz4", "compression.lz4.level": "3"},
		"compression.zstd.level": {"compression.type": "zstd", "compression.zstd.level": "7"},
	}
	base := func(k string) map[string]string {
		m := map[string]string{}
		for kk := range combined[k] {
			if kk != k {
				m[kk] = combined[k][kk]
			}
		}
		return m
	}
	// The keys no log option stands for: read by replication and the
	// controller, or stored and described without effect (their docs say so).
	elsewhere := map[string]bool{
		"segment.jitter.ms": true, "file.delete.delay.ms": true, "preallocate": true,
		"unclean.leader.election.enable": true, "min.insync.replicas": true,
		"leader.replication.throttled.replicas": true, "follower.replication.throttled.replicas": true,
		"message.format.version": true, "message.downconversion.enable": true,
		"message.timestamp.difference.max.ms": true, "message.timestamp.before.max.ms": true,
		"message.timestamp.after.max.ms": true, "remote.storage.enable": true,
		"local.retention.ms": true, "local.retention.bytes": true,
		"remote.log.copy.disable": true, "remote.log.delete.on.disable": true,
	}
	for i := range TopicKeys {
		k := &TopicKeys[i]
		if reads := k.engine != nil || combined[k.Name] != nil; reads == elsewhere[k.Name] {
			t.Errorf("%s: bound to an engine option %v, listed as read elsewhere %v", k.Name, reads, elsewhere[k.Name])
		}
		set, ok := combined[k.Name]
		if !ok {
			v, found := "", false
			for _, try := range []string{"1000", "7", "0.7", "LogAppendTime", "2.8", "true", "0:1"} {
				if try == *k.Default {
					continue
				}
				if _, err := k.Parse(try); err == nil {
					v, found = try, true
					break
				}
			}
			if !found {
				// The keys sluice takes only at their default (the record
				// timestamp bounds, remote.storage.enable) change nothing.
				if k.engine != nil {
					t.Errorf("%s: no value other than its default to try", k.Name)
				}
				continue
			}
			set = map[string]string{k.Name: v}
		}
		changed := !reflect.DeepEqual(c.LogOptions(set), c.LogOptions(base(k.Name)))
		reads := k.engine != nil || combined[k.Name] != nil
		switch {
		case reads && !changed:
			t.Errorf("%s=%s leaves the log options as they were", k.Name, set[k.Name])
		case !reads && changed:
			t.Errorf("%s=%s changes the log options, but its row binds no engine option", k.Name, set[k.Name])
		}
	}
}
