package broker

import (
	"fmt"
	"testing"
	"time"

	"github.com/sluice-io/sluice/config"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// With controller_mutation_rate=0.5 and controller.quota.window.num=10 a
// client id's bucket holds 5 partitions and refills one every 2 s: of three
// 6-partition topics the first is taken (the bucket was not below zero;
// it goes to -1) and the others refused, the throttle being the 2 s to
// refill to zero.
func mutationQuotaBroker(t *testing.T, ids ...string) *testBroker {
	tb := startBroker(t, t.TempDir(), func(c *config.Config) {
		c.ClientQuotas = config.ClientQuotaConfig{ControllerWindowNum: 10}
	})
	for _, id := range ids {
		setQuota(t, tb.admin(t), clientEntity(id), "controller_mutation_rate", 0.5, false)
	}
	return tb
}

// rawClient is a raw connection with client id id.
func rawClient(t *testing.T, tb *testBroker, id string) *rawConn {
	rc := dialRaw(t, tb.addr)
	rc.fmt = kmsg.NewRequestFormatter(kmsg.FormatterClientID(id))
	return rc
}

func createTopicsReq(prefix string, n int, partitions int32) *kmsg.CreateTopicsRequest {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 10000
	for i := range n {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic = fmt.Sprintf("%s-%d", prefix, i)
		rt.NumPartitions, rt.ReplicationFactor = partitions, 1
		req.Topics = append(req.Topics, rt)
	}
	return req
}

// checkMutationCodes checks the per-topic codes: the first accepted, the
// others wantRest, and a throttle time within [minMs, maxMs].
func checkMutationCodes(t *testing.T, what string, codes []int16, throttle int32, wantRest int16, minMs, maxMs int32) {
	t.Helper()
	for i, code := range codes {
		want := wantRest
		if i == 0 {
			want = 0
		}
		if code != want {
			t.Errorf("%s: topic %d: %v, want %v", what, i, kerr.ErrorForCode(code), kerr.ErrorForCode(want))
		}
	}
	if throttle < minMs || throttle > maxMs {
		t.Errorf("%s: throttle_time_ms %d, want %d-%d", what, throttle, minMs, maxMs)
	}
}

func TestControllerMutationQuotaCreateTopics(t *testing.T) {
	tb := mutationQuotaBroker(t, "mq-strict", "mq-old")
	codes := func(r *kmsg.CreateTopicsResponse) (out []int16) {
		for _, st := range r.Topics {
			out = append(out, st.ErrorCode)
		}
		return out
	}
	r := rawClient(t, tb, "mq-strict").roundTrip(createTopicsReq("mq-s", 3, 6), 7).(*kmsg.CreateTopicsResponse)
	checkMutationCodes(t, "CreateTopics v7", codes(r), r.ThrottleMillis, kerr.ThrottlingQuotaExceeded.Code, 1, 2000)
	if m := r.Topics[1].ErrorMessage; m == nil || *m != throttlingQuotaMessage {
		t.Errorf("refused topic's message %v, want %q", m, throttlingQuotaMessage)
	}
	if tb.topicExists("mq-s-1") || !tb.topicExists("mq-s-0") {
		t.Errorf("after the strict request: mq-s-0 exists %v (want true), mq-s-1 %v (want false)", tb.topicExists("mq-s-0"), tb.topicExists("mq-s-1"))
	}
	// v5 is permissive: all taken, throttled for the bucket at 5-18 = -13
	// (26 s).
	r = rawClient(t, tb, "mq-old").roundTrip(createTopicsReq("mq-o", 3, 6), 5).(*kmsg.CreateTopicsResponse)
	checkMutationCodes(t, "CreateTopics v5", codes(r), r.ThrottleMillis, 0, 20000, 26000)
	// No quota, no throttling.
	r = rawClient(t, tb, "mq-free").roundTrip(createTopicsReq("mq-f", 3, 6), 7).(*kmsg.CreateTopicsResponse)
	checkMutationCodes(t, "CreateTopics without a quota", codes(r), r.ThrottleMillis, 0, 0, 0)
}

func TestControllerMutationQuotaValidateOnly(t *testing.T) {
	tb := mutationQuotaBroker(t, "mq-v")
	v := createTopicsReq("mq-v", 1, 60)
	v.ValidateOnly = true
	if r := rawClient(t, tb, "mq-v").roundTrip(v, 7).(*kmsg.CreateTopicsResponse); r.Topics[0].ErrorCode != 0 || r.ThrottleMillis != 0 {
		t.Fatalf("validate_only: %v, throttle %d", kerr.ErrorForCode(r.Topics[0].ErrorCode), r.ThrottleMillis)
	}
	// Nothing was taken: the bucket is full, so two 3-partition topics
	// (6 > 5) are both created, and the second leaves no debt to refuse.
	r := rawClient(t, tb, "mq-v").roundTrip(createTopicsReq("mq-w", 2, 3), 7).(*kmsg.CreateTopicsResponse)
	for i, st := range r.Topics {
		if st.ErrorCode != 0 {
			t.Errorf("topic %d after validate_only: %v", i, kerr.ErrorForCode(st.ErrorCode))
		}
	}
}

func TestControllerMutationQuotaDeleteTopics(t *testing.T) {
	tb := mutationQuotaBroker(t, "mq-del", "mq-del-old")
	for _, p := range []string{"mq-d", "mq-e"} {
		for i := range 3 {
			tb.createTopic(t, fmt.Sprintf("%s-%d", p, i), 6)
		}
	}
	del := func(id, prefix string, v int16) *kmsg.DeleteTopicsResponse {
		req := kmsg.NewPtrDeleteTopicsRequest()
		req.TimeoutMillis = 10000
		for i := range 3 {
			req.TopicNames = append(req.TopicNames, fmt.Sprintf("%s-%d", prefix, i))
		}
		return rawClient(t, tb, id).roundTrip(req, v).(*kmsg.DeleteTopicsResponse)
	}
	codes := func(r *kmsg.DeleteTopicsResponse) (out []int16) {
		for _, st := range r.Topics {
			out = append(out, st.ErrorCode)
		}
		return out
	}
	r := del("mq-del", "mq-d", 5)
	checkMutationCodes(t, "DeleteTopics v5", codes(r), r.ThrottleMillis, kerr.ThrottlingQuotaExceeded.Code, 1, 2000)
	r = del("mq-del-old", "mq-e", 4)
	checkMutationCodes(t, "DeleteTopics v4", codes(r), r.ThrottleMillis, 0, 20000, 26000)
}

func TestControllerMutationQuotaCreatePartitions(t *testing.T) {
	tb := mutationQuotaBroker(t, "mq-grow")
	for i := range 2 {
		tb.createTopic(t, fmt.Sprintf("mq-g-%d", i), 1)
	}
	req := kmsg.NewPtrCreatePartitionsRequest()
	req.TimeoutMillis = 10000
	for i := range 2 {
		rt := kmsg.NewCreatePartitionsRequestTopic()
		rt.Topic, rt.Count = fmt.Sprintf("mq-g-%d", i), 7
		req.Topics = append(req.Topics, rt)
	}
	r := rawClient(t, tb, "mq-grow").roundTrip(req, 3).(*kmsg.CreatePartitionsResponse)
	var codes []int16
	for _, st := range r.Topics {
		codes = append(codes, st.ErrorCode)
	}
	checkMutationCodes(t, "CreatePartitions v3", codes, r.ThrottleMillis, kerr.ThrottlingQuotaExceeded.Code, 1, 2000)
}

// controller.quota.window.* are read as Kafka's keys, and reach the
// quota manager's config.
func TestControllerQuotaWindowKeys(t *testing.T) {
	var c config.Config
	if _, err := c.Apply(map[string]string{"controller.quota.window.num": "4", "controller.quota.window.size.seconds": "3"}); err != nil {
		t.Fatal(err)
	}
	if q := c.ClientQuotas.QuotaConfig(); q.MutationSamples != 4 || q.MutationWindow != 3*time.Second {
		t.Fatalf("quota config %+v, want 4 samples of 3 s", q)
	}
	if _, err := c.Apply(map[string]string{"controller.quota.window.num": "0"}); err == nil {
		t.Fatal("controller.quota.window.num=0 accepted")
	}
}
