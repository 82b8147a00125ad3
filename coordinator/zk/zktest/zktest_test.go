package zktest

import (
	"os"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// A started server serves clients, and its chroots keep tests apart; a
// session's ephemeral znodes go when the session ends.
func TestServer(t *testing.T) {
	var o Options
	if testing.Verbose() {
		o.Log = os.Stderr
	}
	s, err := Start(t.TempDir(), o)
	if err != nil {
		if os.Getenv("CI") == "" {
			t.Skipf("no ZooKeeper: %v", err)
		}
		t.Fatal(err)
	}
	defer s.Stop()
	conn, _, err := zk.Connect([]string{s.Addr}, 2*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	root := Chroot()
	if _, err := conn.Create(root, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Create(root+"/ephemeral", []byte("x"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	conn.Close()

	other, _, err := zk.Connect([]string{s.Addr}, 2*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if ok, _, err := other.Exists(root); err != nil || !ok {
		t.Fatalf("chroot %s: exists %v, %v", root, ok, err)
	}
	if ok, _, err := other.Exists(root + "/ephemeral"); err != nil || ok {
		t.Fatalf("an ephemeral znode outlived its session: exists %v, %v", ok, err)
	}
	if Chroot() == root {
		t.Fatal("Chroot repeated a path")
	}
}
