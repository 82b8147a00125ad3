package main

// A broker's copy of a partition read from its segment files, as the
// subprocess replication tests compare replicas: the .log files of
// <data>/<topic>-<partition>/, in base-offset order (their names, the base
// offset in 20 zero-padded digits, sort so), each holding RecordBatch v2
// batches back to back from position 0 (engine/segment.go, engine/batch.go):
//
//	offset  size  field
//	     0     8  baseOffset           int64, big-endian
//	     8     4  batchLength          int32, the bytes after this field
//	    12     4  partitionLeaderEpoch int32
//	    17     4  crc                  uint32, CRC-32C of bytes [21, end)
//	    23     4  lastOffsetDelta      int32
//
// The active segment's file runs on past its logical end into
// preallocated zeros, and a batch being written may be there in part: the
// reader stops at a zero batch length, a batch the file does not hold
// whole, or one whose CRC does not match yet.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"regexp"
)

// logBatch is one batch of a replicaLog.
type logBatch struct {
	base, last int64 // its first and last offset
	epoch      int32 // partitionLeaderEpoch
	pos        int   // where it starts in replicaLog.bytes
}

// replicaLog is one broker's copy of a partition.
type replicaLog struct {
	bytes   []byte // every batch, back to back
	batches []logBatch
}

// end is the offset after the last batch (0 for an empty log).
func (l replicaLog) end() int64 {
	if len(l.batches) == 0 {
		return 0
	}
	return l.batches[len(l.batches)-1].last + 1
}

// epochStart is where the first batch of an epoch above epoch starts: its
// base offset and its position in l.bytes; ok is false when there is none.
func (l replicaLog) epochStart(above int32) (base int64, pos int, ok bool) {
	for _, b := range l.batches {
		if b.epoch > above {
			return b.base, b.pos, true
		}
	}
	return 0, 0, false
}

var segmentLogName = regexp.MustCompile(`^[0-9]{20}\.log$`)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// logOf reads broker id's copy of topic-partition from its segment files.
func (c *testCluster) logOf(id int32, topic string, partition int32) (replicaLog, error) {
	dir := filepath.Join(c.brokers[id].data, fmt.Sprintf("%s-%d", topic, partition))
	entries, err := os.ReadDir(dir)
	if err != nil {
		return replicaLog{}, err
	}
	var l replicaLog
	for _, e := range entries { // sorted by name, so by base offset
		if !segmentLogName.MatchString(e.Name()) {
			continue
		}
		path := filepath.Join(dir, e.Name())
		data, err := os.ReadFile(path)
		if err != nil {
			return replicaLog{}, err
		}
		for pos := 0; pos+61 <= len(data); {
			n := int(int32(binary.BigEndian.Uint32(data[pos+8:])))
			if n <= 0 || pos+12+n > len(data) {
				break
			}
			b := data[pos : pos+12+n]
			if crc32.Checksum(b[21:], castagnoli) != binary.BigEndian.Uint32(b[17:]) {
				break // being written
			}
			base := int64(binary.BigEndian.Uint64(b))
			if base < l.end() {
				return replicaLog{}, fmt.Errorf("%s at position %d: batch at offset %d after one ending at %d", path, pos, base, l.end())
			}
			l.batches = append(l.batches, logBatch{
				base:  base,
				last:  base + int64(int32(binary.BigEndian.Uint32(b[23:]))),
				epoch: int32(binary.BigEndian.Uint32(b[12:])),
				pos:   len(l.bytes),
			})
			l.bytes = append(l.bytes, b...)
			pos += len(b)
		}
	}
	return l, nil
}

// waitLogsEqual polls until the copies of topic-partition on brokers ids
// hold the same bytes and check accepts them, and returns that log.
func (c *testCluster) waitLogsEqual(topic string, partition int32, ids []int32, check func(replicaLog) error) replicaLog {
	c.t.Helper()
	var first replicaLog
	poll(c.t, fmt.Sprintf("the copies of %s-%d on brokers %v byte-identical", topic, partition, ids), func() error {
		var errs []error
		for i, id := range ids {
			l, err := c.logOf(id, topic, partition)
			switch {
			case err != nil:
			case i == 0:
				first = l
				err = check(l)
			case !bytes.Equal(l.bytes, first.bytes):
				err = fmt.Errorf("%d bytes to offset %d, broker %d's %d bytes to offset %d: not the same (first difference at byte %d)",
					len(l.bytes), l.end(), ids[0], len(first.bytes), first.end(), firstDifference(l.bytes, first.bytes))
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("broker %d: %w", id, err))
			}
		}
		return errors.Join(errs...)
	})
	return first
}

// firstDifference is the first index where a and b differ.
func firstDifference(a, b []byte) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// wantEnd is a waitLogsEqual check: the log ends at end.
func wantEnd(end int64) func(replicaLog) error {
	return func(l replicaLog) error {
		if l.end() != end {
			return fmt.Errorf("log ends at offset %d, want %d", l.end(), end)
		}
		return nil
	}
}

// holding says which of values occur in l's bytes (the tests that ask
// write their records uncompressed, so values appear as they are).
func (l replicaLog) holding(values ...string) []string {
	var out []string
	for _, v := range values {
		if bytes.Contains(l.bytes, []byte(v)) {
			out = append(out, v)
		}
	}
	return out
}

// valuesOf returns prefix followed by 0 to n-1, zero-padded to 4 digits
// so that no value holds another.
func valuesOf(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%04d", prefix, i)
	}
	return out
}
