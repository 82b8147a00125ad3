package broker

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// librdkafka's transactional producer and read_committed consumer
// (testdata/txn_librdkafka.py, Debian's python3-confluent-kafka): a
// committed transaction is read by both isolation levels, an aborted one
// by read_uncommitted only. Without the module the test fails when $CI is
// set and is skipped otherwise.
func TestTxnLibrdkafka(t *testing.T) {
	python := requireConfluentKafka(t)
	tb := startBroker(t, t.TempDir(), nil)
	tb.createTopic(t, "rdkafka-txn", 2)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, python, "testdata/txn_librdkafka.py", tb.addr, "rdkafka-txn").CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("txn_librdkafka.py: %v (ctx %v)", err, ctx.Err())
	}
	if !strings.Contains(string(out), "read_uncommitted: 10 records") {
		t.Fatal("the script did not check read_uncommitted")
	}
}

// requireConfluentKafka returns the Python interpreter that has Debian's
// python3-confluent-kafka; without the module the test fails when $CI is
// set and is skipped otherwise.
func requireConfluentKafka(t *testing.T) string {
	t.Helper()
	// Debian's interpreter, which has Debian's module (a python3 earlier
	// in $PATH, such as pyenv's, does not).
	python := "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		python = "python3"
	}
	if err := exec.Command(python, "-c", "import confluent_kafka").Run(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("python3-confluent-kafka is not installed (apt-get install python3-confluent-kafka): %v", err)
		}
		t.Skipf("python3-confluent-kafka is not installed: %v", err)
	}
	return python
}
