package config

import (
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
