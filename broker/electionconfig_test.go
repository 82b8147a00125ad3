package broker

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/sluice-io/sluice/config"
	"github.com/sluice-io/sluice/coordinator/zk"
)

// The election keys parse with Kafka's names, bad values are refused
// naming the key, the static unclean.leader.election.enable is the
// default DescribeConfigs reports for topics, and the controller's view of
// a topic's setting is the override, else the broker's layers.
func TestElectionConfigKeys(t *testing.T) {
	var c config.Config
	if _, err := c.Apply(map[string]string{
		"unclean.leader.election.enable": "true", "auto.leader.rebalance.enable": "false",
		"leader.imbalance.check.interval.seconds": "7", "leader.imbalance.per.broker.percentage": "0",
	}); err != nil {
		t.Fatal(err)
	}
	e := c.Cluster.Election
	if !*e.UncleanLeaderElection || *e.AutoLeaderRebalance || e.ImbalanceCheckInterval != 7*time.Second || *e.ImbalancePercentage != 0 {
		t.Fatalf("applied %+v", e)
	}
	for k, v := range map[string]string{"unclean.leader.election.enable": "yes", "auto.leader.rebalance.enable": "1",
		"leader.imbalance.check.interval.seconds": "0", "leader.imbalance.per.broker.percentage": "x"} {
		var c config.Config
		if _, err := c.Apply(map[string]string{k: v}); err == nil || !strings.Contains(err.Error(), k) {
			t.Errorf("%s=%s: %v, want an error naming the key", k, v, err)
		}
	}

	on := true
	tb := startBroker(t, t.TempDir(), func(c *config.Config) { c.Cluster.Election.UncleanLeaderElection = &on })
	adm := tb.admin(t)
	ctx := ctxTimeout(t, 10*time.Second)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "u"); err != nil {
		t.Fatal(err)
	}
	wantConfig(t, "static default", describedTopic(t, adm, "u")["unclean.leader.election.enable"], "true", srcStatic,
		"unclean.leader.election.enable=true/STATIC_BROKER_CONFIG", "unclean.leader.election.enable=false/DEFAULT_CONFIG")
	o := tb.electionLoopOptions(zk.LoopOptions{})
	if !o.Unclean(nil) || o.Unclean(map[string]string{"unclean.leader.election.enable": "false"}) {
		t.Errorf("the controller's view: %v without an override, %v with false", o.Unclean(nil), o.Unclean(map[string]string{"unclean.leader.election.enable": "false"}))
	}
	mustAlter(t)(adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{set("unclean.leader.election.enable", "false")}))
	if o.Unclean(nil) {
		t.Errorf("the cluster-wide dynamic default false does not win over the static true")
	}
}
