package broker

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/config"
	"github.com/sluice-io/sluice/engine"
)

// topicCodec is the codec a topic of compression.type typ stores a batch
// produced with codec in.
func topicCodec(typ string, produced engine.Compression) engine.Compression {
	switch typ {
	case "uncompressed":
		return engine.CompressionNone
	case "gzip":
		return engine.CompressionGzip
	case "snappy":
		return engine.CompressionSnappy
	case "lz4":
		return engine.CompressionLZ4
	case "zstd":
		return engine.CompressionZstd
	}
	return produced
}

// storedCodecs fetches partition 0 of topic raw from offset 0 (Fetch v12)
// and returns the codec of every batch, checking each batch's CRC-32C
// independently of the engine, and the records the batches hold.
func storedCodecs(t testing.TB, tb *testBroker, topic string, id [16]byte) (codecs []engine.Compression, records int64) {
	t.Helper()
	rc := dialRaw(t, tb.addr)
	resp := rc.roundTrip(fetchReq(topic, id, 0, 0, 10<<20), 12).(*kmsg.FetchResponse)
	part := resp.Topics[0].Partitions[0]
	wantCode(t, "fetch "+topic, part.ErrorCode, nil)
	b := part.RecordBatches
	for _, h := range batchesIn(t, b) {
		if crc := crc32.Checksum(b[21:h.Size()], crc32.MakeTable(crc32.Castagnoli)); crc != h.CRC {
			t.Errorf("%s: batch at %d has CRC 0x%08x, its bytes 0x%08x", topic, h.BaseOffset, h.CRC, crc)
		}
		codecs = append(codecs, h.Compression())
		records += int64(h.NumRecords)
		b = b[h.Size():]
	}
	return codecs, records
}

// createTopicWith creates a one-partition topic with the given configs (key,
// value pairs) and returns its ID.
func (tb *testBroker) createTopicWith(t testing.TB, name string, kv ...string) [16]byte {
	t.Helper()
	configs := map[string]*string{}
	for i := 0; i < len(kv); i += 2 {
		configs[kv[i]] = kadm.StringPtr(kv[i+1])
	}
	resp, err := tb.admin(t).CreateTopic(ctxTimeout(t, 10*time.Second), 1, 1, configs, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create topic %s %v: %v", name, kv, err)
	}
	return resp.ID
}

// compressionRecords are records with keys (some null), repetitive values
// (so that franz-go's compression shrinks them and is kept), headers and
// distinct timestamps.
func compressionRecords(topic string, n int) []*kgo.Record {
	base := time.UnixMilli(1_750_000_000_000)
	rs := make([]*kgo.Record, n)
	for i := range rs {
		r := &kgo.Record{
			Topic:     topic,
			Key:       fmt.Appendf(nil, "key-%d", i%7),
			Value:     fmt.Appendf(nil, "value %04d %s", i, strings.Repeat("sluice ", 20+i%5)),
			Timestamp: base.Add(time.Duration(i) * time.Millisecond),
			Headers:   []kgo.RecordHeader{{Key: "h", Value: fmt.Appendf(nil, "%d", i)}, {Key: "empty"}},
		}
		if i%10 == 3 {
			r.Key = nil
		}
		rs[i] = r
	}
	return rs
}

// sameRecord reports how got, consumed, differs from want, produced: "" if
// key, value, headers and timestamp are the same.
func sameRecord(got, want *kgo.Record) string {
	switch {
	case (got.Key == nil) != (want.Key == nil) || !bytes.Equal(got.Key, want.Key):
		return fmt.Sprintf("key %q, want %q", got.Key, want.Key)
	case !bytes.Equal(got.Value, want.Value):
		return fmt.Sprintf("value %q, want %q", got.Value, want.Value)
	case !got.Timestamp.Equal(want.Timestamp):
		return fmt.Sprintf("timestamp %v, want %v", got.Timestamp, want.Timestamp)
	case len(got.Headers) != len(want.Headers):
		return fmt.Sprintf("%d headers, want %d", len(got.Headers), len(want.Headers))
	}
	for i, h := range want.Headers {
		if g := got.Headers[i]; g.Key != h.Key || !bytes.Equal(g.Value, h.Value) {
			return fmt.Sprintf("header %d %q=%q, want %q=%q", i, g.Key, g.Value, h.Key, h.Value)
		}
	}
	return ""
}

// A franz-go producer sending uncompressed, snappy and lz4 batches to
// topics of each compression.type: every stored batch is in the topic's
// codec (the producer's for producer) with a valid CRC, and a franz-go
// consumer reads every record back with its key, value, headers and
// timestamp.
func TestCompressionTypeRecompresses(t *testing.T) {
	tb := startBroker(t, t.TempDir(), nil)
	producers := []struct {
		name  string
		codec kgo.CompressionCodec
		want  engine.Compression
	}{
		{"none", kgo.NoCompression(), engine.CompressionNone},
		{"snappy", kgo.SnappyCompression(), engine.CompressionSnappy},
		{"lz4", kgo.Lz4Compression(), engine.CompressionLZ4},
	}
	for _, typ := range []string{"gzip", "lz4", "zstd", "snappy", "uncompressed", "producer"} {
		for _, pc := range producers {
			t.Run(typ+"/from-"+pc.name, func(t *testing.T) {
				topic := "ct-" + typ + "-" + pc.name
				id := tb.createTopicWith(t, topic, "compression.type", typ)
				// Idempotent (franz-go's default): sequences are checked
				// on the rebuilt batches.
				p := idempotentClient(t, tb.addr, kgo.ProducerBatchCompression(pc.codec), kgo.ProducerLinger(0))
				want := compressionRecords(topic, 90)
				for i := 0; i < len(want); i += 30 { // three produce calls: several batches
					if err := p.ProduceSync(ctxTimeout(t, 10*time.Second), want[i:i+30]...).FirstErr(); err != nil {
						t.Fatal(err)
					}
				}
				codecs, n := storedCodecs(t, tb, topic, id)
				if n != int64(len(want)) || len(codecs) < 3 {
					t.Fatalf("%d batches of %d records stored, want 3 or more of %d", len(codecs), n, len(want))
				}
				for i, c := range codecs {
					if w := topicCodec(typ, pc.want); c != w {
						t.Errorf("batch %d stored with %v, want %v", i, c, w)
					}
				}
				for i, r := range tb.consumeRecords(t, topic, 0, len(want)) {
					if d := sameRecord(r, want[i]); d != "" {
						t.Fatalf("record %d: %s", i, d)
					}
				}
			})
		}
	}
}

// kcat (librdkafka) produces lz4 and uncompressed to topics that recompress,
// and reads back the same keys, values and headers; an independent codec
// implementation decodes what sluice wrote (requireKcat).
func TestCompressionTypeKcat(t *testing.T) {
	requireKcat(t)
	tb := startBroker(t, t.TempDir(), nil)
	// Four kcat -P runs of ten lines, each run with its own header value.
	const runs, perRun = 4, 10
	var lines, want []string
	for i := range runs * perRun {
		lines = append(lines, fmt.Sprintf("key%d:value %d %s", i, i, strings.Repeat("kcat ", 10)))
		want = append(want, fmt.Sprintf("key%d=value %d %s|run=%d", i, i, strings.Repeat("kcat ", 10), i/perRun))
	}
	for _, tc := range []struct{ typ, producerCodec string }{
		{"gzip", "lz4"}, {"zstd", "none"}, {"snappy", "lz4"}, {"lz4", "gzip"}, {"uncompressed", "zstd"},
	} {
		t.Run(tc.typ+"/from-"+tc.producerCodec, func(t *testing.T) {
			topic := "kc-" + tc.typ
			id := tb.createTopicWith(t, topic, "compression.type", tc.typ)
			for r := range runs {
				in := strings.Join(lines[r*perRun:(r+1)*perRun], "\n") + "\n"
				kcat(t, in, "-b", tb.addr, "-P", "-t", topic, "-p", "0", "-K:", "-z", tc.producerCodec, "-H", fmt.Sprintf("run=%d", r))
			}
			codecs, n := storedCodecs(t, tb, topic, id)
			if n != int64(len(lines)) {
				t.Fatalf("%d records stored, want %d", n, len(lines))
			}
			for i, c := range codecs {
				if w := topicCodec(tc.typ, 0); c != w {
					t.Errorf("batch %d stored with %v, want %v", i, c, w)
				}
			}
			out := kcat(t, "", "-b", tb.addr, "-C", "-t", topic, "-p", "0", "-o", "beginning", "-e", "-f", `%k=%s|%h\n`)
			if got := strings.Split(strings.TrimSuffix(out, "\n"), "\n"); !slices.Equal(got, want) {
				t.Errorf("kcat read back:\n%s\nwant:\n%s", out, strings.Join(want, "\n"))
			}
		})
	}
}

// A LogAppendTime topic that recompresses: the stored batch is in the
// topic's codec, stamped with the append time the produce response gives,
// and consumers see that time as every record's timestamp.
func TestCompressionTypeLogAppendTime(t *testing.T) {
	tb := startBroker(t, t.TempDir(), nil)
	id := tb.createTopicWith(t, "lat", "compression.type", "zstd", "message.timestamp.type", "LogAppendTime")
	var bb engine.BatchBuilder
	for i := range 20 {
		bb.Add(engine.Record{Timestamp: 1000 + int64(i), Key: fmt.Appendf(nil, "k%d", i), Value: bytes.Repeat([]byte("v"), 100)})
	}
	b, err := bb.BuildCompressed(engine.CompressionLZ4)
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now().UnixMilli()
	rc := dialRaw(t, tb.addr)
	resp := rc.roundTrip(produceReq("lat", 0, -1, b), 9).(*kmsg.ProduceResponse)
	sp := resp.Topics[0].Partitions[0]
	wantCode(t, "produce", sp.ErrorCode, nil)
	if sp.LogAppendTime < before || sp.LogAppendTime > time.Now().UnixMilli() {
		t.Fatalf("produce answered LogAppendTime %d, want the append time (after %d)", sp.LogAppendTime, before)
	}
	f := rc.roundTrip(fetchReq("lat", id, 0, 0, 1<<20), 12).(*kmsg.FetchResponse)
	stored := f.Topics[0].Partitions[0].RecordBatches
	hs := batchesIn(t, stored)
	if len(hs) != 1 {
		t.Fatalf("%d batches stored", len(hs))
	}
	h := hs[0]
	if h.Compression() != engine.CompressionZstd || !h.LogAppendTime() || h.MaxTimestamp != sp.LogAppendTime {
		t.Errorf("stored %v, LogAppendTime %t, max timestamp %d; want zstd stamped %d", h.Compression(), h.LogAppendTime(), h.MaxTimestamp, sp.LogAppendTime)
	}
	if crc := crc32.Checksum(stored[21:h.Size()], crc32.MakeTable(crc32.Castagnoli)); crc != h.CRC {
		t.Errorf("CRC 0x%08x, bytes 0x%08x", h.CRC, crc)
	}
	for i, r := range tb.consumeRecords(t, "lat", 0, 20) {
		if r.Timestamp.UnixMilli() != sp.LogAppendTime || r.Attrs.TimestampType() != 1 || string(r.Key) != fmt.Sprintf("k%d", i) {
			t.Fatalf("record %d: key %q, timestamp %d of type %d; want the append time %d, type 1", i, r.Key, r.Timestamp.UnixMilli(), r.Attrs.TimestampType(), sp.LogAppendTime)
		}
	}
}

// An idempotent producer's retry of a batch the topic recompressed is
// answered with the offsets it was first written at and not written again;
// a sequence gap is still refused.
func TestCompressionTypeIdempotentRetry(t *testing.T) {
	tb := startBroker(t, t.TempDir(), nil)
	id := tb.createTopicWith(t, "idem-gzip", "compression.type", "gzip")
	rc := dialRaw(t, tb.addr)
	pid := rc.roundTrip(initProducerIDReq(nil, -1, -1), 5).(*kmsg.InitProducerIDResponse).ProducerID
	lz4Batch := func(seq int32, values ...string) []byte {
		var bb engine.BatchBuilder
		for _, v := range values {
			bb.Add(engine.Record{Timestamp: time.Now().UnixMilli(), Value: []byte(v)})
		}
		b, err := bb.BuildCompressed(engine.CompressionLZ4)
		if err != nil {
			t.Fatal(err)
		}
		return withProducer(b, pid, 0, seq)
	}
	code, off := rc.produceCode(9, "idem-gzip", 0, lz4Batch(0, "a", "b", "c"))
	wantCode(t, "first", code, nil)
	code, retry := rc.produceCode(9, "idem-gzip", 0, lz4Batch(0, "a", "b", "c"))
	wantCode(t, "retry", code, nil)
	if retry != off {
		t.Errorf("retry answered base offset %d, first append %d", retry, off)
	}
	code, _ = rc.produceCode(9, "idem-gzip", 0, lz4Batch(5, "x"))
	wantCode(t, "sequence gap", code, kerr.OutOfOrderSequenceNumber)
	code, _ = rc.produceCode(9, "idem-gzip", 0, lz4Batch(3, "d"))
	wantCode(t, "next", code, nil)
	codecs, n := storedCodecs(t, tb, "idem-gzip", id)
	if n != 4 || !slices.Equal(codecs, []engine.Compression{engine.CompressionGzip, engine.CompressionGzip}) {
		t.Errorf("stored %v holding %d records, want two gzip batches of 4", codecs, n)
	}
}

// Changing compression.type at run time, for a topic and as the broker's
// default, applies from the next append; batches stored stay as they are.
func TestCompressionTypeAlterLive(t *testing.T) {
	tb := startBroker(t, t.TempDir(), nil)
	adm := tb.admin(t)
	ctx := ctxTimeout(t, 20*time.Second)
	id := tb.createTopicWith(t, "live")
	other := tb.createTopicWith(t, "live-other")
	p := tb.client(t, kgo.ProducerBatchCompression(kgo.Lz4Compression()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var want []engine.Compression
	step := func(what string, codec engine.Compression) {
		t.Helper()
		produceSync(t, p, "live", 0, strings.Repeat(what+" ", 30))
		want = append(want, codec)
		if got, _ := storedCodecs(t, tb, "live", id); !slices.Equal(got, want) {
			t.Fatalf("after %s: stored %v, want %v", what, got, want)
		}
	}
	step("producer", engine.CompressionLZ4)
	mustAlter(t)(adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{set("compression.type", "gzip")}, "live"))
	step("topic gzip", engine.CompressionGzip)
	mustAlter(t)(adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{set("compression.gzip.level", "9")}, "live"))
	step("gzip level 9", engine.CompressionGzip)
	if r := tb.topic("live").Partitions[0].Log.Options().Recompression; r != (engine.Recompression{Enabled: true, Codec: engine.CompressionGzip, Level: 9}) {
		t.Errorf("the log recompresses with %+v after compression.gzip.level=9", r)
	}
	mustAlter(t)(adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{set("compression.type", "zstd")}))
	step("topic override over the broker default", engine.CompressionGzip)
	mustAlter(t)(adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{del("compression.type")}, "live"))
	step("broker default zstd", engine.CompressionZstd)
	mustAlter(t)(adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{set("compression.type", "uncompressed")}, 0))
	step("this broker's uncompressed", engine.CompressionNone)
	produceSync(t, p, "live-other", 0, strings.Repeat("other ", 30))
	if got, _ := storedCodecs(t, tb, "live-other", other); !slices.Equal(got, []engine.Compression{engine.CompressionNone}) {
		t.Errorf("a topic without override stored %v under the broker's uncompressed", got)
	}
	mustAlter(t)(adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{del("compression.type")}, 0))
	mustAlter(t)(adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{del("compression.type")}))
	step("producer again", engine.CompressionLZ4)

	// The values and their sources, as Kafka describes them.
	mustAlter(t)(adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{set("compression.type", "snappy")}))
	cfg := describedTopic(t, adm, "live")
	wantConfig(t, "live", cfg["compression.type"], "snappy", kmsg.ConfigSourceDynamicDefaultBrokerConfig)
	wantConfig(t, "live", cfg["compression.gzip.level"], "9", kmsg.ConfigSourceDynamicTopicConfig)
	wantConfig(t, "live", cfg["compression.zstd.level"], "3", kmsg.ConfigSourceDefaultConfig)
	step("broker default snappy", engine.CompressionSnappy)
}

// Values Kafka 3.9 refuses, as the broker's default: INVALID_REQUEST, as
// Kafka answers a broker config it refuses (the topic-level refusals, with
// INVALID_CONFIG, are in invalidTopicConfigs).
func TestCompressionTypeInvalidBrokerValues(t *testing.T) {
	tb := startBroker(t, t.TempDir(), nil)
	adm := tb.admin(t)
	ctx := ctxTimeout(t, 10*time.Second)
	for _, c := range []struct{ key, value, msg string }{
		{"compression.type", "brotli", "String must be one of: uncompressed, zstd, lz4, snappy, gzip, producer"},
		{"compression.gzip.level", "0", "Value must be between 1 and 9 or equal to -1"},
		{"compression.lz4.level", "18", "Value must be no more than 17"},
		{"compression.zstd.level", "-131073", "Value must be at least -131072"},
	} {
		err := alterResult(adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{set(c.key, c.value)}))
		if !errors.Is(err, kerr.InvalidRequest) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s=%s: %v, want INVALID_REQUEST saying %q", c.key, c.value, err, c.msg)
		}
	}
	if d := tb.cfgs.Dynamic(); len(d.Cluster) != 0 {
		t.Errorf("refused values were kept: %v", d.Cluster)
	}
}

// The configuration file's compression.type and levels are the static
// defaults of topics, validated as Kafka validates them.
func TestCompressionTypeStatic(t *testing.T) {
	var c config.Config
	if _, err := c.Apply(map[string]string{"compression.type": "lz4", "compression.lz4.level": "12"}); err != nil {
		t.Fatal(err)
	}
	if c.CompressionType != "lz4" || c.CompressionLZ4Level != 12 {
		t.Fatalf("applied %q at level %d", c.CompressionType, c.CompressionLZ4Level)
	}
	for k, v := range map[string]string{"compression.type": "lzma", "compression.gzip.level": "11", "compression.zstd.level": "x"} {
		if _, err := new(config.Config).Apply(map[string]string{k: v}); err == nil || !strings.Contains(err.Error(), k) {
			t.Errorf("%s=%s: %v, want an error naming the key", k, v, err)
		}
	}
	tb := startBroker(t, t.TempDir(), func(cfg *config.Config) { cfg.CompressionType, cfg.CompressionZstdLevel = "zstd", 19 })
	id := tb.createTopicWith(t, "static")
	produceSync(t, tb.client(t, kgo.RecordPartitioner(kgo.ManualPartitioner())), "static", 0, strings.Repeat("static ", 30))
	if got, _ := storedCodecs(t, tb, "static", id); !slices.Equal(got, []engine.Compression{engine.CompressionZstd}) {
		t.Errorf("stored %v under a static compression.type=zstd", got)
	}
	cfg := describedTopic(t, tb.admin(t), "static")
	wantConfig(t, "static", cfg["compression.type"], "zstd", kmsg.ConfigSourceStaticBrokerConfig)
	wantConfig(t, "static", cfg["compression.zstd.level"], "19", kmsg.ConfigSourceStaticBrokerConfig)
}

// Clients may not write control batches, as Kafka's LogValidator refuses
// them: INVALID_RECORD, nothing stored. (The request carries a
// transactional id: without one Kafka refuses a transactional batch, a
// control batch included, before, with TRANSACTIONAL_ID_AUTHORIZATION_FAILED.)
func TestProduceRefusesControlBatches(t *testing.T) {
	// Without a transaction coordinator: with verification on, the batch
	// would first fail its verification (as in Kafka, where it comes first).
	tb := startBroker(t, t.TempDir(), noTxnVerification)
	tb.createTopic(t, "ctl", 1)
	rc := dialRaw(t, tb.addr)
	b := withProducer(batch("marker"), 7, 0, -1)
	b[22] |= 0x30 // attributes: control, transactional
	fixBatchCRC(b)
	req := produceReq("ctl", 0, -1, b)
	req.TransactionID = kmsg.StringPtr("tx")
	resp := rc.roundTrip(req, 9).(*kmsg.ProduceResponse)
	sp := resp.Topics[0].Partitions[0]
	wantCode(t, "control batch", sp.ErrorCode, kerr.InvalidRecord)
	if sp.ErrorMessage == nil || *sp.ErrorMessage != "Clients are not allowed to write control records in topic partition ctl-0" {
		t.Errorf("message %v", sp.ErrorMessage)
	}
	if hw := tb.topic("ctl").Partitions[0].HighWatermark(); hw != 0 {
		t.Errorf("the partition ends at %d after the refusal", hw)
	}
}

// What a recompressing topic refuses: records that do not decompress
// (CORRUPT_MESSAGE), malformed records (INVALID_RECORD) and a batch that
// outgrows max.message.bytes once rebuilt (MESSAGE_TOO_LARGE); nothing is
// stored.
func TestCompressionTypeRefusals(t *testing.T) {
	tb := startBroker(t, t.TempDir(), nil)
	tb.createTopicWith(t, "refuse", "compression.type", "uncompressed", "max.message.bytes", "4000")
	rc := dialRaw(t, tb.addr)
	build := func(n int, c engine.Compression) []byte {
		var bb engine.BatchBuilder
		for i := range n {
			bb.Add(engine.Record{Timestamp: 1, Key: fmt.Appendf(nil, "k%d", i), Value: bytes.Repeat([]byte("x"), 200)})
		}
		b, err := bb.BuildCompressed(c)
		if err != nil {
			t.Fatal(err)
		}
		return bytes.Clone(b)
	}
	garbage := build(3, engine.CompressionLZ4)
	garbage = append(garbage[:61], "not an lz4 frame"...)
	binary.BigEndian.PutUint32(garbage[8:], uint32(len(garbage)-12))
	fixBatchCRC(garbage)
	short := build(3, engine.CompressionZstd) // announces a fourth record it does not hold
	binary.BigEndian.PutUint32(short[23:], 3)
	binary.BigEndian.PutUint32(short[57:], 4)
	fixBatchCRC(short)
	for _, c := range []struct {
		what  string
		batch []byte
		want  *kerr.Error
	}{
		{"records that do not decompress", garbage, kerr.CorruptMessage},
		{"fewer records than announced", short, kerr.InvalidRecord},
		{"40 KB once decompressed", build(200, engine.CompressionZstd), kerr.MessageTooLarge},
	} {
		code, _ := rc.produceCode(9, "refuse", 0, c.batch)
		wantCode(t, c.what, code, c.want)
	}
	if hw := tb.topic("refuse").Partitions[0].HighWatermark(); hw != 0 {
		t.Errorf("the partition ends at %d after the refusals", hw)
	}
}

// A compression.type=zstd topic answers fetches below v10, from clients
// that predate zstd, with UNSUPPORTED_COMPRESSION_TYPE, as Kafka does; v10
// is served, and so is a producer-compressed zstd batch in a producer topic.
func TestCompressionTypeZstdOldFetch(t *testing.T) {
	tb := startBroker(t, t.TempDir(), nil)
	zstdTopic := tb.createTopicWith(t, "z", "compression.type", "zstd")
	producerTopic := tb.createTopicWith(t, "p")
	rc := dialRaw(t, tb.addr)
	var bb engine.BatchBuilder
	bb.Add(engine.Record{Timestamp: 1, Value: []byte("zstd")})
	b, err := bb.BuildCompressed(engine.CompressionZstd)
	if err != nil {
		t.Fatal(err)
	}
	for _, topic := range []string{"z", "p"} {
		code, _ := rc.produceCode(9, topic, 0, bytes.Clone(b))
		wantCode(t, "produce to "+topic, code, nil)
	}
	fetch := func(topic string, id [16]byte, v int16) kmsg.FetchResponseTopicPartition {
		return rc.roundTrip(fetchReq(topic, id, 0, 0, 1<<20), v).(*kmsg.FetchResponse).Topics[0].Partitions[0]
	}
	for _, v := range []int16{4, 9} {
		p := fetch("z", zstdTopic, v)
		wantCode(t, fmt.Sprintf("fetch v%d of the zstd topic", v), p.ErrorCode, kerr.UnsupportedCompressionType)
		if len(p.RecordBatches) != 0 {
			t.Errorf("fetch v%d of the zstd topic returned %d bytes", v, len(p.RecordBatches))
		}
		if p := fetch("p", producerTopic, v); p.ErrorCode != 0 || len(p.RecordBatches) == 0 {
			t.Errorf("fetch v%d of the producer topic: %v, %d bytes", v, kerr.ErrorForCode(p.ErrorCode), len(p.RecordBatches))
		}
	}
	if p := fetch("z", zstdTopic, 10); p.ErrorCode != 0 || len(p.RecordBatches) == 0 {
		t.Errorf("fetch v10 of the zstd topic: %v, %d bytes", kerr.ErrorForCode(p.ErrorCode), len(p.RecordBatches))
	}
}

// A zstd batch in a Produce below v7 (which predates zstd, KIP-110) gets
// UNSUPPORTED_COMPRESSION_TYPE and is not written, as Kafka answers; v7 is
// served.
func TestProduceZstdBelowV7(t *testing.T) {
	tb := startBroker(t, t.TempDir(), nil)
	tb.createTopicWith(t, "z7")
	rc := dialRaw(t, tb.addr)
	var bb engine.BatchBuilder
	bb.Add(engine.Record{Timestamp: 1, Value: []byte("zstd")})
	b, err := bb.BuildCompressed(engine.CompressionZstd)
	if err != nil {
		t.Fatal(err)
	}
	for v := int16(3); v < 7; v++ {
		code, _ := rc.produceCode(v, "z7", 0, bytes.Clone(b))
		wantCode(t, fmt.Sprintf("produce v%d of a zstd batch", v), code, kerr.UnsupportedCompressionType)
	}
	if hw := tb.topic("z7").Partitions[0].HighWatermark(); hw != 0 {
		t.Fatalf("refused zstd batches were written: the partition ends at %d", hw)
	}
	code, _ := rc.produceCode(7, "z7", 0, bytes.Clone(b))
	wantCode(t, "produce v7 of a zstd batch", code, nil)
}
