package reassign

import (
	"fmt"
	"strings"
	"testing"
)

// A reassignment prints as kafka-reassign-partitions.sh prints one, and
// parses back to itself, sorted.
func TestReassignmentJSONRoundTrip(t *testing.T) {
	parts := []Assignment{
		{Topic: "b", Partition: 0, Replicas: []int32{3}},
		{Topic: "a", Partition: 1, Replicas: []int32{2, 1}},
		{Topic: "a", Partition: 0, Replicas: []int32{1, 2}},
	}
	got := Format(parts)
	want := `{"version":1,"partitions":[{"topic":"a","partition":0,"replicas":[1,2],"log_dirs":["any","any"]},` +
		`{"topic":"a","partition":1,"replicas":[2,1],"log_dirs":["any","any"]},{"topic":"b","partition":0,"replicas":[3],"log_dirs":["any"]}]}`
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	back, err := ParseAssignments("plan.json", []byte(got))
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(back) != "[{a 0 [1 2]} {a 1 [2 1]} {b 0 [3]}]" {
		t.Fatalf("parsed back %v", back)
	}
	if got := Format(nil); got != `{"version":1,"partitions":[]}` {
		t.Fatalf("empty: %s", got)
	}
}

// Kafka's files parse: spaced out, no version, no log_dirs; replica
// lists the controller will refuse still parse (it answers per
// partition).
func TestReassignmentJSONAsKafkaWritesIt(t *testing.T) {
	data := `{
  "partitions": [
    {"topic": "orders", "partition": 1, "replicas": [4, 4]},
    {"topic": "orders", "partition": 0, "replicas": [1, 2], "log_dirs": ["any", "any"]}
  ]
}`
	got, err := ParseAssignments("f", []byte(data))
	if err != nil || fmt.Sprint(got) != "[{orders 0 [1 2]} {orders 1 [4 4]}]" {
		t.Fatalf("%v, %v", got, err)
	}
}

func TestReassignmentJSONErrors(t *testing.T) {
	for _, tc := range []struct{ data, want string }{
		{``, "plan.json: no JSON object"},
		{`{"version":1,"partitions":[`, "plan.json: no JSON object"},
		{"{\n  \"partitions\": [x]}", "plan.json:2:18: invalid character 'x'"},
		{`{"partitions":[{"topic":"a","partition":"0","replicas":[1]}]}`, "plan.json:1:43: partitions.partition: a JSON string where int32 belongs"},
		{`{"version":2,"partitions":[]}`, "plan.json: version 2 not supported (want 1)"},
		{`{"version":1}`, `plan.json: no "partitions" field`},
		{`{"partitions":[]}`, "plan.json: the partition reassignment list is empty"},
		{`{"partitions":[{"partition":0,"replicas":[1]}]}`, `plan.json: partitions[0]: no "topic"`},
		{`{"partitions":[{"topic":"a","replicas":[1]}]}`, `plan.json: partitions[0]: no "partition"`},
		{`{"partitions":[{"topic":"a","partition":0}]}`, `plan.json: partitions[0]: no "replicas"`},
		{`{"partitions":[{"topic":"a","partition":0,"replicas":[1,2],"log_dirs":["any"]}]}`, "plan.json: partitions[0]: 1 log_dirs for 2 replicas"},
		{`{"partitions":[{"topic":"a","partition":0,"replicas":[1],"log_dirs":["/d1"]}]}`, `plan.json: partitions[0]: log_dirs "/d1"`},
		{`{"partitions":[{"topic":"a","partition":0,"replicas":[1]},{"topic":"a","partition":0,"replicas":[2]}]}`, "plan.json: partitions given more than once: a-0"},
		{`{"partitions":[{"topic":"a","partition":0,"replicas":[1]}]} {}`, "plan.json: more after the JSON object"},
	} {
		_, err := ParseAssignments("plan.json", []byte(tc.data))
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %s…", tc.data, err, tc.want)
		}
	}
}

func TestTopicsToMoveJSON(t *testing.T) {
	got, err := ParseTopics("t.json", []byte(`{"topics": [{"topic": "b"}, {"topic": "a"}], "version": 1}`))
	if err != nil || fmt.Sprint(got) != "[a b]" {
		t.Fatalf("%v, %v", got, err)
	}
	for _, tc := range []struct{ data, want string }{
		{`{"version":1}`, `t.json: no topics in "topics"`},
		{`{"topics":[{"topic":"a"},{"topic":"a"}]}`, "t.json: topic a listed more than once"},
		{`{"topics":[{}]}`, `t.json: topics[0]: no "topic"`},
		{`{"topics":[{"topic":"a"}],"version":3}`, "t.json: version 3 not supported"},
	} {
		if _, err := ParseTopics("t.json", []byte(tc.data)); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %s…", tc.data, err, tc.want)
		}
	}
}

func TestBrokerList(t *testing.T) {
	if got, err := ParseBrokerList("1, 2,3"); err != nil || fmt.Sprint(got) != "[1 2 3]" {
		t.Fatalf("%v, %v", got, err)
	}
	for _, s := range []string{"", "1,,2", "1,x", "1,2,1", "-1"} {
		if _, err := ParseBrokerList(s); err == nil {
			t.Errorf("--broker-list %q parsed", s)
		}
	}
}
