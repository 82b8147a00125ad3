package wire

import (
	"bytes"
	"encoding/binary"
	"io"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// recordBytes is a RecordSource over a byte slice.
type recordBytes []byte

func (r recordBytes) Len() int64 { return int64(len(r)) }
func (r recordBytes) WriteTo(w io.Writer) (int64, error) {
	n, err := w.Write(r)
	return int64(n), err
}

// Every served version of the hand-written Fetch response decodes with kmsg
// to the fields and record bytes written.
func TestFetchResponseMatchesKmsg(t *testing.T) {
	var fw FetchWriter
	for v := int16(4); v <= 17; v++ {
		id := [16]byte{1, 2, 3}
		recs := bytes.Repeat([]byte("batch"), 50)
		r := &FetchResponse{Version: v, SessionID: 0, Topics: []FetchTopic{{
			Topic: "orders", TopicID: id,
			Partitions: []FetchPartition{
				{Partition: 0, HighWatermark: 10, LastStableOffset: 8, LogStartOffset: 2, Records: recordBytes(recs),
					Aborted: []AbortedTxn{{ProducerID: 4, FirstOffset: 3}, {ProducerID: 9, FirstOffset: 5}}},
				{Partition: 1, ErrorCode: 1, HighWatermark: -1, LastStableOffset: -1, LogStartOffset: -1},
				{Partition: 2, HighWatermark: 9, LastStableOffset: 9, LogStartOffset: 0, Diverging: v >= 12, DivergingEpoch: 3, DivergingEndOffset: 7},
			},
		}}}
		var out bytes.Buffer
		n, err := fw.Write(&out, 77, r)
		if err != nil || n != int64(out.Len()) {
			t.Fatalf("v%d: wrote %d of %d: %v", v, n, out.Len(), err)
		}
		frame := out.Bytes()
		if int(binary.BigEndian.Uint32(frame)) != len(frame)-4 {
			t.Fatalf("v%d: size prefix %d, frame %d", v, binary.BigEndian.Uint32(frame), len(frame)-4)
		}
		if binary.BigEndian.Uint32(frame[4:]) != 77 {
			t.Fatalf("v%d: correlation id", v)
		}
		body := frame[8:]
		if v >= 12 {
			body = body[1:]
		}
		resp := kmsg.NewPtrFetchResponse()
		resp.SetVersion(v)
		if err := resp.ReadFrom(body); err != nil {
			t.Fatalf("v%d: kmsg cannot read it: %v", v, err)
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 3 {
			t.Fatalf("v%d: decoded %+v", v, resp)
		}
		tp := resp.Topics[0]
		if v >= 13 && tp.TopicID != id || v < 13 && tp.Topic != "orders" {
			t.Fatalf("v%d: topic %q %v", v, tp.Topic, tp.TopicID)
		}
		p0, p1 := tp.Partitions[0], tp.Partitions[1]
		if !bytes.Equal(p0.RecordBatches, recs) || p0.HighWatermark != 10 || (v >= 5 && p0.LogStartOffset != 2) {
			t.Fatalf("v%d: partition 0 decoded as %+v", v, p0)
		}
		if p0.LastStableOffset != 8 || len(p0.AbortedTransactions) != 2 || p0.AbortedTransactions[0].ProducerID != 4 ||
			p0.AbortedTransactions[0].FirstOffset != 3 || p0.AbortedTransactions[1].ProducerID != 9 || p0.AbortedTransactions[1].FirstOffset != 5 {
			t.Fatalf("v%d: partition 0's transactions decoded as %d, %+v", v, p0.LastStableOffset, p0.AbortedTransactions)
		}
		if p1.ErrorCode != 1 || len(p1.RecordBatches) != 0 || len(p1.AbortedTransactions) != 0 {
			t.Fatalf("v%d: partition 1 decoded as %+v", v, p1)
		}
		de := tp.Partitions[2].DivergingEpoch
		if v >= 12 && (de.Epoch != 3 || de.EndOffset != 7) || v < 12 && de.Epoch != -1 {
			t.Fatalf("v%d: partition 2's diverging epoch decoded as %+v", v, de)
		}
		if v >= 12 && (p0.DivergingEpoch.Epoch != -1 || p0.DivergingEpoch.EndOffset != -1) {
			t.Fatalf("v%d: partition 0 has a diverging epoch %+v", v, p0.DivergingEpoch)
		}
		if v >= 11 && p0.PreferredReadReplica != -1 {
			t.Fatalf("v%d: preferred read replica %d", v, p0.PreferredReadReplica)
		}
	}
}
