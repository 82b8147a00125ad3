package broker

import (
	"errors"
	"net"
	"os"
	"syscall"
	"testing"
	"time"
)

// TestAcceptSurvivesFDExhaustion: when the process runs out of file
// descriptors, accepting fails for a while; the broker must keep its
// listener and serve again once descriptors are free, not stop accepting
// for good. The test lowers the process's descriptor limit for a moment, so
// it must not run in parallel with other tests.
func TestAcceptSurvivesFDExhaustion(t *testing.T) {
	tb := startBroker(t, t.TempDir(), nil)
	l := newLedger(t, tb, "fds")

	var orig syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &orig); err != nil {
		t.Skip(err)
	}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip(err)
	}
	low := orig
	low.Cur = uint64(len(fds) + 8)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Skip(err)
	}
	restored := false
	restore := func() {
		if !restored {
			restored = true
			if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &orig); err != nil {
				t.Fatal(err)
			}
		}
	}
	defer restore()
	// Dial until the client side itself runs out: by then the broker's
	// accept has failed with EMFILE (its descriptor comes after ours).
	var conns []net.Conn
	exhausted := false
	for range 64 {
		nc, err := net.DialTimeout("tcp", tb.addr, 2*time.Second)
		if err != nil {
			if !errors.Is(err, syscall.EMFILE) {
				t.Fatalf("dial: %v", err)
			}
			exhausted = true
			break
		}
		conns = append(conns, nc)
	}
	restore()
	for _, nc := range conns {
		nc.Close()
	}
	if !exhausted {
		t.Fatal("the descriptor limit was never reached")
	}
	select {
	case err := <-tb.done:
		tb.done <- err
		t.Fatalf("Serve returned after running out of descriptors: %v", err)
	default:
	}
	// Serving again: a new client produces and reads everything back.
	l.check(t, "descriptor exhaustion")
	select {
	case err := <-tb.done:
		tb.done <- err
		t.Fatalf("Serve returned: %v", err)
	default:
	}
}
