package broker

import (
	"testing"
	"time"
)

// producer.id.expiration.ms: Kafka's int of at least 1 ms, default one
// day, reaching every log's options.
func TestConfigProducerIDExpiration(t *testing.T) {
	var c Config
	if got := c.withDefaults().ProducerIDExpiration; got != 24*time.Hour {
		t.Errorf("default %v, want 24h", got)
	}
	if _, err := c.Apply(map[string]string{"producer.id.expiration.ms": "3600000"}); err != nil {
		t.Fatal(err)
	}
	c = c.withDefaults()
	if c.ProducerIDExpiration != time.Hour {
		t.Errorf("applied %v, want 1h", c.ProducerIDExpiration)
	}
	if got := c.logOptions(map[string]string{"retention.ms": "1000"}).ProducerIDExpiration; got != time.Hour {
		t.Errorf("a topic's log options have %v, want 1h", got)
	}
	for _, bad := range []string{"0", "-1", "2147483648", "1h"} {
		var c Config
		if _, err := c.Apply(map[string]string{"producer.id.expiration.ms": bad}); err == nil {
			t.Errorf("producer.id.expiration.ms=%s accepted", bad)
		}
	}
}
