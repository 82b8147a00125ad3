package server

import (
	"io"
	"log/slog"
	"net"
	"testing"

	"github.com/sluice-io/sluice/config"
)

// TestAdvertised: a listener advertised implicitly keeps its configured
// host with its bound port (an any-address host is localhost); an
// explicit advertised address is told as given; a listener not advertised
// is left out; an advertised address that does not parse is an error.
func TestAdvertised(t *testing.T) {
	s, err := New([]config.ListenerConfig{{Name: "PLAINTEXT", Addr: "0.0.0.0:0"}, {Name: "EXT", Addr: "127.0.0.1:0"}, {Name: "HIDDEN", Addr: "127.0.0.1:0"}},
		map[string]string{"PLAINTEXT": "PLAINTEXT", "EXT": "SASL_PLAINTEXT", "HIDDEN": "PLAINTEXT"}, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Bind(ln); err != nil {
		t.Fatal(err)
	}
	defer func() { s.Stop(); s.Close() }()
	eps, err := s.Advertised(map[string]string{"PLAINTEXT": "0.0.0.0:0", "EXT": "ext.example:9999"}, map[string]bool{"EXT": true})
	if err != nil {
		t.Fatal(err)
	}
	port := int32(ln.Addr().(*net.TCPAddr).Port)
	if len(eps) != 2 || eps[0] != (Endpoint{"PLAINTEXT", "PLAINTEXT", "localhost", port}) || eps[1] != (Endpoint{"EXT", "SASL_PLAINTEXT", "ext.example", 9999}) {
		t.Fatalf("advertised: %+v (bound port %d)", eps, port)
	}
	if _, err := s.Advertised(map[string]string{"EXT": "no-port"}, map[string]bool{"EXT": true}); err == nil {
		t.Fatal("an advertised address without a port was accepted")
	}
}
