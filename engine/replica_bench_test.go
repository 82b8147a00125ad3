package engine

import (
	"path/filepath"
	"testing"
)

// BenchmarkReplicaAppend is the log's side of replication per batch of 100
// records of 100 B: a leader's Append and a follower's AppendReplicated of
// the leader's bytes, each followed by the high-watermark update the
// replication layer makes (SetHighWatermark to the new log end), in the same
// run. Neither allocates.
func BenchmarkReplicaAppend(b *testing.B) {
	const records = 100
	for _, role := range []string{"leader", "follower"} {
		b.Run("role="+role, func(b *testing.B) {
			l, err := OpenLog(filepath.Join(b.TempDir(), "p-0"), Options{Logger: benchLogger})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			if err := l.BecomeLeader(1); err != nil {
				b.Fatal(err)
			}
			batch := benchBatch(records, 100)
			setLeaderEpoch(batch, 1)
			b.SetBytes(int64(len(batch)))
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if role == "leader" {
					_, err = l.Append(batch)
				} else {
					setBaseOffset(batch, l.EndOffset())
					_, err = l.AppendReplicated(batch)
				}
				if err != nil {
					b.Fatal(err)
				}
				l.SetHighWatermark(l.EndOffset())
			}
			reportRecords(b, records)
		})
	}
}
