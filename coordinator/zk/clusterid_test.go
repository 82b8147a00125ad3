package zk

import (
	"sync"
	"testing"

	"github.com/sluice-io/sluice/coordinator/zk/zktest"
	"github.com/sluice-io/sluice/engine"
)

// Brokers racing to create the cluster id all get the winner's, a Kafka
// Uuid in its 22-character form; asking again returns it unchanged.
func TestClusterID(t *testing.T) {
	chroot := zktest.Chroot()
	const n = 4
	clients := make([]*Client, n)
	for i := range clients {
		clients[i] = connect(t, chroot)
	}
	ids := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ids[i], errs[i] = c.ClusterID()
		}()
	}
	wg.Wait()
	for i := range ids {
		if errs[i] != nil {
			t.Fatalf("client %d: %v", i, errs[i])
		}
		if ids[i] != ids[0] {
			t.Fatalf("client %d got cluster id %q, client 0 %q", i, ids[i], ids[0])
		}
	}
	if len(ids[0]) != 22 {
		t.Fatalf("cluster id %q is not 22 characters", ids[0])
	}
	if _, err := engine.ParseTopicID(ids[0]); err != nil {
		t.Fatalf("cluster id %q is not a Kafka Uuid: %v", ids[0], err)
	}
	data, _, err := clients[0].Get(ClusterIDPath)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"version":"1","id":"` + ids[0] + `"}`; string(data) != want {
		t.Fatalf("%s holds %s, want %s", ClusterIDPath, data, want)
	}
	if again, err := connect(t, chroot).ClusterID(); err != nil || again != ids[0] {
		t.Fatalf("a later broker read %q, %v; want %q", again, err, ids[0])
	}
}
