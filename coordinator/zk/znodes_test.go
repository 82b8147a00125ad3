package zk

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/sluice-io/sluice/engine"
)

func rack(s string) *string { return &s }

func mustTopicID(t testing.TB, s string) engine.TopicID {
	t.Helper()
	id, err := engine.ParseTopicID(s)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func mustBroker(t testing.TB, b BrokerRegistration) []byte {
	t.Helper()
	data, err := EncodeBroker(b)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestEncodeExact checks each encoder against the bytes Kafka 3.9 writes.
// The expected strings are taken from zookeeper-shell output of Kafka
// clusters (brokers, topics, partition states, controller, cluster id) and
// from Kafka's own tests (KafkaZkClientTest, ReassignPartitionsZNodeTest,
// ZkConfigMigrationClientTest); the rest follow ZkData's code.
func TestEncodeExact(t *testing.T) {
	plain := Endpoint{Listener: "PLAINTEXT", SecurityProtocol: Plaintext, Host: "kafka", Port: 9092}
	host := Endpoint{Listener: "PLAINTEXT_HOST", SecurityProtocol: Plaintext, Host: "localhost", Port: 29092}
	// AdminZkClientTest's testTopicCreationInZK assignment.
	twelve := [][]int32{{0, 1, 2}, {1, 2, 3}, {2, 3, 4}, {3, 4, 0}, {4, 0, 1}, {0, 2, 3}, {1, 3, 4}, {2, 4, 0}, {3, 0, 1}, {4, 1, 2}, {1, 2, 3}, {1, 3, 4}}
	cases := []struct {
		name string
		got  []byte
		want string
	}{
		{"cluster id", EncodeClusterID("0-qO5c0cSx6Xr_0aaXdpZg"),
			`{"version":"1","id":"0-qO5c0cSx6Xr_0aaXdpZg"}`},
		{"controller", EncodeController(Controller{BrokerID: 1, Timestamp: 1689018188126, KRaftControllerEpoch: NoKRaftControllerEpoch}),
			`{"version":2,"brokerid":1,"timestamp":"1689018188126","kraftControllerEpoch":-1}`},
		{"controller epoch", EncodeControllerEpoch(1), `1`},
		{"controller epoch 0", EncodeControllerEpoch(InitialControllerEpoch), `0`},
		{"broker", mustBroker(t, BrokerRegistration{ID: 1, JMXPort: NoJMXPort, Timestamp: 1724097127252,
			Endpoints: []Endpoint{{Listener: "PLAINTEXT", SecurityProtocol: Plaintext, Host: "192.168.1.14", Port: 9092}}}),
			`{"features":{},"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},"endpoints":["PLAINTEXT://192.168.1.14:9092"],"jmx_port":-1,"port":9092,"host":"192.168.1.14","version":5,"timestamp":"1724097127252"}`},
		{"broker two listeners", mustBroker(t, BrokerRegistration{ID: 1, JMXPort: -1, Timestamp: 1736198272985, Endpoints: []Endpoint{plain, host}}),
			`{"features":{},"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT","PLAINTEXT_HOST":"PLAINTEXT"},"endpoints":["PLAINTEXT://kafka:9092","PLAINTEXT_HOST://localhost:29092"],"jmx_port":-1,"port":9092,"host":"kafka","version":5,"timestamp":"1736198272985"}`},
		{"broker rack", mustBroker(t, BrokerRegistration{ID: 1, JMXPort: -1, Timestamp: 5, Rack: rack("r1"), Endpoints: []Endpoint{plain}}),
			`{"features":{},"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},"endpoints":["PLAINTEXT://kafka:9092"],"rack":"r1","jmx_port":-1,"port":9092,"host":"kafka","version":5,"timestamp":"5"}`},
		{"broker no plaintext", mustBroker(t, BrokerRegistration{ID: 1, JMXPort: 9999, Timestamp: 5,
			Endpoints: []Endpoint{{Listener: "CLIENT", SecurityProtocol: SSL, Host: "::1", Port: 9093}}}),
			`{"features":{},"listener_security_protocol_map":{"CLIENT":"SSL"},"endpoints":["CLIENT://[::1]:9093"],"jmx_port":9999,"port":-1,"host":null,"version":5,"timestamp":"5"}`},
		{"broker features", mustBroker(t, BrokerRegistration{ID: 1, JMXPort: -1, Endpoints: []Endpoint{plain},
			Features: map[string]VersionRange{"z": {1, 2}, "a": {0, 3}}}),
			`{"features":{"a":{"min_version":0,"max_version":3},"z":{"min_version":1,"max_version":2}},"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},"endpoints":["PLAINTEXT://kafka:9092"],"jmx_port":-1,"port":9092,"host":"kafka","version":5,"timestamp":"0"}`},
		{"topic", EncodeTopic(TopicAssignment{ID: mustTopicID(t, "cMr3GpVESX2L3byPGf93lQ"), Replicas: [][]int32{{2, 3, 1}, {3, 1, 2}, {1, 2, 3}}}),
			`{"partitions":{"0":[2,3,1],"1":[3,1,2],"2":[1,2,3]},"topic_id":"cMr3GpVESX2L3byPGf93lQ","adding_replicas":{},"removing_replicas":{},"version":3}`},
		{"topic without id, 12 partitions in Scala's hash order", EncodeTopic(TopicAssignment{Replicas: twelve}),
			`{"partitions":{"11":[1,3,4],"0":[0,1,2],"1":[1,2,3],"2":[2,3,4],"3":[3,4,0],"4":[4,0,1],"5":[0,2,3],"6":[1,3,4],"7":[2,4,0],"8":[3,0,1],"9":[4,1,2],"10":[1,2,3]},"adding_replicas":{},"removing_replicas":{},"version":3}`},
		{"topic reassigning", EncodeTopic(TopicAssignment{Replicas: [][]int32{{1, 2, 3}, {2}}, Adding: map[int32][]int32{0: {3}, 1: {}}, Removing: map[int32][]int32{0: {1}}}),
			`{"partitions":{"0":[1,2,3],"1":[2]},"adding_replicas":{"0":[3]},"removing_replicas":{"0":[1]},"version":3}`},
		{"partition state", EncodePartitionState(PartitionState{Leader: 2, LeaderEpoch: 0, ISR: []int32{2, 3, 1}, ControllerEpoch: 1}),
			`{"controller_epoch":1,"leader":2,"version":1,"leader_epoch":0,"isr":[2,3,1]}`},
		{"partition state recovering", EncodePartitionState(PartitionState{Leader: 2, LeaderEpoch: 7, ISR: []int32{2}, ControllerEpoch: 3, LeaderRecoveryState: Recovering}),
			`{"controller_epoch":3,"leader":2,"version":1,"leader_recovery_state":1,"leader_epoch":7,"isr":[2]}`},
		{"partition state offline", EncodePartitionState(PartitionState{Leader: NoLeader, LeaderEpoch: 4, ControllerEpoch: 6}),
			`{"controller_epoch":6,"leader":-1,"version":1,"leader_epoch":4,"isr":[]}`},
		{"config empty", EncodeConfig(nil), `{"version":1,"config":{}}`},
		{"config", EncodeConfig(map[string]string{"retention.ms": "86400000", "cleanup.policy": "compact", "x": "<&>"}),
			`{"version":1,"config":{"cleanup.policy":"compact","retention.ms":"86400000","x":"<&>"}}`},
		{"config change", EncodeConfigChange(ConfigChange{ConfigBrokers, "1"}), `{"version":2,"entity_path":"brokers/1"}`},
		{"config change default", EncodeConfigChange(ConfigChange{ConfigBrokers, DefaultEntity}), `{"version":2,"entity_path":"brokers/<default>"}`},
		{"producer id block", EncodeProducerIDBlock(ProducerIDBlock{Broker: 1, First: 0, Last: 999}),
			`{"version":1,"broker":1,"block_start":"0","block_end":"999"}`},
		{"reassignment", EncodeReassignment([]PartitionReassignment{{"foo", 0, []int32{1, 2}}}),
			`{"version":1,"partitions":[{"topic":"foo","partition":0,"replicas":[1,2]}]}`},
		{"reassignment sorted", EncodeReassignment([]PartitionReassignment{{"foo", 1, []int32{3}}, {"bar", 0, nil}, {"foo", 0, []int32{1}}}),
			`{"version":1,"partitions":[{"topic":"bar","partition":0,"replicas":[]},{"topic":"foo","partition":0,"replicas":[1]},{"topic":"foo","partition":1,"replicas":[3]}]}`},
	}
	for _, c := range cases {
		if string(c.got) != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, c.got, c.want)
		}
	}
}

func TestScalaHashOrder(t *testing.T) {
	keys := func(n int) []string {
		var ks []string
		for i := n - 1; i >= 0; i-- { // insertion order must not matter
			ks = append(ks, fmt.Sprint(i))
		}
		return ks
	}
	cases := []struct {
		n    int
		want string
	}{
		{1, "0"},
		{11, "0 1 2 3 4 5 6 7 8 9 10"},          // 16 buckets
		{12, "11 0 1 2 3 4 5 6 7 8 9 10"},       // 32 buckets (a real Kafka 3.9 topic znode)
		{14, "11 12 13 0 1 2 3 4 5 6 7 8 9 10"}, // 32 buckets
		{24, "22 23 10 11 12 13 14 15 16 17 18 19 0 1 2 3 4 5 6 7 8 9 20 21"}, // 64 buckets
	}
	for _, c := range cases {
		if got := strings.Join(scalaHashOrder(keys(c.n)), " "); got != c.want {
			t.Errorf("%d keys: got %s, want %s", c.n, got, c.want)
		}
	}
	// 50 partitions (__consumer_offsets): 128 buckets; "44" hashes to
	// 1664 = 13·128 and leads, "43" (1663) closes.
	got := scalaHashOrder(keys(50))
	if len(got) != 50 || got[0] != "44" || got[49] != "43" {
		t.Errorf("50 keys: %v", got)
	}
	// 100 keys: 256 buckets, where "10" (hash 1567) and "98" (1823) share
	// bucket 31, "11" and "99" bucket 32; a bucket lists increasing hashes.
	got = scalaHashOrder(keys(100))
	at := func(k string) int { return slices.Index(got, k) }
	if at("98") != at("10")+1 || at("99") != at("11")+1 || at("11") != at("98")+1 {
		t.Errorf("100 keys: %v", got)
	}
}

func TestDecodeBroker(t *testing.T) {
	cases := []struct {
		name string
		json string
		want BrokerRegistration
	}{
		// Kafka's BrokerEndPointTest.
		{"future version", `{
      "foo":"bar",
      "version":100,
      "host":"localhost",
      "port":9092,
      "jmx_port":9999,
      "timestamp":"1416974968782",
      "endpoints":["SSL://localhost:9093"]
    }`, BrokerRegistration{ID: 1, Version: 100, JMXPort: 9999, Timestamp: 1416974968782,
			Endpoints: []Endpoint{{"SSL", SSL, "localhost", 9093}}}},
		{"v1", `{"jmx_port":-1,"timestamp":"1420485325400","host":"172.16.8.243","version":1,"port":9091}`,
			BrokerRegistration{ID: 1, Version: 1, JMXPort: -1, Timestamp: 1420485325400,
				Endpoints: []Endpoint{{"PLAINTEXT", Plaintext, "172.16.8.243", 9091}}}},
		{"v2", `{"version":2,"host":"localhost","port":9092,"jmx_port":9999,"timestamp":"1416974968782","endpoints":["PLAINTEXT://localhost:9092"]}`,
			BrokerRegistration{ID: 1, Version: 2, JMXPort: 9999, Timestamp: 1416974968782,
				Endpoints: []Endpoint{{"PLAINTEXT", Plaintext, "localhost", 9092}}}},
		{"v3", `{"version":3,"host":"localhost","port":9092,"jmx_port":9999,"timestamp":"2233345666",
      "endpoints":["PLAINTEXT://host1:9092", "SSL://host1:9093"],"rack":"dc1"}`,
			BrokerRegistration{ID: 1, Version: 3, JMXPort: 9999, Timestamp: 2233345666, Rack: rack("dc1"),
				Endpoints: []Endpoint{{"PLAINTEXT", Plaintext, "host1", 9092}, {"SSL", SSL, "host1", 9093}}}},
		{"v4 null rack", `{"version":4,"host":"localhost","port":9092,"jmx_port":9999,"timestamp":"2233345666",
      "endpoints":["CLIENT://host1:9092", "REPLICATION://host1:9093"],
      "listener_security_protocol_map":{"CLIENT":"SSL", "REPLICATION":"PLAINTEXT"},"rack":null}`,
			BrokerRegistration{ID: 1, Version: 4, JMXPort: 9999, Timestamp: 2233345666,
				Endpoints: []Endpoint{{"CLIENT", SSL, "host1", 9092}, {"REPLICATION", Plaintext, "host1", 9093}}}},
		{"v5 features", `{"version":5,"host":"localhost","port":9092,"jmx_port":9999,"timestamp":"2233345666",
      "endpoints":["CLIENT://host1:9092", "REPLICATION://host1:9093"],
      "listener_security_protocol_map":{"CLIENT":"SSL", "REPLICATION":"PLAINTEXT"},"rack":"dc1",
      "features": {"feature1": {"min_version": 1, "max_version": 2}, "feature2": {"min_version": 2, "first_active_version": 3, "max_version": 4}}}`,
			BrokerRegistration{ID: 1, Version: 5, JMXPort: 9999, Timestamp: 2233345666, Rack: rack("dc1"),
				Endpoints: []Endpoint{{"CLIENT", SSL, "host1", 9092}, {"REPLICATION", Plaintext, "host1", 9093}},
				Features:  map[string]VersionRange{"feature1": {1, 2}, "feature2": {2, 4}}}},
		// Registrations as Kafka 2.x brokers wrote them (zookeeper-shell output).
		{"2.x v4, no plaintext", `{"listener_security_protocol_map":{"SASL_SSL":"SASL_SSL","SSL":"SSL"},"endpoints":["SASL_SSL://my-broker.host:9193","SSL://my-broker.host:9093"],"rack":"us-east-1d","jmx_port":9999,"host":null,"timestamp":"1542127633364","port":-1,"version":4}`,
			BrokerRegistration{ID: 1, Version: 4, JMXPort: 9999, Timestamp: 1542127633364, Rack: rack("us-east-1d"),
				Endpoints: []Endpoint{{"SASL_SSL", SASLSSL, "my-broker.host", 9193}, {"SSL", SSL, "my-broker.host", 9093}}}},
		{"3.9 v5", `{"features":{},"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT","PLAINTEXT_HOST":"PLAINTEXT"},"endpoints":["PLAINTEXT://kafka:9092","PLAINTEXT_HOST://localhost:29092"],"jmx_port":-1,"port":9092,"host":"kafka","version":5,"timestamp":"1736198272985"}`,
			BrokerRegistration{ID: 1, Version: 5, JMXPort: -1, Timestamp: 1736198272985,
				Endpoints: []Endpoint{{"PLAINTEXT", Plaintext, "kafka", 9092}, {"PLAINTEXT_HOST", Plaintext, "localhost", 29092}}}},
		{"lower-case listener, ipv6, no host", `{"version":4,"jmx_port":-1,"endpoints":["internal://[fe80::1%eth0]:9092","EXTERNAL://:9093"],"listener_security_protocol_map":{"INTERNAL":"ssl","EXTERNAL":"PLAINTEXT"}}`,
			BrokerRegistration{ID: 1, Version: 4, JMXPort: -1,
				Endpoints: []Endpoint{{"INTERNAL", SSL, "fe80::1%eth0", 9092}, {"EXTERNAL", Plaintext, "", 9093}}}},
	}
	for _, c := range cases {
		got, err := DecodeBroker(1, []byte(c.json))
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", c.name, got, c.want)
		}
	}
}

func TestDecodeOlderPayloads(t *testing.T) {
	// Topics as Kafka 1.x (version 1) and 2.4-2.7 (version 2) wrote them.
	v1, err := DecodeTopic("t", []byte(`{"version":1,"partitions":{"1":[101,103],"0":[103,102]}}`))
	if err != nil || v1.ID != (engine.TopicID{}) || !reflect.DeepEqual(v1.Replicas, [][]int32{{103, 102}, {101, 103}}) || v1.Adding != nil {
		t.Errorf("topic v1: %+v, %v", v1, err)
	}
	v2, err := DecodeTopic("t", []byte(`{"version":2,"partitions":{"2":[3,2],"1":[2,1],"0":[1,3],"3":[1,2]},"adding_replicas":{},"removing_replicas":{}}`))
	if err != nil || !reflect.DeepEqual(v2.Replicas, [][]int32{{1, 3}, {2, 1}, {3, 2}, {1, 2}}) || v2.Adding != nil || v2.Removing != nil {
		t.Errorf("topic v2: %+v, %v", v2, err)
	}
	v3, err := DecodeTopic("t", []byte(`{"partitions":{"0":[2,3,1]},"topic_id":"cMr3GpVESX2L3byPGf93lQ","adding_replicas":{"0":[1]},"removing_replicas":{},"version":3}`))
	if err != nil || v3.ID != mustTopicID(t, "cMr3GpVESX2L3byPGf93lQ") || !reflect.DeepEqual(v3.Adding, map[int32][]int32{0: {1}}) {
		t.Errorf("topic v3: %+v, %v", v3, err)
	}
	padded, err := DecodeTopic("t", []byte(`{"partitions":{"0":[1]},"topic_id":"cMr3GpVESX2L3byPGf93lQ=="}`))
	if err != nil || padded.ID != v3.ID {
		t.Errorf("padded topic id: %+v, %v", padded, err)
	}

	c, err := DecodeController([]byte(`{"version":1,"brokerid":0,"timestamp":"1535943857541"}`))
	if err != nil || c != (Controller{BrokerID: 0, Timestamp: 1535943857541, KRaftControllerEpoch: -1}) {
		t.Errorf("controller v1: %+v, %v", c, err)
	}
	c, err = DecodeController([]byte(`{"version":2,"brokerid":3000,"timestamp":"7","kraftControllerEpoch":12}`))
	if err != nil || c != (Controller{BrokerID: 3000, Timestamp: 7, KRaftControllerEpoch: 12}) {
		t.Errorf("controller held by KRaft: %+v, %v", c, err)
	}

	ch, err := DecodeConfigChange("config_change_0000000003", []byte(`{"version" : 1, "entity_type":"topics", "entity_name" : "orders"}`))
	if err != nil || ch != (ConfigChange{ConfigTopics, "orders"}) {
		t.Errorf("config change v1: %+v, %v", ch, err)
	}
	ch, err = DecodeConfigChange("config_change_0000000004", []byte(`{"version":2,"entity_path":"users/alice/clients/app"}`))
	if err != nil || ch != (ConfigChange{ConfigUsers, "alice/clients/app"}) {
		t.Errorf("config change v2, nested: %+v, %v", ch, err)
	}

	s, err := DecodePartitionState("t", 0, []byte(`{"controller_epoch":33,"leader":102,"version":1,"leader_epoch":8,"isr":[102,103]}`))
	if err != nil || !reflect.DeepEqual(s, PartitionState{Leader: 102, LeaderEpoch: 8, ISR: []int32{102, 103}, ControllerEpoch: 33}) {
		t.Errorf("partition state: %+v, %v", s, err)
	}

	for _, data := range []string{"", "  ", `{"version":1}`, `{"version":1,"config":{}}`} {
		cfg, err := DecodeConfig(ConfigTopics, "t", []byte(data))
		if err != nil || len(cfg) != 0 {
			t.Errorf("config %q: %v, %v", data, cfg, err)
		}
	}

	if _, ok, err := DecodeProducerIDBlock(nil); ok || err != nil {
		t.Errorf("empty producer id block: %v, %v", ok, err)
	}
	b, ok, err := DecodeProducerIDBlock([]byte(`{"version":1,"broker":2,"block_start":"1000","block_end":"1999"}`))
	if !ok || err != nil || b != (ProducerIDBlock{2, 1000, 1999}) {
		t.Errorf("producer id block: %+v, %v, %v", b, ok, err)
	}

	id, err := DecodeClusterID([]byte(`{"version":"1","id":"Sfr7YvlkRHSHrmSrwq9mug"}`))
	if err != nil || id != "Sfr7YvlkRHSHrmSrwq9mug" {
		t.Errorf("cluster id: %q, %v", id, err)
	}
	e, err := DecodeControllerEpoch([]byte("17"))
	if err != nil || e != 17 {
		t.Errorf("controller epoch: %d, %v", e, err)
	}
	rs, err := DecodeReassignment([]byte(`{"version":1,"partitions":[{"topic":"foo","partition":0,"replicas":[1,2]}]}`))
	if err != nil || !reflect.DeepEqual(rs, []PartitionReassignment{{"foo", 0, []int32{1, 2}}}) {
		t.Errorf("reassignment: %+v, %v", rs, err)
	}
}

// TestDecodeRefusesGarbage checks that bad payloads are ErrBadZnode errors
// naming the znode.
func TestDecodeRefusesGarbage(t *testing.T) {
	broker := func(s string) error { _, err := DecodeBroker(7, []byte(s)); return err }
	topic := func(s string) error { _, err := DecodeTopic("orders", []byte(s)); return err }
	state := func(s string) error { _, err := DecodePartitionState("orders", 3, []byte(s)); return err }
	config := func(s string) error { _, err := DecodeConfig(ConfigTopics, "orders", []byte(s)); return err }
	change := func(s string) error { _, err := DecodeConfigChange("config_change_0000000009", []byte(s)); return err }
	controller := func(s string) error { _, err := DecodeController([]byte(s)); return err }
	epoch := func(s string) error { _, err := DecodeControllerEpoch([]byte(s)); return err }
	cluster := func(s string) error { _, err := DecodeClusterID([]byte(s)); return err }
	pid := func(s string) error { _, _, err := DecodeProducerIDBlock([]byte(s)); return err }
	reassign := func(s string) error { _, err := DecodeReassignment([]byte(s)); return err }
	const okBroker = `"version":5,"jmx_port":-1,"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"}`
	cases := []struct {
		decode func(string) error
		path   string
		data   string
	}{
		{broker, "/brokers/ids/7", ``},
		{broker, "/brokers/ids/7", `not json`},
		{broker, "/brokers/ids/7", `[1]`},
		{broker, "/brokers/ids/7", `null`},
		{broker, "/brokers/ids/7", `{"version":5,"jmx_port":-1}`},
		{broker, "/brokers/ids/7", `{"jmx_port":-1,"endpoints":["PLAINTEXT://h:1"]}`},
		{broker, "/brokers/ids/7", `{"version":0,"jmx_port":-1,"endpoints":["PLAINTEXT://h:1"]}`},
		{broker, "/brokers/ids/7", `{"version":5,"endpoints":["PLAINTEXT://h:1"]}`},
		{broker, "/brokers/ids/7", `{"version":1,"jmx_port":-1,"host":"h"}`},
		{broker, "/brokers/ids/7", `{` + okBroker + `,"endpoints":[]}`},
		{broker, "/brokers/ids/7", `{` + okBroker + `,"endpoints":["PLAINTEXT:/h:1"]}`},
		{broker, "/brokers/ids/7", `{` + okBroker + `,"endpoints":["PLAINTEXT://h"]}`},
		{broker, "/brokers/ids/7", `{` + okBroker + `,"endpoints":["PLAINTEXT://h:x"]}`},
		{broker, "/brokers/ids/7", `{` + okBroker + `,"endpoints":["PLAINTEXT://h:70000"]}`},
		{broker, "/brokers/ids/7", `{` + okBroker + `,"endpoints":["PLAINTEXT://h/x:1"]}`},
		{broker, "/brokers/ids/7", `{` + okBroker + `,"endpoints":["OTHER://h:1"]}`},
		{broker, "/brokers/ids/7", `{` + okBroker + `,"endpoints":["PLAINTEXT://h:1","PLAINTEXT://g:2"]}`},
		{broker, "/brokers/ids/7", `{"version":5,"jmx_port":-1,"listener_security_protocol_map":{"PLAINTEXT":"TLS"},"endpoints":["PLAINTEXT://h:1"]}`},
		{broker, "/brokers/ids/7", `{` + okBroker + `,"endpoints":["PLAINTEXT://h:1"],"rack":5}`},
		{broker, "/brokers/ids/7", `{` + okBroker + `,"endpoints":["PLAINTEXT://h:1"],"timestamp":"soon"}`},
		{broker, "/brokers/ids/7", `{` + okBroker + `,"endpoints":["PLAINTEXT://h:1"],"features":{"f":{"min_version":3,"max_version":2}}}`},
		{broker, "/brokers/ids/7", `{` + okBroker + `,"endpoints":["PLAINTEXT://h:1"],"features":{"f":{"max_version":2}}}`},
		{broker, "/brokers/ids/7", `{"version":5.5,"jmx_port":-1,"endpoints":["PLAINTEXT://h:1"]}`},
		{topic, "/brokers/topics/orders", ``},
		{topic, "/brokers/topics/orders", `{"version":3}`},
		{topic, "/brokers/topics/orders", `{"partitions":{}}`},
		{topic, "/brokers/topics/orders", `{"partitions":{"1":[1]}}`},
		{topic, "/brokers/topics/orders", `{"partitions":{"0":[1],"2":[1]}}`},
		{topic, "/brokers/topics/orders", `{"partitions":{"-1":[1]}}`},
		{topic, "/brokers/topics/orders", `{"partitions":{"x":[1]}}`},
		{topic, "/brokers/topics/orders", `{"partitions":{"0":[]}}`},
		{topic, "/brokers/topics/orders", `{"partitions":{"0":null}}`},
		{topic, "/brokers/topics/orders", `{"partitions":{"0":[1,1]}}`},
		{topic, "/brokers/topics/orders", `{"partitions":{"0":[-1]}}`},
		{topic, "/brokers/topics/orders", `{"partitions":{"0":["1"]}}`},
		{topic, "/brokers/topics/orders", `{"partitions":{"0":[1]},"topic_id":"short"}`},
		{topic, "/brokers/topics/orders", `{"partitions":{"0":[1]},"topic_id":"cMr3GpVESX2L3byPGf93lQcMr3"}`},
		{topic, "/brokers/topics/orders", `{"partitions":{"0":[1]},"adding_replicas":{"1":[2]}}`},
		{topic, "/brokers/topics/orders", `{"partitions":{"0":[1]},"removing_replicas":{"0":[]}}`},
		{topic, "/brokers/topics/orders", `{"partitions":{"0":[1]}} trailing`},
		{state, "/brokers/topics/orders/partitions/3/state", `{"controller_epoch":1,"leader":1,"version":1,"isr":[1]}`},
		{state, "/brokers/topics/orders/partitions/3/state", `{"controller_epoch":1,"leader":1,"leader_epoch":0}`},
		{state, "/brokers/topics/orders/partitions/3/state", `{"controller_epoch":1,"leader":-2,"leader_epoch":0,"isr":[1]}`},
		{state, "/brokers/topics/orders/partitions/3/state", `{"controller_epoch":-1,"leader":1,"leader_epoch":0,"isr":[1]}`},
		{state, "/brokers/topics/orders/partitions/3/state", `{"controller_epoch":1,"leader":1,"leader_epoch":0,"isr":[1,1]}`},
		{state, "/brokers/topics/orders/partitions/3/state", `{"controller_epoch":1,"leader":1,"leader_epoch":0,"isr":[1],"leader_recovery_state":2}`},
		{state, "/brokers/topics/orders/partitions/3/state", `{"controller_epoch":1,"leader":1,"leader_epoch":3000000000,"isr":[1]}`},
		{config, "/config/topics/orders", `x`},
		{config, "/config/topics/orders", `{"version":1,"config":{"a":1}}`},
		{config, "/config/topics/orders", `{"version":1,"config":{"a":null}}`},
		{config, "/config/topics/orders", `{"version":1,"config":[]}`},
		{change, "/config/changes/config_change_0000000009", `orders`},
		{change, "/config/changes/config_change_0000000009", `{"entity_path":"topics/orders"}`},
		{change, "/config/changes/config_change_0000000009", `{"version":3,"entity_path":"topics/orders"}`},
		{change, "/config/changes/config_change_0000000009", `{"version":2}`},
		{change, "/config/changes/config_change_0000000009", `{"version":2,"entity_path":"orders"}`},
		{change, "/config/changes/config_change_0000000009", `{"version":2,"entity_path":"groups/g"}`},
		{change, "/config/changes/config_change_0000000009", `{"version":2,"entity_path":"topics/"}`},
		{change, "/config/changes/config_change_0000000009", `{"version":1,"entity_type":"brokers","entity_name":"1"}`},
		{change, "/config/changes/config_change_0000000009", `{"version":1,"entity_type":"topics"}`},
		{controller, "/controller", `{"version":2,"timestamp":"1"}`},
		{controller, "/controller", `{"version":2,"brokerid":"1"}`},
		{controller, "/controller", `1`},
		{epoch, "/controller_epoch", ``},
		{epoch, "/controller_epoch", ` 1`},
		{epoch, "/controller_epoch", `-1`},
		{epoch, "/controller_epoch", `{"epoch":1}`},
		{epoch, "/controller_epoch", `99999999999`},
		{cluster, "/cluster/id", `{"version":"1"}`},
		{cluster, "/cluster/id", `{"version":"1","id":""}`},
		{cluster, "/cluster/id", `{"version":"1","id":7}`},
		{pid, "/latest_producer_id_block", `{"version":1,"broker":1,"block_start":"0"}`},
		{pid, "/latest_producer_id_block", `{"version":1,"broker":1,"block_start":0,"block_end":999}`},
		{pid, "/latest_producer_id_block", `{"version":1,"broker":1,"block_start":"10","block_end":"9"}`},
		{pid, "/latest_producer_id_block", `{"version":1,"broker":1,"block_start":"-5","block_end":"9"}`},
		{pid, "/latest_producer_id_block", `{"version":1,"broker":1,"block_start":"0","block_end":"9999999999"}`},
		{reassign, "/admin/reassign_partitions", `{"version":1}`},
		{reassign, "/admin/reassign_partitions", `{"version":1,"partitions":[{"topic":"foo","replicas":[1]}]}`},
		{reassign, "/admin/reassign_partitions", `{"version":1,"partitions":[{"topic":"foo","partition":0,"replicas":[]}]}`},
		{reassign, "/admin/reassign_partitions", `{"version":1,"partitions":[{"topic":"foo","partition":0,"replicas":[1]},{"topic":"foo","partition":0,"replicas":[2]}]}`},
	}
	for _, c := range cases {
		err := c.decode(c.data)
		if !errors.Is(err, ErrBadZnode) || !strings.Contains(err.Error(), c.path+":") {
			t.Errorf("%s %q: got %v, want an ErrBadZnode naming the path", c.path, c.data, err)
		}
	}
}

func TestPaths(t *testing.T) {
	cases := []struct{ got, want string }{
		{BrokerPath(3), "/brokers/ids/3"},
		{TopicPath("orders"), "/brokers/topics/orders"},
		{PartitionsPath("orders"), "/brokers/topics/orders/partitions"},
		{PartitionPath("orders", 12), "/brokers/topics/orders/partitions/12"},
		{PartitionStatePath("orders", 12), "/brokers/topics/orders/partitions/12/state"},
		{ConfigTypePath(ConfigBrokers), "/config/brokers"},
		{ConfigEntityPath(ConfigBrokers, DefaultEntity), "/config/brokers/<default>"},
		{ConfigEntityPath(ConfigTopics, "orders"), "/config/topics/orders"},
		{DeleteTopicPath("orders"), "/admin/delete_topics/orders"},
		{ConfigChangeCreatePath, "/config/changes/config_change_"},
		{ConfigChangeName(12), "config_change_0000000012"},
		{ConfigChangeName(-5), "config_change_-000000005"},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("got %s, want %s", c.got, c.want)
		}
	}
	if len(PersistentPaths) != 14 || PersistentPaths[0] != "/consumers" || PersistentPaths[13] != "/config/ips" {
		t.Errorf("PersistentPaths: %v", PersistentPaths)
	}
	for _, seq := range []int64{0, 1, 12, 2147483647, -5, -2147483648} {
		if got, err := ConfigChangeSeq(ConfigChangeName(seq)); err != nil || got != seq {
			t.Errorf("ConfigChangeSeq(%s) = %d, %v", ConfigChangeName(seq), got, err)
		}
	}
	for _, name := range []string{"config_change_", "config_change_12", "isr_change_0000000001", "config_change_000000000x", "config_change_00000000000000000001"} {
		if _, err := ConfigChangeSeq(name); !errors.Is(err, ErrBadZnode) {
			t.Errorf("ConfigChangeSeq(%q): %v", name, err)
		}
	}
	if id, err := ParseBrokerID("1001"); err != nil || id != 1001 {
		t.Errorf("ParseBrokerID: %d, %v", id, err)
	}
	for _, name := range []string{"", "x", "-1", "4294967296"} {
		if _, err := ParseBrokerID(name); !errors.Is(err, ErrBadZnode) {
			t.Errorf("ParseBrokerID(%q): %v", name, err)
		}
	}
	if p, err := ParsePartition("t", "7"); err != nil || p != 7 {
		t.Errorf("ParsePartition: %d, %v", p, err)
	}
	if _, err := ParsePartition("t", "-7"); err == nil || !strings.Contains(err.Error(), "/brokers/topics/t/partitions/-7") {
		t.Errorf("ParsePartition(-7): %v", err)
	}
}

func TestEncodeBrokerRefusesBadEndpoints(t *testing.T) {
	ok := Endpoint{Listener: "PLAINTEXT", SecurityProtocol: Plaintext, Host: "h", Port: 9092}
	for _, es := range [][]Endpoint{
		nil,
		{ok, ok},
		{{Listener: "", SecurityProtocol: Plaintext, Port: 1}},
		{{Listener: "A", SecurityProtocol: "TLS", Port: 1}},
		{{Listener: "A", SecurityProtocol: SSL, Port: 65536}},
		{{Listener: "A:B", SecurityProtocol: SSL, Port: 1}},
	} {
		if _, err := EncodeBroker(BrokerRegistration{ID: 4, Endpoints: es}); !errors.Is(err, ErrBadZnode) || !strings.Contains(err.Error(), "/brokers/ids/4") {
			t.Errorf("%+v: %v", es, err)
		}
	}
}

// Random values for the round-trip properties.

func randIDs(r *rand.Rand, max int) []int32 {
	perm := r.Perm(20)
	ids := make([]int32, 1+r.IntN(max))
	for i := range ids {
		ids[i] = int32(perm[i] * (1 + r.IntN(500)))
	}
	// Perm values times a factor may collide; make them distinct.
	seen := map[int32]bool{}
	for i := range ids {
		for seen[ids[i]] {
			ids[i]++
		}
		seen[ids[i]] = true
	}
	return ids
}

func randName(r *rand.Rand) string {
	const chars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-"
	b := make([]byte, 1+r.IntN(30))
	for i := range b {
		b[i] = chars[r.IntN(len(chars))]
	}
	return string(b)
}

func randTopic(r *rand.Rand) TopicAssignment {
	var t TopicAssignment
	if r.IntN(4) > 0 {
		t.ID = engine.NewTopicID()
	}
	t.Replicas = make([][]int32, 1+r.IntN(70))
	for p := range t.Replicas {
		t.Replicas[p] = randIDs(r, 5)
	}
	if r.IntN(3) == 0 {
		t.Adding = map[int32][]int32{int32(r.IntN(len(t.Replicas))): randIDs(r, 2)}
		t.Removing = map[int32][]int32{int32(r.IntN(len(t.Replicas))): randIDs(r, 2)}
	}
	return t
}

func randBroker(r *rand.Rand) BrokerRegistration {
	protocols := []string{Plaintext, SSL, SASLPlaintext, SASLSSL}
	hosts := []string{"localhost", "10.0.0.7", "::1", "b-1.example.com", ""}
	b := BrokerRegistration{ID: int32(r.IntN(1 << 20)), JMXPort: int32(r.IntN(3) - 1), Timestamp: r.Int64(), Version: BrokerVersion}
	for i, n := 0, 1+r.IntN(4); i < n; i++ {
		b.Endpoints = append(b.Endpoints, Endpoint{
			Listener:         fmt.Sprintf("L%d_%s", i, strings.ToUpper(randName(r)[:1])),
			SecurityProtocol: protocols[r.IntN(len(protocols))],
			Host:             hosts[r.IntN(len(hosts))],
			Port:             int32(r.IntN(65536)),
		})
	}
	if r.IntN(2) == 0 {
		b.Rack = rack(randName(r))
	}
	if r.IntN(3) == 0 {
		b.Features = map[string]VersionRange{randName(r): {1, int16(1 + r.IntN(20))}}
	}
	return b
}

func randState(r *rand.Rand) PartitionState {
	s := PartitionState{Leader: int32(r.IntN(10) - 1), LeaderEpoch: r.Int32(), ControllerEpoch: r.Int32(), ISR: []int32{}}
	if r.IntN(5) > 0 {
		s.ISR = randIDs(r, 4)
	}
	if r.IntN(4) == 0 {
		s.LeaderRecoveryState = Recovering
	}
	return s
}

// TestRoundTrip checks, over seeded random values, that every decoder
// returns what its encoder was given and that encoding is deterministic.
func TestRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 500; i++ {
		topic := randTopic(r)
		data := EncodeTopic(topic)
		got, err := DecodeTopic("t", data)
		if err != nil || !reflect.DeepEqual(got, topic) {
			t.Fatalf("topic %s:\n got %+v, %v\nwant %+v", data, got, err, topic)
		}
		if again := EncodeTopic(got); string(again) != string(data) {
			t.Fatalf("topic re-encoded differently:\n%s\n%s", data, again)
		}

		b := randBroker(r)
		data = mustBroker(t, b)
		gotB, err := DecodeBroker(b.ID, data)
		if err != nil || !reflect.DeepEqual(gotB, b) {
			t.Fatalf("broker %s:\n got %+v, %v\nwant %+v", data, gotB, err, b)
		}

		s := randState(r)
		data = EncodePartitionState(s)
		gotS, err := DecodePartitionState("t", 0, data)
		if err != nil || !reflect.DeepEqual(gotS, s) {
			t.Fatalf("state %s:\n got %+v, %v\nwant %+v", data, gotS, err, s)
		}

		cfg := map[string]string{}
		for j := r.IntN(5); j > 0; j-- {
			cfg[randName(r)] = randName(r) + "<&>\"\\ \u00e9"
		}
		gotC, err := DecodeConfig(ConfigTopics, "t", EncodeConfig(cfg))
		if err != nil || !reflect.DeepEqual(gotC, cfg) {
			t.Fatalf("config %v: %v, %v", cfg, gotC, err)
		}

		ch := ConfigChange{ConfigTypes[r.IntN(len(ConfigTypes))], randName(r)}
		if gotCh, err := DecodeConfigChange("config_change_0000000000", EncodeConfigChange(ch)); err != nil || gotCh != ch {
			t.Fatalf("config change %+v: %+v, %v", ch, gotCh, err)
		}

		c := Controller{BrokerID: r.Int32(), Timestamp: r.Int64(), KRaftControllerEpoch: int32(r.IntN(3) - 1)}
		if gotCt, err := DecodeController(EncodeController(c)); err != nil || gotCt != c {
			t.Fatalf("controller %+v: %+v, %v", c, gotCt, err)
		}

		epoch := r.Int32()
		if gotE, err := DecodeControllerEpoch(EncodeControllerEpoch(epoch)); err != nil || gotE != epoch {
			t.Fatalf("controller epoch %d: %d, %v", epoch, gotE, err)
		}

		first := r.Int64N(1 << 62)
		pb := ProducerIDBlock{Broker: r.Int32(), First: first, Last: first + ProducerIDBlockSize - 1}
		if gotP, ok, err := DecodeProducerIDBlock(EncodeProducerIDBlock(pb)); err != nil || !ok || gotP != pb {
			t.Fatalf("producer id block %+v: %+v, %v", pb, gotP, err)
		}

		var rs []PartitionReassignment
		for p := int32(0); p < int32(r.IntN(4)); p++ {
			rs = append(rs, PartitionReassignment{"topic", p, randIDs(r, 3)})
		}
		if gotR, err := DecodeReassignment(EncodeReassignment(rs)); err != nil || len(gotR) != len(rs) || len(rs) > 0 && !reflect.DeepEqual(gotR, rs) {
			t.Fatalf("reassignment %+v: %+v, %v", rs, gotR, err)
		}

		id := randName(r)
		if gotID, err := DecodeClusterID(EncodeClusterID(id)); err != nil || gotID != id {
			t.Fatalf("cluster id %q: %q, %v", id, gotID, err)
		}
	}
}

// FuzzDecode checks, for each payload kind, that whatever a decoder
// accepts encodes to a payload that decodes to the same value, and that
// every refusal is an ErrBadZnode.
func FuzzDecode(f *testing.F) {
	seeds := []string{
		`{"features":{},"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},"endpoints":["PLAINTEXT://localhost:9092"],"jmx_port":-1,"port":9092,"host":"localhost","version":5,"timestamp":"1"}`,
		`{"version":1,"host":"h","port":1,"jmx_port":-1}`,
		`{"partitions":{"0":[2,3,1],"1":[3,1,2]},"topic_id":"cMr3GpVESX2L3byPGf93lQ","adding_replicas":{"1":[3]},"removing_replicas":{},"version":3}`,
		`{"controller_epoch":1,"leader":2,"version":1,"leader_recovery_state":1,"leader_epoch":0,"isr":[2,3,1]}`,
		`{"version":1,"config":{"a":"b"}}`,
		`{"version":2,"entity_path":"topics/orders"}`,
		`{"version":1,"broker":1,"block_start":"0","block_end":"999"}`,
		`{"version":1,"partitions":[{"topic":"foo","partition":0,"replicas":[1,2]}]}`,
		`{"version":2,"brokerid":1,"timestamp":"1","kraftControllerEpoch":-1}`,
		`{"version":"1","id":"x"}`,
		`12`,
	}
	for kind := range 10 {
		for _, s := range seeds {
			f.Add(uint8(kind), []byte(s))
		}
	}
	f.Fuzz(func(t *testing.T, kind uint8, data []byte) {
		check := func(err error, same func() bool) {
			if err != nil {
				if !errors.Is(err, ErrBadZnode) {
					t.Fatalf("kind %d: %v is not ErrBadZnode", kind, err)
				}
				return
			}
			if !same() {
				t.Fatalf("kind %d: %q does not round-trip", kind, data)
			}
		}
		switch kind % 10 {
		case 0:
			b, err := DecodeBroker(1, data)
			check(err, func() bool {
				again, err := DecodeBroker(1, mustBroker(t, b))
				b.Version = BrokerVersion
				return err == nil && reflect.DeepEqual(again, b)
			})
		case 1:
			v, err := DecodeTopic("t", data)
			check(err, func() bool {
				again, err := DecodeTopic("t", EncodeTopic(v))
				return err == nil && reflect.DeepEqual(again, v)
			})
		case 2:
			v, err := DecodePartitionState("t", 0, data)
			check(err, func() bool {
				again, err := DecodePartitionState("t", 0, EncodePartitionState(v))
				return err == nil && reflect.DeepEqual(again, v)
			})
		case 3:
			v, err := DecodeConfig(ConfigTopics, "t", data)
			check(err, func() bool {
				again, err := DecodeConfig(ConfigTopics, "t", EncodeConfig(v))
				return err == nil && reflect.DeepEqual(again, v)
			})
		case 4:
			v, err := DecodeConfigChange("c", data)
			check(err, func() bool {
				again, err := DecodeConfigChange("c", EncodeConfigChange(v))
				return err == nil && again == v
			})
		case 5:
			v, ok, err := DecodeProducerIDBlock(data)
			check(err, func() bool {
				if !ok {
					return len(data) == 0
				}
				again, ok, err := DecodeProducerIDBlock(EncodeProducerIDBlock(v))
				return err == nil && ok && again == v
			})
		case 6:
			v, err := DecodeReassignment(data)
			check(err, func() bool {
				again, err := DecodeReassignment(EncodeReassignment(v))
				// The encoding sorts partitions.
				return err == nil && len(again) == len(v)
			})
		case 7:
			v, err := DecodeController(data)
			check(err, func() bool { again, err := DecodeController(EncodeController(v)); return err == nil && again == v })
		case 8:
			v, err := DecodeControllerEpoch(data)
			check(err, func() bool {
				again, err := DecodeControllerEpoch(EncodeControllerEpoch(v))
				return err == nil && again == v
			})
		case 9:
			v, err := DecodeClusterID(data)
			check(err, func() bool { again, err := DecodeClusterID(EncodeClusterID(v)); return err == nil && again == v })
		}
	})
}
