package broker

import (
	"net"
	"testing"
	"time"

	"github.com/sluice-io/sluice/config"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkConnectionSetup: connections per second a client can open,
// each dialled, asked ApiVersions and closed, on a PLAINTEXT listener and,
// in the same run, on a SASL_PLAINTEXT listener with a SCRAM-SHA-512 login
// (SaslHandshake and two SaslAuthenticate round trips; 4096 PBKDF2
// iterations on each side, which is the cost being measured).
func BenchmarkConnectionSetup(b *testing.B) {
	tb := startBroker(b, b.TempDir(), func(c *config.Config) {
		c.Listeners = []config.ListenerConfig{{Name: "PLAINTEXT", Addr: "127.0.0.1:0"}, {Name: "SASL_PLAINTEXT", Addr: "127.0.0.1:0"}}
		c.SASL.EnabledMechanisms = []string{"SCRAM-SHA-512"}
	})
	setSCRAM(b, tb, "alice", "alice-secret")
	plain, sasl := tb.listenerAddr(b, "PLAINTEXT"), tb.listenerAddr(b, "SASL_PLAINTEXT")
	open := func(b *testing.B, addr string) *saslRaw {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			b.Fatal(err)
		}
		nc.SetDeadline(time.Now().Add(10 * time.Second))
		rc := &saslRaw{t: b, nc: nc}
		if r := rc.roundTrip(kmsg.NewPtrApiVersionsRequest()).(*kmsg.ApiVersionsResponse); r.ErrorCode != 0 {
			b.Fatalf("ApiVersions: %d", r.ErrorCode)
		}
		return rc
	}
	b.Run("plaintext", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			open(b, plain).nc.Close()
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "conns/s")
	})
	b.Run("scram-sha-512", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			rc := open(b, sasl)
			if r := rc.scramLogin("alice", "alice-secret"); r.ErrorCode != 0 {
				b.Fatalf("login: %d", r.ErrorCode)
			}
			rc.nc.Close()
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "conns/s")
	})
}
