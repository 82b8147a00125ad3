package broker

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-io/sluice/config"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var keyShaped = regexp.MustCompile(`^[a-z][a-z0-9]*(\.[a-z0-9]+)+$`)

// acceptedKeys are the keys server.properties takes (Config.Apply does not
// call them unknown), probed with every key-shaped string literal of the
// code of broker/ and config/, so that a key a parser learns is found without a list
// kept by hand.
func acceptedKeys(t *testing.T) []string {
	t.Helper()
	fset := token.NewFileSet()
	seen := map[string]bool{}
	for _, dir := range []string{".", "../config"} {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(f, func(n ast.Node) bool {
				if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					if s, err := strconv.Unquote(lit.Value); err == nil && keyShaped.MatchString(s) {
						seen[s] = true
					}
				}
				return true
			})
		}
	}
	var out []string
	for k := range seen {
		var c config.Config
		if unknown, _ := c.Apply(map[string]string{k: "1"}); !slices.Contains(unknown, k) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// Every key server.properties accepts is described by a broker's
// DescribeConfigs, with a type and documentation (but the authorizer's keys
// Kafka does not define, which it describes only when set: those are in
// the catalogue as undefined).
func TestParserKeysDescribed(t *testing.T) {
	accepted := acceptedKeys(t)
	if len(accepted) < 100 {
		t.Fatalf("only %d keys accepted (%v): the probe finds too few", len(accepted), accepted)
	}
	tb := startBroker(t, t.TempDir(), nil)
	rc := dialRaw(t, tb.addr)
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.IncludeDocumentation = true
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeBroker, "0"
	req.Resources = append(req.Resources, rr)
	resp := rc.roundTrip(req, 4).(*kmsg.DescribeConfigsResponse)
	if len(resp.Resources) != 1 || resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("DescribeConfigs: %+v", resp.Resources)
	}
	described := map[string]kmsg.DescribeConfigsResponseResourceConfig{}
	for _, c := range resp.Resources[0].Configs {
		described[c.Name] = c
	}
	var missing []string
	for _, k := range accepted {
		c, ok := described[k]
		switch {
		case !ok && config.BrokerKeyByName[k] != nil && config.BrokerKeyByName[k].Undefined:
		case !ok:
			missing = append(missing, k)
		case c.ConfigType == kmsg.ConfigTypeUnknown || c.Documentation == nil || *c.Documentation == "":
			t.Errorf("%s is described without a type or documentation: %+v", k, c)
		}
	}
	t.Logf("%d keys accepted, %d described", len(accepted), len(described))
	if len(missing) > 0 {
		t.Errorf("%d keys server.properties accepts are not described: %v", len(missing), missing)
	}
}

// The keys set in server.properties are described with their values as
// STATIC_BROKER_CONFIG, the others with Kafka's defaults.
func TestStaticKeysDescribed(t *testing.T) {
	props := map[string]string{
		"group.max.size": "10", "offsets.retention.minutes": "60", "transaction.max.timeout.ms": "60000",
		"transaction.partition.verification.enable": "false", "replica.lag.time.max.ms": "5000",
		"replica.fetch.wait.max.ms": "400", "controlled.shutdown.max.retries": "0", "log.slow.request.ms": "250",
		"broker.rack": "r1",
	}
	tb := startBroker(t, t.TempDir(), func(c *config.Config) {
		if unknown, err := c.Apply(props); err != nil || len(unknown) > 0 {
			t.Fatalf("Apply: %v, unknown %v", err, unknown)
		}
	})
	rc := dialRaw(t, tb.addr)
	req := kmsg.NewPtrDescribeConfigsRequest()
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeBroker, "0"
	for k := range props {
		rr.ConfigNames = append(rr.ConfigNames, k)
	}
	rr.ConfigNames = append(rr.ConfigNames, "group.min.session.timeout.ms", "num.replica.fetchers", "log.dir")
	req.Resources = append(req.Resources, rr)
	resp := rc.roundTrip(req, 4).(*kmsg.DescribeConfigsResponse)
	got := map[string]kmsg.DescribeConfigsResponseResourceConfig{}
	for _, c := range resp.Resources[0].Configs {
		got[c.Name] = c
	}
	for k, v := range props {
		c := got[k]
		if c.Value == nil || *c.Value != v || c.Source != kmsg.ConfigSourceStaticBrokerConfig || !c.ReadOnly {
			t.Errorf("%s: %v from %v (read-only %v), want %s from the configuration, read-only", k, c.Value, c.Source, c.ReadOnly, v)
		}
	}
	for k, v := range map[string]string{"group.min.session.timeout.ms": "6000", "num.replica.fetchers": "1"} {
		if c := got[k]; c.Value == nil || *c.Value != v || c.Source != kmsg.ConfigSourceDefaultConfig {
			t.Errorf("%s: %v from %v, want the default %s", k, c.Value, c.Source, v)
		}
	}
	if c := got["log.dir"]; c.Value == nil || *c.Value != tb.dir || c.Source != kmsg.ConfigSourceStaticBrokerConfig {
		t.Errorf("log.dir: %v from %v, want the data directory", c.Value, c.Source)
	}
}

// The broker keys Kafka also changes at run time take their value from
// server.properties as well (as Kafka's do): min.insync.replicas=2 there
// makes a topic without an override refuse acks=all on one replica, and
// log.message.timestamp.type=LogAppendTime stamps the broker's time; both
// are described as the configuration's. A bad value is refused at parse.
func TestServerPropertiesDynamicKeys(t *testing.T) {
	props := map[string]string{"min.insync.replicas": "2", "log.message.timestamp.type": "LogAppendTime", "log.preallocate": "false"}
	var bad config.Config
	if _, err := bad.Apply(map[string]string{"min.insync.replicas": "two"}); err == nil {
		t.Fatal("min.insync.replicas=two accepted")
	}
	tb := startBroker(t, t.TempDir(), func(c *config.Config) {
		if unknown, err := c.Apply(props); err != nil || len(unknown) > 0 {
			t.Fatalf("Apply: %v, unknown %v", err, unknown)
		}
	})
	ctx := ctxTimeout(t, 10*time.Second)
	if _, err := tb.admin(t).CreateTopic(ctx, 1, 1, nil, "plain"); err != nil {
		t.Fatal(err)
	}
	rc := dialRaw(t, tb.addr)
	resp := rc.roundTrip(produceReq("plain", 0, -1, batch("all")), 9).(*kmsg.ProduceResponse)
	wantCode(t, "acks=all under min.insync.replicas=2 from server.properties", resp.Topics[0].Partitions[0].ErrorCode, kerr.NotEnoughReplicas)
	before := time.Now().UnixMilli()
	resp = rc.roundTrip(produceReq("plain", 0, 1, batch("stamped")), 9).(*kmsg.ProduceResponse)
	if p := resp.Topics[0].Partitions[0]; p.ErrorCode != 0 || p.LogAppendTime < before {
		t.Errorf("acks=1: %v, log append time %d (want at least %d: LogAppendTime from server.properties)", kerr.ErrorForCode(p.ErrorCode), p.LogAppendTime, before)
	}
	described := describedTopic(t, tb.admin(t), "plain")
	for k, v := range map[string]string{"min.insync.replicas": "2", "message.timestamp.type": "LogAppendTime"} {
		if c := described[k]; c.MaybeValue() != v || c.Source != kmsg.ConfigSourceStaticBrokerConfig {
			t.Errorf("topic %s: %q from %v, want %s from the broker's configuration", k, c.MaybeValue(), c.Source, v)
		}
	}
}
