package main

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// gaugesOf scrapes addr's /metrics with Prometheus's text parser and
// returns the value of each label-less gauge or counter among names.
func gaugesOf(addr string, names ...string) (map[string]float64, error) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("parsing %s/metrics: %w", addr, err)
	}
	out := map[string]float64{}
	for _, name := range names {
		for _, m := range mfs[name].GetMetric() {
			if len(m.Label) == 0 {
				out[name] = m.GetGauge().GetValue() + m.GetCounter().GetValue()
			}
		}
		if _, ok := out[name]; !ok {
			return nil, fmt.Errorf("%s: no %s in /metrics", addr, name)
		}
	}
	return out, nil
}

// waitGauge polls broker id's /metrics until name reads want.
func (c *testCluster) waitGauge(id int32, name string, want float64) {
	c.t.Helper()
	poll(c.t, fmt.Sprintf("broker %d reports %s %v", id, name, want), func() error {
		g, err := gaugesOf(c.brokers[id].metrics, name)
		if err != nil {
			return err
		}
		if g[name] != want {
			return fmt.Errorf("%s = %v", name, g[name])
		}
		return nil
	})
}

// A follower of an RF 3 partition SIGKILLed: its leader's
// under-replicated partitions rise to 1 once the controller shrinks the
// ISR (the follower's session expires), and fall to 0 when it is
// restarted and back in the ISR; only the controller's broker reports an
// active controller.
func TestClusterMetricsUnderReplicated(t *testing.T) {
	c := startCluster(t, 3)
	const topic = "watched"
	mds := createTopic(t, c, topic, 1, 3)
	const under = "kafka_server_replicamanager_underreplicatedpartitions"
	const active = "kafka_controller_kafkacontroller_activecontrollercount"
	var leader, ctrl int32 = -1, -1
	for _, md := range mds {
		ctrl = md.ControllerID
		for _, tp := range md.Topics {
			if *tp.Topic == topic {
				leader = tp.Partitions[0].Leader
			}
		}
	}
	c.waitGauge(leader, under, 0)
	for _, id := range c.ids() {
		want := 0.0
		if id == ctrl {
			want = 1
		}
		c.waitGauge(id, active, want)
	}
	// The follower killed is neither the leader nor the controller, so
	// that nothing but the ISR changes.
	follower := int32(-1)
	for _, id := range c.ids() {
		if id != leader && id != ctrl {
			follower = id
		}
	}
	c.kill(follower)
	c.waitGauge(leader, under, 1)
	c.restart(follower)
	c.waitGauge(leader, under, 0)
	for _, id := range c.ids() {
		if g, err := gaugesOf(c.brokers[id].metrics, active); err != nil {
			t.Error(err)
		} else if want := map[bool]float64{true: 1}[id == ctrl]; g[active] != want {
			t.Errorf("broker %d reports %s %v, want %v (controller %d)", id, active, g[active], want, ctrl)
		}
	}
}
