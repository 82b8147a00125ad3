package bench

import (
	"os"
	"testing"
)

// TestMain stops the ZooKeeper the replication benchmarks start
// (cluster_test.go), if any did.
func TestMain(m *testing.M) {
	code := m.Run()
	packageZ.Stop()
	os.Exit(code)
}
