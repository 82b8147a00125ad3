package broker

import (
	"encoding/binary"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"github.com/sluice-io/sluice/config"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// header appends a request header v1 (key, version, correlation id,
// client id) and, for flexible versions, the empty tag section of v2.
func header(key, version int16, flexible bool) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(key))
	b = binary.BigEndian.AppendUint16(b, uint16(version))
	b = binary.BigEndian.AppendUint32(b, 1)
	b = binary.BigEndian.AppendUint16(b, 3)
	b = append(b, "bad"...)
	if flexible {
		b = append(b, 0)
	}
	return b
}

// sized prefixes b with its length.
func sized(b []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...)
}

// TestBadInput sends malformed or hostile input on raw connections. Framing
// violations close that connection; other problems are answered with an
// error code. After each, a well-behaved client on another connection still
// produces and consumes, and no acknowledged record is lost.
func TestBadInput(t *testing.T) {
	const maxRequest = 64 << 10
	tb := startBroker(t, t.TempDir(), func(c *config.Config) {
		c.SocketRequestMaxBytes = maxRequest
		c.MessageMaxBytes = 16 << 10
	})
	l := newLedger(t, tb, "ledger")
	// A connection open through it all, used between the cases.
	steady := dialRaw(t, tb.addr)
	rng := rand.New(rand.NewPCG(1, 2))

	closes := []struct {
		name  string
		bytes func() []byte
	}{
		{"size over the limit, no body", func() []byte { return binary.BigEndian.AppendUint32(nil, maxRequest+1) }},
		{"size 2 GiB, no body", func() []byte { return binary.BigEndian.AppendUint32(nil, 1<<31-1) }},
		{"negative size", func() []byte { return binary.BigEndian.AppendUint32(nil, 0xfffffff0) }},
		{"frame too short for a header", func() []byte { return sized([]byte{0, 18, 0}) }},
		{"empty frame", func() []byte { return sized(nil) }},
		{"HTTP request", func() []byte { return []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n") }},
		{"garbage in a small frame", func() []byte {
			b := make([]byte, 40)
			for i := range b {
				b[i] = byte(rng.Uint32())
			}
			b[0] = 0x7f // an API key that does not exist
			return sized(b)
		}},
		{"unknown API key 9999", func() []byte { return sized(append(header(9999, 0, false), 0, 0, 0, 0)) }},
		{"API key -1", func() []byte { return sized(header(-1, 0, false)) }},
		{"API key not served (ControlledShutdown)", func() []byte { return sized(append(header(7, 0, false), make([]byte, 20)...)) }},
		{"Produce v2", func() []byte { return unsupported(0, 2) }},
		{"Produce v12", func() []byte { return unsupported(0, 12) }},
		{"Fetch v3", func() []byte { return unsupported(1, 3) }},
		{"Fetch v18", func() []byte { return unsupported(1, 18) }},
		{"ListOffsets v10", func() []byte { return unsupported(2, 10) }},
		{"Metadata v13", func() []byte { return unsupported(3, 13) }},
		{"CreateTopics v8", func() []byte { return unsupported(19, 8) }},
		{"client id longer than the frame", func() []byte {
			b := header(3, 1, false)
			binary.BigEndian.PutUint16(b[8:], 500)
			return sized(b)
		}},
		{"flexible header without its tag section", func() []byte { return sized(header(3, 9, false)) }},
		{"Produce body that does not decode", func() []byte { return sized(append(header(0, 9, true), 0xff, 0xff, 0xff)) }},
		{"Metadata array longer than the frame", func() []byte {
			return sized(binary.BigEndian.AppendUint32(header(3, 1, false), 1<<30))
		}},
		{"frame over the limit with its body", func() []byte {
			req := produceReq("ledger", 0, -1, batch(strings.Repeat("x", maxRequest)))
			req.SetVersion(9)
			return kmsg.NewRequestFormatter().AppendRequest(nil, req, 1)
		}},
	}
	for _, c := range closes {
		t.Run(c.name, func(t *testing.T) {
			var before runtime.MemStats
			runtime.ReadMemStats(&before)
			rc := dialRaw(t, tb.addr)
			rc.writeMayReset(c.bytes())
			rc.expectClosed(c.name)
			var after runtime.MemStats
			runtime.ReadMemStats(&after)
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 32<<20 {
				t.Errorf("%s: %d MiB allocated", c.name, grew>>20)
			}
			l.check(t, c.name)
			steadyOK(t, steady)
		})
	}

	t.Run("truncated frames", func(t *testing.T) {
		for _, b := range [][]byte{
			{0, 0},                      // size prefix cut short
			{0, 0, 0, 100, 0, 3, 0, 12}, // body cut short
			sized(header(3, 12, true))[:10],
		} {
			rc := dialRaw(t, tb.addr)
			rc.write(b)
			rc.nc.Close()
		}
		// And one left hanging, open, mid-frame while others are served.
		hanging := dialRaw(t, tb.addr)
		hanging.write([]byte{0, 0, 1, 0, 0, 3})
		l.check(t, "truncated frames")
		steadyOK(t, steady)
	})

	answered := []struct {
		name string
		req  func() (kmsg.Request, int16)
		code func(kmsg.Response) int16
		want *kerr.Error
	}{
		{"corrupt CRC", func() (kmsg.Request, int16) {
			b := batch("a", "b")
			b[30] ^= 0x40 // the base timestamp, covered by the CRC
			return produceReq("ledger", 0, -1, b), 11
		}, produceErr, kerr.CorruptMessage},
		{"oversized record", func() (kmsg.Request, int16) {
			return produceReq("ledger", 0, 1, batch(strings.Repeat("r", 20<<10))), 11
		}, produceErr, kerr.MessageTooLarge},
		{"batch length field wrong", func() (kmsg.Request, int16) {
			b := batch("a")
			binary.BigEndian.PutUint32(b[8:], uint32(len(b)))
			return produceReq("ledger", 0, -1, b), 9
		}, produceErr, kerr.CorruptMessage},
		{"records that are not a batch", func() (kmsg.Request, int16) {
			// Shorter than a batch header: as Kafka, no batch at all.
			return produceReq("ledger", 0, -1, []byte("not a record batch")), 9
		}, produceErr, kerr.InvalidRecord},
		// Produce does not validate names: as Kafka, a topic that does
		// not exist (as no invalid name can) is UNKNOWN_TOPIC_OR_PARTITION.
		{"produce to an invalid topic name", func() (kmsg.Request, int16) {
			return produceReq("bad topic", 0, -1, batch("a")), 11
		}, produceErr, kerr.UnknownTopicOrPartition},
		{"metadata for an invalid topic name", func() (kmsg.Request, int16) {
			return metadataReq(true, "bad/topic"), 12
		}, func(r kmsg.Response) int16 { return r.(*kmsg.MetadataResponse).Topics[0].ErrorCode }, kerr.InvalidTopicException},
		{"create an invalid topic name", func() (kmsg.Request, int16) {
			return createReq(false, createTopicReq("bad\x00topic", 1, 1)), 7
		}, func(r kmsg.Response) int16 { return r.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode }, kerr.InvalidTopicException},
	}
	for _, c := range answered {
		t.Run(c.name, func(t *testing.T) {
			rc := dialRaw(t, tb.addr)
			req, v := c.req()
			resp := rc.roundTrip(req, v)
			wantCode(t, c.name, c.code(resp), c.want)
			// The connection stays open and usable.
			steadyOK(t, rc)
			l.check(t, c.name)
			steadyOK(t, steady)
		})
	}
	if p := tb.partition("ledger", 0); p.HighWatermark() != int64(len(l.values)) {
		t.Errorf("ledger holds %d records, %d were acknowledged", p.HighWatermark(), len(l.values))
	}
}

func produceErr(r kmsg.Response) int16 {
	return r.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
}

// unsupported is a well-formed request at a version the broker does not
// serve (encoded by kmsg, which knows versions beyond the broker's).
func unsupported(key, version int16) []byte {
	req := kmsg.RequestForKey(key)
	req.SetVersion(version)
	if p, ok := req.(*kmsg.ProduceRequest); ok {
		*p = *produceReq("ledger", 0, 1, batch("unsupported"))
		p.SetVersion(version)
	}
	return kmsg.NewRequestFormatter().AppendRequest(nil, req, 1)
}

// steadyOK checks a connection still gets answers.
func steadyOK(t *testing.T, rc *rawConn) {
	t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	req.ClientSoftwareName, req.ClientSoftwareVersion = "steady", "1.0"
	resp := rc.roundTrip(req, 3).(*kmsg.ApiVersionsResponse)
	if resp.ErrorCode != 0 || len(resp.ApiKeys) != len(served) {
		t.Fatalf("ApiVersions on a good connection: %v, %d keys", kerr.ErrorForCode(resp.ErrorCode), len(resp.ApiKeys))
	}
}
