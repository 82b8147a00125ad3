package broker

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/sluice-io/sluice/config"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The rates are dynamic broker keys, for this broker or the cluster: this
// broker's value wins, a deleted one falls back to the default, then to
// no bound; a negative rate is refused as Kafka refuses it; the windows
// are read-only, from the configuration file.
func TestReplicationThrottleConfigs(t *testing.T) {
	tb := startBroker(t, t.TempDir(), func(c *config.Config) {
		if _, err := c.Apply(map[string]string{"replication.quota.window.num": "5", "replication.quota.window.size.seconds": "2"}); err != nil {
			t.Fatal(err)
		}
	})
	adm := tb.admin(t)
	ctx := ctxTimeout(t, 10*time.Second)
	bounds := func() (int64, int64) { return tb.quotas.repl.leader.Bound(), tb.quotas.repl.follower.Bound() }
	if l, f := bounds(); l != math.MaxInt64 || f != math.MaxInt64 {
		t.Fatalf("no rate set: bounds %d and %d, want none", l, f)
	}
	mustAlter(t)(adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{set("follower.replication.throttled.rate", "5000"), set("leader.replication.throttled.rate", "7000")}))
	mustAlter(t)(adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{set("follower.replication.throttled.rate", "2000")}, 0))
	if l, f := bounds(); l != 7000 || f != 2000 {
		t.Fatalf("bounds %d and %d, want 7000 (the cluster default) and 2000 (this broker's)", l, f)
	}
	got := describedBroker(t, tb, "0")
	if c := got["follower.replication.throttled.rate"]; c.Value == nil || *c.Value != "2000" || c.Source != kmsg.ConfigSourceDynamicBrokerConfig {
		t.Errorf("described follower.replication.throttled.rate: %+v, want 2000 from DYNAMIC_BROKER_CONFIG", c)
	}
	if c := got["leader.replication.throttled.rate"]; c.Value == nil || *c.Value != "7000" || c.Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig {
		t.Errorf("described leader.replication.throttled.rate: %+v, want 7000 from DYNAMIC_DEFAULT_BROKER_CONFIG", c)
	}
	if c := got["replication.quota.window.num"]; c.Value == nil || *c.Value != "5" || !c.ReadOnly || c.Source != kmsg.ConfigSourceStaticBrokerConfig {
		t.Errorf("described replication.quota.window.num: %+v, want 5, read-only, STATIC_BROKER_CONFIG", c)
	}
	if n, w := tb.quotas.repl.leader.Windows(); n != 5 || w != 2*time.Second {
		t.Errorf("the leader quota has %d samples of %v, want 5 of 2 s", n, w)
	}
	for _, bad := range []kadm.AlterConfig{set("leader.replication.throttled.rate", "-1"), set("follower.replication.throttled.rate", "fast"), set("replication.quota.window.num", "3")} {
		if err := alterResult(adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{bad})); !errors.Is(err, kerr.InvalidRequest) {
			t.Errorf("%s=%s: %v, want INVALID_REQUEST", bad.Name, *bad.Value, err)
		}
	}
	mustAlter(t)(adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{del("follower.replication.throttled.rate")}, 0))
	if _, f := bounds(); f != 5000 {
		t.Fatalf("this broker's follower rate deleted: bound %d, want the cluster default's 5000", f)
	}
	mustAlter(t)(adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{del("follower.replication.throttled.rate"), del("leader.replication.throttled.rate")}))
	if l, f := bounds(); l != math.MaxInt64 || f != math.MaxInt64 {
		t.Fatalf("every rate deleted: bounds %d and %d, want none", l, f)
	}
}

// A topic's *.replication.throttled.replicas become its partitions' flags
// on this broker (id 0) when they change.
func TestThrottledReplicasFlags(t *testing.T) {
	tb := startBroker(t, t.TempDir(), nil)
	adm := tb.admin(t)
	ctx := ctxTimeout(t, 10*time.Second)
	if r, err := adm.CreateTopic(ctx, 3, 1, nil, "flags"); err != nil || r.Err != nil {
		t.Fatalf("create: %v %v", err, r.Err)
	}
	flags := func() (leader, follower [3]bool) {
		for i := range 3 {
			p := tb.partition("flags", int32(i))
			leader[i], follower[i] = p.LeaderThrottled.Load(), p.FollowerThrottled.Load()
		}
		return
	}
	if l, f := flags(); l != [3]bool{} || f != [3]bool{} {
		t.Fatalf("no throttled replicas: flags %v %v", l, f)
	}
	mustAlter(t)(adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{set("leader.replication.throttled.replicas", "1:0,2:1"), set("follower.replication.throttled.replicas", "*")}, "flags"))
	if l, f := flags(); l != [3]bool{false, true, false} || f != [3]bool{true, true, true} {
		t.Fatalf("leader 1:0,2:1 and follower *: flags %v %v, want leader only on partition 1, follower on all", l, f)
	}
	mustAlter(t)(adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{del("leader.replication.throttled.replicas"), del("follower.replication.throttled.replicas")}, "flags"))
	if l, f := flags(); l != [3]bool{} || f != [3]bool{} {
		t.Fatalf("deleted: flags %v %v", l, f)
	}
}
