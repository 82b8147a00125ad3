package dynamic

import (
	"errors"
	"maps"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/coordinator"
	"github.com/sluice-io/sluice/engine"
)

// fakeStore is an in-memory Store counting its writes.
type fakeStore struct {
	topics  map[string]coordinator.Topic
	cluster map[string]string
	node    map[int32]map[string]string
	writes  int
}

func (f *fakeStore) Topic(name string) (coordinator.Topic, bool) {
	t, ok := f.topics[name]
	t.Configs = maps.Clone(t.Configs)
	return t, ok
}
func (f *fakeStore) LoadTopic(string) error { return nil }
func (f *fakeStore) SetTopicConfigs(name string, configs map[string]string) (coordinator.Topic, error) {
	t, ok := f.topics[name]
	if !ok {
		return coordinator.Topic{}, coordinator.ErrUnknownTopic
	}
	f.writes++
	t.Configs = maps.Clone(configs)
	f.topics[name] = t
	return t, nil
}
func (f *fakeStore) BrokerConfigs() map[string]string { return maps.Clone(f.cluster) }
func (f *fakeStore) SetBrokerConfigs(c map[string]string) error {
	f.writes++
	f.cluster = maps.Clone(c)
	return nil
}
func (f *fakeStore) NodeConfigs(id int32) map[string]string { return maps.Clone(f.node[id]) }
func (f *fakeStore) SetNodeConfigs(id int32, c map[string]string) error {
	f.writes++
	f.node[id] = maps.Clone(c)
	return nil
}

type applied struct {
	name    string
	id      engine.TopicID
	configs map[string]string
}

type fixture struct {
	t       *testing.T
	store   *fakeStore
	admin   sync.Mutex
	topics  []applied // ApplyTopic's calls
	brokers int       // ApplyBroker's calls
	s       *Service
}

var topicID = engine.TopicID{1, 2, 3}

func newFixture(t *testing.T) *fixture {
	f := &fixture{t: t, store: &fakeStore{
		topics: map[string]coordinator.Topic{"t": {Name: "t", ID: topicID, Partitions: 1, ReplicationFactor: 1,
			Configs: map[string]string{"retention.ms": "1000"}}},
		node: map[int32]map[string]string{},
	}}
	f.s = New(Options{
		ID:     1,
		Static: map[string]string{"log.cleaner.threads": "1"},
		Store:  f.store,
		Admin:  &f.admin,
		ValidTopicName: func(name string) error {
			if name == "bad/name" {
				return errors.New("topic name is bad")
			}
			return nil
		},
		TopicExists: func(name string) bool { _, ok := f.store.topics[name]; return ok },
		ApplyTopic: func(name string, id engine.TopicID, configs map[string]string) {
			f.mustHoldAdmin("ApplyTopic")
			f.topics = append(f.topics, applied{name, id, maps.Clone(configs)})
		},
		ApplyBroker: func() {
			f.mustHoldAdmin("ApplyBroker")
			f.brokers++
		},
	})
	return f
}

func (f *fixture) mustHoldAdmin(what string) {
	if f.admin.TryLock() {
		f.admin.Unlock()
		f.t.Errorf("%s called without the administration lock held", what)
	}
}

func allow(kmsg.ConfigResourceType, string) (int16, string) { return 0, "" }

func str(s string) *string { return &s }

func (f *fixture) describe(kind kmsg.ConfigResourceType, name string, keys ...string) kmsg.DescribeConfigsResponseResource {
	f.t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.IncludeSynonyms = true
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName, rr.ConfigNames = kind, name, keys
	req.Resources = append(req.Resources, rr)
	resp := f.s.Describe(req, allow)
	if len(resp.Resources) != 1 {
		f.t.Fatalf("describe: %d resources, want 1", len(resp.Resources))
	}
	return resp.Resources[0]
}

func entry(t *testing.T, res kmsg.DescribeConfigsResponseResource, name string) kmsg.DescribeConfigsResponseResourceConfig {
	t.Helper()
	for _, e := range res.Configs {
		if e.Name == name {
			return e
		}
	}
	t.Fatalf("no entry %s in %v", name, res.Configs)
	return kmsg.DescribeConfigsResponseResourceConfig{}
}

// incremental sends one IncrementalAlterConfigs resource and returns its
// code and message.
func (f *fixture) incremental(kind kmsg.ConfigResourceType, name string, validateOnly bool, ops ...kmsg.IncrementalAlterConfigsRequestResourceConfig) (int16, string) {
	f.t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.ValidateOnly = validateOnly
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName, rr.Configs = kind, name, ops
	req.Resources = append(req.Resources, rr)
	resp := f.s.IncrementalAlter(req, allow)
	if len(resp.Resources) != 1 {
		f.t.Fatalf("incremental: %d resources, want 1", len(resp.Resources))
	}
	r := resp.Resources[0]
	var msg string
	if r.ErrorMessage != nil {
		msg = *r.ErrorMessage
	}
	if f.admin.TryLock() {
		f.admin.Unlock()
	} else {
		f.t.Fatal("the administration lock is still held after IncrementalAlter")
	}
	return r.ErrorCode, msg
}

func op(o kmsg.IncrementalAlterConfigOp, name string, value *string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Op, c.Name, c.Value = o, name, value
	return c
}

func (f *fixture) alter(kind kmsg.ConfigResourceType, name string, validateOnly bool, kv ...string) (int16, string) {
	f.t.Helper()
	req := kmsg.NewPtrAlterConfigsRequest()
	req.ValidateOnly = validateOnly
	rr := kmsg.NewAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kind, name
	for i := 0; i < len(kv); i += 2 {
		c := kmsg.NewAlterConfigsRequestResourceConfig()
		c.Name, c.Value = kv[i], str(kv[i+1])
		rr.Configs = append(rr.Configs, c)
	}
	req.Resources = append(req.Resources, rr)
	r := f.s.Alter(req, allow).Resources[0]
	var msg string
	if r.ErrorMessage != nil {
		msg = *r.ErrorMessage
	}
	return r.ErrorCode, msg
}

func TestDescribeTopic(t *testing.T) {
	f := newFixture(t)
	res := f.describe(kmsg.ConfigResourceTypeTopic, "t")
	if res.ErrorCode != 0 {
		t.Fatalf("describe t: %v", kerr.ErrorForCode(res.ErrorCode))
	}
	set := entry(t, res, "retention.ms")
	if set.Value == nil || *set.Value != "1000" || set.Source != kmsg.ConfigSourceDynamicTopicConfig || set.IsDefault || set.ReadOnly {
		t.Errorf("retention.ms: value %v source %v default %v read-only %v, want 1000 DYNAMIC_TOPIC_CONFIG", deref(set.Value), set.Source, set.IsDefault, set.ReadOnly)
	}
	if len(set.ConfigSynonyms) == 0 || set.ConfigSynonyms[0].Name != "retention.ms" || set.ConfigSynonyms[0].Source != kmsg.ConfigSourceDynamicTopicConfig {
		t.Errorf("retention.ms synonyms %+v: the override first", set.ConfigSynonyms)
	}
	def := entry(t, res, "cleanup.policy")
	if def.Value == nil || *def.Value != "delete" || def.Source != kmsg.ConfigSourceDefaultConfig || !def.IsDefault {
		t.Errorf("cleanup.policy: value %v source %v default %v, want delete DEFAULT_CONFIG", deref(def.Value), def.Source, def.IsDefault)
	}
	for i := 1; i < len(res.Configs); i++ {
		if res.Configs[i-1].Name >= res.Configs[i].Name {
			t.Fatalf("entries not sorted: %s before %s", res.Configs[i-1].Name, res.Configs[i].Name)
		}
	}

	// ConfigNames keeps the named keys only.
	if res := f.describe(kmsg.ConfigResourceTypeTopic, "t", "cleanup.policy", "no.such.key"); len(res.Configs) != 1 || res.Configs[0].Name != "cleanup.policy" {
		t.Errorf("describe of one key: %v", res.Configs)
	}
	// Unknown and invalid topics.
	if res := f.describe(kmsg.ConfigResourceTypeTopic, "nope"); res.ErrorCode != kerr.UnknownTopicOrPartition.Code || deref(res.ErrorMessage) != "topic nope does not exist" || res.Configs != nil {
		t.Errorf("unknown topic: %v %q", kerr.ErrorForCode(res.ErrorCode), deref(res.ErrorMessage))
	}
	if res := f.describe(kmsg.ConfigResourceTypeTopic, "bad/name"); res.ErrorCode != kerr.InvalidTopicException.Code || deref(res.ErrorMessage) != "topic name is bad" {
		t.Errorf("invalid topic: %v %q", kerr.ErrorForCode(res.ErrorCode), deref(res.ErrorMessage))
	}
	// Another broker's id.
	if res := f.describe(kmsg.ConfigResourceTypeBroker, "7"); res.ErrorCode != kerr.InvalidRequest.Code || deref(res.ErrorMessage) != "Unexpected broker id, expected 1 or empty string, but received 7" {
		t.Errorf("broker 7: %v %q", kerr.ErrorForCode(res.ErrorCode), deref(res.ErrorMessage))
	}
	// This broker's own: a static key is STATIC_BROKER_CONFIG and read-only.
	if e := entry(t, f.describe(kmsg.ConfigResourceTypeBroker, "1"), "log.cleaner.threads"); e.Source != kmsg.ConfigSourceStaticBrokerConfig || !e.ReadOnly || deref(e.Value) != "1" {
		t.Errorf("log.cleaner.threads: source %v read-only %v value %q", e.Source, e.ReadOnly, deref(e.Value))
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

func TestIncrementalSetThenDelete(t *testing.T) {
	f := newFixture(t)
	if code, msg := f.incremental(kmsg.ConfigResourceTypeTopic, "t", false, op(kmsg.IncrementalAlterConfigOpSet, "segment.bytes", str("1048576"))); code != 0 {
		t.Fatalf("SET: %v %s", kerr.ErrorForCode(code), msg)
	}
	want := map[string]string{"retention.ms": "1000", "segment.bytes": "1048576"}
	if got := f.store.topics["t"].Configs; !maps.Equal(got, want) {
		t.Fatalf("after SET the store has %v, want %v", got, want)
	}
	if len(f.topics) != 1 || f.topics[0].name != "t" || f.topics[0].id != topicID || !maps.Equal(f.topics[0].configs, want) {
		t.Fatalf("after SET ApplyTopic was called with %+v", f.topics)
	}
	if e := entry(t, f.describe(kmsg.ConfigResourceTypeTopic, "t"), "segment.bytes"); deref(e.Value) != "1048576" || e.Source != kmsg.ConfigSourceDynamicTopicConfig {
		t.Errorf("segment.bytes after SET: %q %v", deref(e.Value), e.Source)
	}

	if code, msg := f.incremental(kmsg.ConfigResourceTypeTopic, "t", false, op(kmsg.IncrementalAlterConfigOpDelete, "retention.ms", nil), op(kmsg.IncrementalAlterConfigOpDelete, "segment.bytes", nil)); code != 0 {
		t.Fatalf("DELETE: %v %s", kerr.ErrorForCode(code), msg)
	}
	if got := f.store.topics["t"].Configs; len(got) != 0 {
		t.Fatalf("after DELETE the store has %v, want none", got)
	}
	if len(f.topics) != 2 || len(f.topics[1].configs) != 0 {
		t.Fatalf("after DELETE ApplyTopic was called with %+v", f.topics)
	}
	if e := entry(t, f.describe(kmsg.ConfigResourceTypeTopic, "t"), "retention.ms"); e.Source == kmsg.ConfigSourceDynamicTopicConfig {
		t.Errorf("retention.ms after DELETE is still an override: %q", deref(e.Value))
	}
	// Deleting a key that is not set succeeds.
	if code, msg := f.incremental(kmsg.ConfigResourceTypeTopic, "t", false, op(kmsg.IncrementalAlterConfigOpDelete, "retention.ms", nil)); code != 0 {
		t.Fatalf("DELETE of an unset key: %v %s", kerr.ErrorForCode(code), msg)
	}
}

func TestIncrementalAppendSubtract(t *testing.T) {
	f := newFixture(t)
	// APPEND starts from Kafka's default, delete.
	if code, msg := f.incremental(kmsg.ConfigResourceTypeTopic, "t", false, op(kmsg.IncrementalAlterConfigOpAppend, "cleanup.policy", str("compact"))); code != 0 {
		t.Fatalf("APPEND: %v %s", kerr.ErrorForCode(code), msg)
	}
	if got := f.store.topics["t"].Configs["cleanup.policy"]; got != "delete,compact" {
		t.Fatalf("after APPEND cleanup.policy=%q, want delete,compact", got)
	}
	// Appending an element already there changes nothing.
	if code, _ := f.incremental(kmsg.ConfigResourceTypeTopic, "t", false, op(kmsg.IncrementalAlterConfigOpAppend, "cleanup.policy", str("compact"))); code != 0 || f.store.topics["t"].Configs["cleanup.policy"] != "delete,compact" {
		t.Fatalf("APPEND again: %v, cleanup.policy=%q", kerr.ErrorForCode(code), f.store.topics["t"].Configs["cleanup.policy"])
	}
	if code, msg := f.incremental(kmsg.ConfigResourceTypeTopic, "t", false, op(kmsg.IncrementalAlterConfigOpSubtract, "cleanup.policy", str("delete"))); code != 0 {
		t.Fatalf("SUBTRACT: %v %s", kerr.ErrorForCode(code), msg)
	}
	if got := f.store.topics["t"].Configs["cleanup.policy"]; got != "compact" {
		t.Fatalf("after SUBTRACT cleanup.policy=%q, want compact", got)
	}
	// On a key that is not a list: the controller's message for a topic,
	// the broker's for a broker resource.
	if code, msg := f.incremental(kmsg.ConfigResourceTypeTopic, "t", false, op(kmsg.IncrementalAlterConfigOpAppend, "retention.ms", str("1"))); code != kerr.InvalidConfig.Code || msg != "Can't APPEND to key retention.ms because its type is not LIST." {
		t.Errorf("APPEND to retention.ms: %v %q", kerr.ErrorForCode(code), msg)
	}
	if code, msg := f.incremental(kmsg.ConfigResourceTypeBroker, "", false, op(kmsg.IncrementalAlterConfigOpSubtract, "log.retention.ms", str("1"))); code != kerr.InvalidConfig.Code || msg != "Config value subtract is not allowed for config key: log.retention.ms" {
		t.Errorf("SUBTRACT from log.retention.ms: %v %q", kerr.ErrorForCode(code), msg)
	}
	// An unknown operation, a null SET, a key twice.
	if code, msg := f.incremental(kmsg.ConfigResourceTypeTopic, "t", false, op(7, "retention.ms", str("1"))); code != kerr.InvalidRequest.Code || msg != "Unknown operations type 7" {
		t.Errorf("operation 7: %v %q", kerr.ErrorForCode(code), msg)
	}
	if code, msg := f.incremental(kmsg.ConfigResourceTypeTopic, "t", false, op(kmsg.IncrementalAlterConfigOpSet, "retention.ms", nil)); code != kerr.InvalidRequest.Code || msg != "Null value not supported for : retention.ms" {
		t.Errorf("null SET: %v %q", kerr.ErrorForCode(code), msg)
	}
	if code, msg := f.incremental(kmsg.ConfigResourceTypeTopic, "t", false, op(kmsg.IncrementalAlterConfigOpSet, "retention.ms", str("1")), op(kmsg.IncrementalAlterConfigOpDelete, "retention.ms", nil)); code != kerr.InvalidRequest.Code || msg != "Error due to duplicate config keys" {
		t.Errorf("a key twice: %v %q", kerr.ErrorForCode(code), msg)
	}
}

func TestInvalidValue(t *testing.T) {
	f := newFixture(t)
	const want = "Invalid value x for configuration retention.ms: Not a number of type LONG"
	if code, msg := f.incremental(kmsg.ConfigResourceTypeTopic, "t", false, op(kmsg.IncrementalAlterConfigOpSet, "retention.ms", str("x"))); code != kerr.InvalidConfig.Code || msg != want {
		t.Errorf("incremental retention.ms=x: %v %q, want INVALID_CONFIG %q", kerr.ErrorForCode(code), msg, want)
	}
	if code, msg := f.alter(kmsg.ConfigResourceTypeTopic, "t", false, "retention.ms", "x"); code != kerr.InvalidConfig.Code || msg != want {
		t.Errorf("alter retention.ms=x: %v %q, want INVALID_CONFIG %q", kerr.ErrorForCode(code), msg, want)
	}
	// The configs are checked before whether the topic exists, as Kafka's
	// controller does.
	if code, msg := f.alter(kmsg.ConfigResourceTypeTopic, "nope", false, "retention.ms", "x"); code != kerr.InvalidConfig.Code || msg != want {
		t.Errorf("alter of an unknown topic, retention.ms=x: %v %q", kerr.ErrorForCode(code), msg)
	}
	if code, msg := f.alter(kmsg.ConfigResourceTypeTopic, "nope", false, "retention.ms", "5"); code != kerr.UnknownTopicOrPartition.Code || msg != "topic nope does not exist" {
		t.Errorf("alter of an unknown topic: %v %q", kerr.ErrorForCode(code), msg)
	}
	if code, msg := f.alter(kmsg.ConfigResourceTypeTopic, "", false, "retention.ms", "5"); code != kerr.InvalidRequest.Code || msg != "Default topic resources are not allowed." {
		t.Errorf("alter of the default topic: %v %q", kerr.ErrorForCode(code), msg)
	}
	if f.store.writes != 0 || len(f.topics) != 0 {
		t.Errorf("refused changes wrote %d times and applied %+v", f.store.writes, f.topics)
	}
	if got := f.store.topics["t"].Configs; !maps.Equal(got, map[string]string{"retention.ms": "1000"}) {
		t.Errorf("after refused changes the store has %v", got)
	}
}

func TestValidateOnly(t *testing.T) {
	f := newFixture(t)
	if code, msg := f.incremental(kmsg.ConfigResourceTypeTopic, "t", true, op(kmsg.IncrementalAlterConfigOpSet, "retention.ms", str("5"))); code != 0 {
		t.Fatalf("validateOnly SET: %v %s", kerr.ErrorForCode(code), msg)
	}
	if code, msg := f.alter(kmsg.ConfigResourceTypeTopic, "t", true, "segment.bytes", "1048576"); code != 0 {
		t.Fatalf("validateOnly alter: %v %s", kerr.ErrorForCode(code), msg)
	}
	if code, msg := f.alter(kmsg.ConfigResourceTypeBroker, "", true, "log.retention.ms", "5"); code != 0 {
		t.Fatalf("validateOnly broker alter: %v %s", kerr.ErrorForCode(code), msg)
	}
	// Validation still refuses.
	if code, _ := f.alter(kmsg.ConfigResourceTypeTopic, "t", true, "retention.ms", "x"); code != kerr.InvalidConfig.Code {
		t.Errorf("validateOnly retention.ms=x: %v", kerr.ErrorForCode(code))
	}
	if f.store.writes != 0 || len(f.topics) != 0 || f.brokers != 0 {
		t.Errorf("validateOnly wrote %d times, applied topics %+v and the brokers' layers %d times", f.store.writes, f.topics, f.brokers)
	}
	if got := f.store.topics["t"].Configs; !maps.Equal(got, map[string]string{"retention.ms": "1000"}) {
		t.Errorf("after validateOnly the store has %v", got)
	}
	if d := f.s.Dynamic(); len(d.Cluster) != 0 || len(d.Node) != 0 {
		t.Errorf("after validateOnly the dynamic layers are %+v", d)
	}
}

func TestBrokerConfigs(t *testing.T) {
	f := newFixture(t)
	// A key that is not dynamic, by AlterConfigs and IncrementalAlterConfigs,
	// on either broker resource: INVALID_REQUEST (KAFKA-13609).
	const readOnly = "Cannot update these configs dynamically: [log.cleaner.threads]"
	for _, name := range []string{"", "1"} {
		if code, msg := f.alter(kmsg.ConfigResourceTypeBroker, name, false, "log.cleaner.threads", "2"); code != kerr.InvalidRequest.Code || msg != readOnly {
			t.Errorf("alter %q log.cleaner.threads: %v %q, want INVALID_REQUEST %q", name, kerr.ErrorForCode(code), msg, readOnly)
		}
		if code, msg := f.incremental(kmsg.ConfigResourceTypeBroker, name, false, op(kmsg.IncrementalAlterConfigOpSet, "log.cleaner.threads", str("2"))); code != kerr.InvalidRequest.Code || msg != readOnly {
			t.Errorf("incremental %q log.cleaner.threads: %v %q, want INVALID_REQUEST %q", name, kerr.ErrorForCode(code), msg, readOnly)
		}
	}
	if code, msg := f.alter(kmsg.ConfigResourceTypeBroker, "x", false, "log.retention.ms", "5"); code != kerr.InvalidRequest.Code || msg != "Broker id must be an integer, but it is: x" {
		t.Errorf("broker x: %v %q", kerr.ErrorForCode(code), msg)
	}
	if f.store.writes != 0 || f.brokers != 0 {
		t.Fatalf("refused broker changes wrote %d times, applied %d", f.store.writes, f.brokers)
	}

	// A dynamic key at the cluster default: persisted, applied, and then
	// the topics' synonym.
	if code, msg := f.incremental(kmsg.ConfigResourceTypeBroker, "", false, op(kmsg.IncrementalAlterConfigOpSet, "log.retention.ms", str("5000"))); code != 0 {
		t.Fatalf("SET log.retention.ms: %v %s", kerr.ErrorForCode(code), msg)
	}
	if f.store.cluster["log.retention.ms"] != "5000" || f.s.Dynamic().Cluster["log.retention.ms"] != "5000" || f.brokers != 1 {
		t.Fatalf("after SET log.retention.ms: store %v, layer %v, applied %d times", f.store.cluster, f.s.Dynamic().Cluster, f.brokers)
	}
	f.store.topics["t"] = coordinator.Topic{Name: "t", ID: topicID}
	if e := entry(t, f.describe(kmsg.ConfigResourceTypeTopic, "t"), "retention.ms"); deref(e.Value) != "5000" || e.Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig {
		t.Errorf("retention.ms from the cluster default: %q %v", deref(e.Value), e.Source)
	}
	if res := f.describe(kmsg.ConfigResourceTypeBroker, ""); len(res.Configs) != 1 || res.Configs[0].Name != "log.retention.ms" {
		t.Errorf("the cluster default lists %v, want log.retention.ms alone", res.Configs)
	}
}

func TestResourcesAndAuthorization(t *testing.T) {
	f := newFixture(t)
	req := kmsg.NewPtrAlterConfigsRequest()
	for _, name := range []string{"t", "t", "u"} {
		rr := kmsg.NewAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, name
		req.Resources = append(req.Resources, rr)
	}
	resp := f.s.Alter(req, func(_ kmsg.ConfigResourceType, name string) (int16, string) {
		return kerr.TopicAuthorizationFailed.Code, "denied " + name
	})
	for i, r := range resp.Resources {
		code, msg := kerr.InvalidRequest.Code, "Each resource must appear at most once."
		if i == 2 {
			code, msg = kerr.TopicAuthorizationFailed.Code, "denied u"
		}
		if r.ErrorCode != code || deref(r.ErrorMessage) != msg {
			t.Errorf("resource %d (%s): %v %q, want %v %q", i, r.ResourceName, kerr.ErrorForCode(r.ErrorCode), deref(r.ErrorMessage), kerr.ErrorForCode(code), msg)
		}
	}
	// An unknown resource type fails every resource of a DescribeConfigs.
	dreq := kmsg.NewPtrDescribeConfigsRequest()
	for _, kind := range []kmsg.ConfigResourceType{kmsg.ConfigResourceTypeTopic, 9} {
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kind, "t"
		dreq.Resources = append(dreq.Resources, rr)
	}
	for _, r := range f.s.Describe(dreq, allow).Resources {
		if r.ErrorCode != kerr.InvalidRequest.Code || deref(r.ErrorMessage) != "Unexpected resource type 9 for resource t" || r.Configs != nil {
			t.Errorf("describe with an unknown type: %v %q", kerr.ErrorForCode(r.ErrorCode), deref(r.ErrorMessage))
		}
	}
}

func TestChangedAndLoad(t *testing.T) {
	f := newFixture(t)
	// Another broker's change of a topic: applied from the store, with no id.
	f.store.topics["t"] = coordinator.Topic{Name: "t", ID: topicID, Configs: map[string]string{"retention.ms": "7"}}
	f.s.Changed("topics", "t")
	if len(f.topics) != 1 || f.topics[0].id != (engine.TopicID{}) || f.topics[0].configs["retention.ms"] != "7" {
		t.Fatalf("Changed(topics): ApplyTopic calls %+v", f.topics)
	}
	// Of the brokers' layers: read again, invalid entries dropped.
	f.store.cluster = map[string]string{"log.retention.ms": "9", "log.cleaner.threads": "3"}
	f.s.Changed("brokers", "<default>")
	if d := f.s.Dynamic(); !maps.Equal(d.Cluster, map[string]string{"log.retention.ms": "9"}) || f.brokers != 1 {
		t.Fatalf("Changed(brokers): layer %v, applied %d times", d.Cluster, f.brokers)
	}
}
