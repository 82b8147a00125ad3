package host

import (
	"encoding/binary"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/sluice-io/sluice/engine"
)

// testPartition is partition t-0 of broker 0 over a log of its own in a
// temporary directory on fs (engine.OSFS when nil), offline: the single
// node's manager, with no fetchers and no controller, so that the tests
// step the partition's fetch answers themselves.
func testPartition(t *testing.T, fs engine.FS) *Partition {
	t.Helper()
	l, err := engine.OpenLog(t.TempDir(), engine.Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	m := New(Options{Self: 0, LagTimeMax: 30 * time.Second, Logger: slog.New(slog.DiscardHandler)})
	return m.NewPartition("t", 0, l, 1, nil)
}

// leaderPartition is testPartition made the leader at epoch 5, replicas
// {0, 1}, ISR {0}.
func leaderPartition(t *testing.T, fs engine.FS) *Partition {
	t.Helper()
	p := testPartition(t, fs)
	if err := p.BecomeLeader(Leadership{Epoch: 5, ISR: []int32{0}, Replicas: []int32{0, 1}}); err != nil {
		t.Fatal(err)
	}
	return p
}

// followerPartition is testPartition made a follower of broker 1 at epoch
// 5, replicas {0, 1}.
func followerPartition(t *testing.T) *Partition {
	t.Helper()
	p := testPartition(t, nil)
	p.BecomeFollower(1, 5, 0, []int32{0, 1})
	return p
}

// batch builds one uncompressed RecordBatch v2 of the given values (keys
// k0, k1, …).
func batch(values ...string) []byte {
	var bb engine.BatchBuilder
	now := time.Now().UnixMilli()
	for i, v := range values {
		bb.Add(engine.Record{Timestamp: now, Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(v)})
	}
	return bb.Build()
}

// replicatedBatch is batch(v) as leader 1 wrote it at base, epoch.
func replicatedBatch(base int64, epoch int32, v string) []byte {
	return replicatedBatchOf(batch(v), base, epoch)
}

// replicatedBatchOf is b as a leader wrote it at base, epoch (both fields
// outside the CRC).
func replicatedBatchOf(b []byte, base int64, epoch int32) []byte {
	binary.BigEndian.PutUint64(b[0:], uint64(base))
	binary.BigEndian.PutUint32(b[12:], uint32(epoch))
	return b
}
