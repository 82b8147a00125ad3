package broker

import (
	"context"
	"crypto/rand"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/broker/server"
	"github.com/sluice-io/sluice/config"
	"github.com/sluice-io/sluice/security/quota"
	"github.com/sluice-io/sluice/wire"
)

// setQuota sets (or, with remove, removes) key on the entity of user
// and clientID ("" leaves either out; nil-named defaults via quotaDefault).
func setQuota(t testing.TB, adm *kadm.Client, entity kadm.ClientQuotaEntity, key string, value float64, remove bool) {
	t.Helper()
	res, err := adm.AlterClientQuotas(ctxTimeout(t, 10*time.Second), []kadm.AlterClientQuotaEntry{{
		Entity: entity, Ops: []kadm.AlterClientQuotaOp{{Key: key, Value: value, Remove: remove}},
	}})
	if err != nil {
		t.Fatalf("AlterClientQuotas: %v", err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("AlterClientQuotas %v: %v %s", r.Entity, r.Err, r.ErrMessage)
		}
	}
}

func clientEntity(id string) kadm.ClientQuotaEntity {
	return kadm.ClientQuotaEntity{{Type: "client-id", Name: &id}}
}

func userEntity(u string) kadm.ClientQuotaEntity {
	return kadm.ClientQuotaEntity{{Type: "user", Name: &u}}
}

// A producer limited to 1 MB/s, sending as fast as it can, is held to
// within 20% of it: the bytes acknowledged over the wall time, measured
// after the start. Kafka's Rate lets a fresh client send Samples-1 windows'
// worth at once (a new rate is measured over at least that span) and then
// makes it pay the burst back, which swings the rate with a period of about
// Samples windows before it settles; with Kafka's 11 samples of 1 s the
// swing lasts tens of seconds, so the test measures with
// quota.window.num=2, which settles within 2 s.
func TestProducerByteRateQuota(t *testing.T) {
	tb := startBroker(t, t.TempDir(), func(c *config.Config) {
		c.ClientQuotas = config.ClientQuotaConfig{WindowNum: 2, WindowSize: time.Second}
	})
	tb.createTopic(t, "quota-p", 1)
	const rate = 1 << 20
	setQuota(t, tb.admin(t), clientEntity("limited"), "producer_byte_rate", rate, false)

	cl := tb.client(t, kgo.ClientID("limited"), kgo.DefaultProduceTopic("quota-p"), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerBatchMaxBytes(16<<10), kgo.MaxBufferedRecords(64), kgo.ProducerLinger(0))
	const (
		recordSize = 4 << 10
		warmup     = 3 << 20 // acknowledged before the measure starts
		measured   = 8 << 20
	)
	var (
		mu       sync.Mutex
		acked    int
		t0, t1   time.Time
		firstErr error
	)
	value := incompressible(recordSize)
	ctx := ctxTimeout(t, 60*time.Second)
	for sent := 0; sent < warmup+measured; sent += recordSize {
		cl.Produce(ctx, &kgo.Record{Value: value}, func(r *kgo.Record, err error) {
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if firstErr == nil {
					firstErr = err
				}
				return
			}
			acked += len(r.Value)
			switch {
			case t0.IsZero() && acked >= warmup:
				t0 = time.Now()
			case t1.IsZero() && acked >= warmup+measured:
				t1 = time.Now()
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if firstErr != nil {
		t.Fatal(firstErr)
	}
	got := float64(measured) / t1.Sub(t0).Seconds()
	t.Logf("%.0f B/s acknowledged over %v (quota %d B/s)", got, t1.Sub(t0), rate)
	if got < rate*0.8 || got > rate*1.2 {
		t.Fatalf("producer at %.0f B/s, want within 20%% of %d", got, rate)
	}
}

// incompressible is n random bytes.
func incompressible(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

// A consumer limited by consumer_byte_rate reads at that rate, measured
// as the producer's is (quota.window.num=2, after a warm-up), with fetches
// of 64 KiB: a throttled fetch is answered empty, so fetches large against
// the quota waste their round trips and read below it (as with Kafka).
func TestConsumerByteRateQuota(t *testing.T) {
	tb := startBroker(t, t.TempDir(), func(c *config.Config) {
		c.ClientQuotas = config.ClientQuotaConfig{WindowNum: 2, WindowSize: time.Second}
	})
	tb.createTopic(t, "quota-c", 1)
	const (
		rate       = 1 << 20
		recordSize = 8 << 10
		warmup     = 3 << 20
		// Over 8 s, the Rate's edges (a window's worth either way, with
		// 2 samples) are within the 20% asked.
		measured = 8 << 20
		extra    = 3 << 20 // beyond the measure: what the client fetched ahead at its start
	)
	pr := tb.client(t, kgo.DefaultProduceTopic("quota-c"), kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerBatchMaxBytes(64<<10))
	value := incompressible(recordSize)
	ctx := ctxTimeout(t, 60*time.Second)
	for sent := 0; sent < warmup+measured+extra; sent += recordSize {
		pr.Produce(ctx, &kgo.Record{Value: value}, nil)
	}
	if err := pr.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	setQuota(t, tb.admin(t), clientEntity("slow-reader"), "consumer_byte_rate", rate, false)
	cl := tb.client(t, kgo.ClientID("slow-reader"), kgo.ConsumeTopics("quota-c"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxBytes(64<<10), kgo.FetchMaxPartitionBytes(64<<10))
	var got, base int
	var t0 time.Time
	for t0.IsZero() || got-base < measured {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d bytes: %v", got, err)
		}
		fs.EachRecord(func(r *kgo.Record) { got += len(r.Value) })
		if t0.IsZero() && got >= warmup {
			t0, base = time.Now(), got // the measure starts at a fetch's end
		}
	}
	r := float64(got-base) / time.Since(t0).Seconds()
	t.Logf("%.0f B/s consumed over %v (quota %d B/s)", r, time.Since(t0), rate)
	if r < rate*0.8 || r > rate*1.2 {
		t.Fatalf("consumer at %.0f B/s, want within 20%% of %d", r, rate)
	}
}

// A raw Produce over the quota is answered at once with Kafka's throttle
// time, and the connection reads nothing more until it has passed.
func TestQuotaThrottleTimeAndMute(t *testing.T) {
	tb := startBroker(t, t.TempDir(), func(c *config.Config) {
		c.ClientQuotas = config.ClientQuotaConfig{WindowNum: 2, WindowSize: time.Second}
	})
	tb.createTopic(t, "quota-raw", 1)
	const bound = 10000
	setQuota(t, tb.admin(t), clientEntity("raw-test"), "producer_byte_rate", bound, false)
	rc := dialRaw(t, tb.addr)
	req := produceReq("quota-raw", 0, 1, batch(strings.Repeat("x", 15000)))
	req.SetVersion(9)
	size := len(rc.fmt.AppendRequest(nil, req, 1)) - 4
	resp := rc.roundTrip(req, 9).(*kmsg.ProduceResponse)
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("produce: %v", kerr.ErrorForCode(code))
	}
	// A fresh rate with 2 samples is measured over one window (1 s): the
	// request's size per second, against the bound.
	want := (float64(size) - bound) / bound * 1000
	if got := float64(resp.ThrottleMillis); got < want-2 || got > want+2 {
		t.Fatalf("throttle_time_ms %v, want %.0f ((%d-%d)/%d s)", got, want, size, bound, bound)
	}
	answered := time.Now()
	md := kmsg.NewPtrMetadataRequest()
	rc.roundTrip(md, 9)
	if waited := time.Since(answered); waited < time.Duration(resp.ThrottleMillis)*time.Millisecond*9/10 {
		t.Fatalf("next request answered %v after a throttle of %d ms: the connection was not muted", waited, resp.ThrottleMillis)
	}
	// Under the bound nothing is throttled: another client id.
	rc2 := dialRaw(t, tb.addr)
	rc2.fmt = kmsg.NewRequestFormatter(kmsg.FormatterClientID("free"))
	if r := rc2.roundTrip(produceReq("quota-raw", 0, 1, batch(strings.Repeat("x", 15000))), 9).(*kmsg.ProduceResponse); r.ThrottleMillis != 0 {
		t.Fatalf("unlimited client throttled %d ms", r.ThrottleMillis)
	}
}

// A throttled consumer fetch is answered with no partitions.
func TestQuotaThrottledFetchIsEmpty(t *testing.T) {
	tb := startBroker(t, t.TempDir(), func(c *config.Config) {
		c.ClientQuotas = config.ClientQuotaConfig{WindowNum: 2, WindowSize: time.Second}
	})
	id := tb.createTopic(t, "quota-f", 1)
	setQuota(t, tb.admin(t), clientEntity("raw-test"), "consumer_byte_rate", 10000, false)
	rc := dialRaw(t, tb.addr)
	if code, _ := rc.produceCode(9, "quota-f", 0, batch(strings.Repeat("y", 30000))); code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	fetch := func() *kmsg.FetchResponse {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.MaxBytes = -1, 1<<20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = "quota-f", id
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.PartitionMaxBytes = 1 << 20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return rc.roundTrip(req, 12).(*kmsg.FetchResponse)
	}
	// The fetch asks for at most bound*(samples-1) windows = 10000 bytes;
	// the first batch is sent whole, over the quota: throttled, empty.
	r := fetch()
	if r.ThrottleMillis <= 0 || len(r.Topics) != 0 {
		t.Fatalf("fetch over the quota: throttle %d ms, %d topics; want > 0 and none", r.ThrottleMillis, len(r.Topics))
	}
}

// Describe shows what Alter set, the precedence applies user+client over
// user over client, and a removal leaves the entity's other keys.
func TestClientQuotasDescribeAlter(t *testing.T) {
	tb := startBroker(t, t.TempDir(), nil)
	adm := tb.admin(t)
	both := kadm.ClientQuotaEntity{{Type: "user", Name: kmsg.StringPtr("ANONYMOUS")}, {Type: "client-id", Name: kmsg.StringPtr("c1")}}
	setQuota(t, adm, clientEntity("c1"), "producer_byte_rate", 1000, false)
	if got, _ := tb.quotas.clients.Quota(0, "ANONYMOUS", "c1"); got != 1000 {
		t.Fatalf("client quota %v, want 1000", got)
	}
	setQuota(t, adm, userEntity("ANONYMOUS"), "producer_byte_rate", 2000, false)
	if got, _ := tb.quotas.clients.Quota(0, "ANONYMOUS", "c1"); got != 2000 {
		t.Fatalf("user over client: %v, want 2000", got)
	}
	setQuota(t, adm, both, "producer_byte_rate", 3000, false)
	setQuota(t, adm, both, "request_percentage", 12.5, false)
	if got, _ := tb.quotas.clients.Quota(0, "ANONYMOUS", "c1"); got != 3000 {
		t.Fatalf("user+client over user: %v, want 3000", got)
	}
	if got, _ := tb.quotas.clients.Quota(0, "ANONYMOUS", "c2"); got != 2000 {
		t.Fatalf("another client of the user: %v, want 2000", got)
	}
	dq, err := adm.DescribeClientQuotas(ctxTimeout(t, 5*time.Second), false, []kadm.DescribeClientQuotaComponent{{Type: "user", MatchType: 0, MatchName: kmsg.StringPtr("ANONYMOUS")}})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, q := range dq {
		got[q.Entity.String()] = q.Values[0].String()
		if len(q.Values) > 1 {
			got[q.Entity.String()] += " " + q.Values[1].String()
		}
	}
	want := map[string]string{
		"{user=ANONYMOUS}":               "producer_byte_rate=2000.000000",
		"{user=ANONYMOUS, client-id=c1}": "producer_byte_rate=3000.000000 request_percentage=12.500000",
	}
	if len(got) != len(want) || got["{user=ANONYMOUS}"] != want["{user=ANONYMOUS}"] || got["{user=ANONYMOUS, client-id=c1}"] != want["{user=ANONYMOUS, client-id=c1}"] {
		t.Fatalf("described %v, want %v", got, want)
	}
	// Strict with a client-id component: only client-id entities.
	dq, err = adm.DescribeClientQuotas(ctxTimeout(t, 5*time.Second), true, []kadm.DescribeClientQuotaComponent{{Type: "client-id", MatchType: 2}})
	if err != nil {
		t.Fatal(err)
	}
	if len(dq) != 1 || dq[0].Entity.String() != "{client-id=c1}" {
		t.Fatalf("strict client-id: %v", dq)
	}
	// Removing one key keeps the other.
	setQuota(t, adm, both, "producer_byte_rate", 0, true)
	cfgs, err := tb.coord.EntityConfigs("users/ANONYMOUS/clients/c1")
	if err != nil {
		t.Fatal(err)
	}
	if len(cfgs) != 1 || cfgs["request_percentage"] != "12.5" {
		t.Fatalf("after removing producer_byte_rate: %v", cfgs)
	}
	if got, _ := tb.quotas.clients.Quota(0, "ANONYMOUS", "c1"); got != 2000 {
		t.Fatalf("after removal: %v, want the user's 2000", got)
	}
	// Other keys of the entity (SCRAM credentials) are left alone.
	if err := tb.coord.AlterEntityConfigs("users/ANONYMOUS", func(cur map[string]string) (map[string]string, error) {
		cur["SCRAM-SHA-256"] = "salt=a,stored_key=b,server_key=c,iterations=4096"
		return cur, nil
	}); err != nil {
		t.Fatal(err)
	}
	setQuota(t, adm, userEntity("ANONYMOUS"), "consumer_byte_rate", 5, false)
	cfgs, _ = tb.coord.EntityConfigs("users/ANONYMOUS")
	if cfgs["SCRAM-SHA-256"] == "" || cfgs["consumer_byte_rate"] != "5" || cfgs["producer_byte_rate"] != "2000" {
		t.Fatalf("user configs %v", cfgs)
	}
}

// Kafka's refusals, each with INVALID_REQUEST for its entry only.
func TestAlterClientQuotasBadInput(t *testing.T) {
	tb := startBroker(t, t.TempDir(), nil)
	cl := tb.client(t)
	name := func(s string) *string { return &s }
	ent := func(kv ...any) []kmsg.AlterClientQuotasRequestEntryEntity {
		var out []kmsg.AlterClientQuotasRequestEntryEntity
		for i := 0; i < len(kv); i += 2 {
			e := kmsg.NewAlterClientQuotasRequestEntryEntity()
			e.Type = kv[i].(string)
			e.Name, _ = kv[i+1].(*string)
			out = append(out, e)
		}
		return out
	}
	op := func(k string, v float64) []kmsg.AlterClientQuotasRequestEntryOp {
		o := kmsg.NewAlterClientQuotasRequestEntryOp()
		o.Key, o.Value = k, v
		return []kmsg.AlterClientQuotasRequestEntryOp{o}
	}
	cases := []struct {
		entity []kmsg.AlterClientQuotasRequestEntryEntity
		ops    []kmsg.AlterClientQuotasRequestEntryOp
		msg    string // "" for success
	}{
		{nil, op("producer_byte_rate", 1), "Invalid empty client quota entity"},
		{ent("group", name("g")), op("producer_byte_rate", 1), "Unhandled client quota entity type: group"},
		{ent("user", name("")), op("producer_byte_rate", 1), "Empty user not supported"},
		{ent("user", name("u"), "ip", name("1.2.3.4")), op("producer_byte_rate", 1), "Invalid quota entity combination, IP entity should not be used with user/client ID entity."},
		{ent("user", name("u")), op("no_such_key", 1), "Invalid configuration key no_such_key"},
		{ent("client-id", name("c")), op("producer_byte_rate", 1.5), "Configuration producer_byte_rate must be a LONG value"},
		{ent("client-id", nil), op("request_percentage", 1.5), ""},
		{ent("user", nil, "client-id", nil), op("consumer_byte_rate", 100), ""},
	}
	for _, validate := range []bool{true, false} {
		req := kmsg.NewPtrAlterClientQuotasRequest()
		req.ValidateOnly = validate
		for _, c := range cases {
			e := kmsg.NewAlterClientQuotasRequestEntry()
			e.Entity, e.Ops = c.entity, c.ops
			req.Entries = append(req.Entries, e)
		}
		resp, err := req.RequestWith(ctxTimeout(t, 5*time.Second), cl)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Entries) != len(cases) {
			t.Fatalf("%d entries answered, want %d", len(resp.Entries), len(cases))
		}
		for i, c := range cases {
			e := resp.Entries[i]
			msg := ""
			if e.ErrorMessage != nil {
				msg = *e.ErrorMessage
			}
			wantCode := int16(0)
			if c.msg != "" {
				wantCode = kerr.InvalidRequest.Code
			}
			if e.ErrorCode != wantCode || msg != c.msg {
				t.Errorf("validate=%v case %d: %v %q, want %v %q", validate, i, kerr.ErrorForCode(e.ErrorCode), msg, kerr.ErrorForCode(wantCode), c.msg)
			}
		}
		paths, _ := tb.coord.Entities("clients")
		if validate && len(paths) != 0 || !validate && len(paths) != 1 {
			t.Errorf("validate=%v: client entities %v", validate, paths)
		}
	}
	// Describe's refusals.
	for _, c := range []struct {
		comps []kmsg.DescribeClientQuotasRequestComponent
		code  int16
	}{
		{[]kmsg.DescribeClientQuotasRequestComponent{{EntityType: "user", MatchType: 2}, {EntityType: "user", MatchType: 2}}, kerr.InvalidRequest.Code},
		{[]kmsg.DescribeClientQuotasRequestComponent{{EntityType: "", MatchType: 2}}, kerr.InvalidRequest.Code},
		{[]kmsg.DescribeClientQuotasRequestComponent{{EntityType: "user", MatchType: 2}, {EntityType: "ip", MatchType: 2}}, kerr.InvalidRequest.Code},
		{[]kmsg.DescribeClientQuotasRequestComponent{{EntityType: "group", MatchType: 2}}, kerr.UnsupportedVersion.Code},
	} {
		req := kmsg.NewPtrDescribeClientQuotasRequest()
		req.Components = c.comps
		resp, err := req.RequestWith(ctxTimeout(t, 5*time.Second), cl)
		if err != nil {
			t.Fatal(err)
		}
		if resp.ErrorCode != c.code {
			t.Errorf("describe %v: %v, want %v", c.comps, kerr.ErrorForCode(resp.ErrorCode), kerr.ErrorForCode(c.code))
		}
	}
}

// Quotas are kept in the data directory: a restarted single node applies
// them.
func TestClientQuotasSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	tb := serveBroker(t, dir, nil)
	setQuota(t, tb.admin(t), clientEntity("keep"), "producer_byte_rate", 4242, false)
	tb.stop(t)
	tb = startBroker(t, dir, nil)
	if got, ok := tb.quotas.clients.Quota(0, "ANONYMOUS", "keep"); !ok || got != 4242 {
		t.Fatalf("after restart: %v %v, want 4242", got, ok)
	}
	dq, err := tb.admin(t).DescribeClientQuotas(context.Background(), false, nil)
	if err != nil || len(dq) != 1 {
		t.Fatalf("described %v %v", dq, err)
	}
}

// quotaPath runs a produce request's quota accounting on a connection of
// tb: resolve, its bytes, its time, its throttle into the response.
func quotaPath(tb *testBroker) func() {
	c := &conn{Conn: &server.Conn{Principal: Anonymous}, b: tb.Broker}
	id := "bench"
	h := wire.Header{Key: 0, ClientID: &id}
	resp := kmsg.NewPtrProduceResponse()
	return func() {
		c.quotaBegin(h, 1000)
		c.quotaBytes(quota.ProducerByteRate, int64(c.q.bytes))
		c.quotaEnd(resp)
		c.q.throttle = 0
	}
}

func limitBench(t testing.TB, tb *testBroker) {
	adm := tb.admin(t)
	setQuota(t, adm, clientEntity("bench"), "producer_byte_rate", 1<<40, false)
	setQuota(t, adm, clientEntity("bench"), "request_percentage", 1e9, false)
}

// The recording path allocates nothing per request.
func TestQuotaPathAllocs(t *testing.T) {
	tb := startBroker(t, t.TempDir(), nil)
	limitBench(t, tb)
	run := quotaPath(tb)
	run()
	if n := testing.AllocsPerRun(1000, run); n != 0 {
		t.Fatalf("%v allocations per request", n)
	}
}

func BenchmarkQuotaPath(b *testing.B) {
	tb := startBroker(b, b.TempDir(), nil)
	limitBench(b, tb)
	run := quotaPath(tb)
	b.ReportAllocs()
	for b.Loop() {
		run()
	}
}
