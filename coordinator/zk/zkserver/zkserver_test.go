package zkserver

import (
	"os"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// A server started again in the same directory serves the znodes the first
// one stored (a local cluster restarted keeps its metadata), and Exited
// reports the process's end.
func TestRestartKeepsData(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	conn, _, err := zk.Connect([]string{s.Addr}, 2*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Create("/kept", []byte("v"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	s.Stop()
	select {
	case <-s.Exited():
	default:
		t.Fatal("Exited is still open after Stop")
	}

	s = startServer(t, dir)
	defer s.Stop()
	conn, _, err = zk.Connect([]string{s.Addr}, 2*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	data, _, err := conn.Get("/kept")
	if err != nil || string(data) != "v" {
		t.Fatalf("/kept after a restart: %q, %v", data, err)
	}
}

func startServer(t *testing.T, dir string) *Server {
	t.Helper()
	var o Options
	if testing.Verbose() {
		o.Log = os.Stderr
	}
	s, err := Start(dir, o)
	if err != nil {
		if os.Getenv("CI") == "" {
			t.Skipf("no ZooKeeper: %v", err)
		}
		t.Fatal(err)
	}
	return s
}
