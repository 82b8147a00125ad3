package wire

// A Fetch response is written by hand, not through kmsg, so that record
// bytes never pass through a buffer: everything but the records is encoded
// into one scratch buffer, and each partition's records are streamed from an
// io.WriterTo (the engine's view, which uses sendfile on a TCP connection)
// between the buffer's pieces. The layout, for versions 4 to 17 (flexible
// from 12: compact arrays and strings are uvarint length+1, and every
// structure ends with a tagged-field section, here always empty):
//
//	size int32 | correlation_id int32 | [header tags]
//	throttle_time_ms int32 (v1+) | error_code int16 (v7+) | session_id int32 (v7+)
//	responses: array of
//	  topic string (v4-12) | topic_id uuid (v13+)
//	  partitions: array of
//	    partition_index int32 | error_code int16 | high_watermark int64
//	    last_stable_offset int64 | log_start_offset int64 (v5+)
//	    aborted_transactions nullable array (never null here) of
//	      producer_id int64 | first_offset int64 | [tags]
//	    preferred_read_replica int32 (v11+)
//	    records: nullable bytes (int32 length, or uvarint length+1 when flexible)
//	    [tags]
//	  [tags]
//	[tags]

import (
	"encoding/binary"
	"io"
)

// RecordSource is a run of record-batch bytes of known length.
type RecordSource interface {
	io.WriterTo
	Len() int64
}

// FetchPartition is one partition of a Fetch response.
type FetchPartition struct {
	Partition        int32
	ErrorCode        int16
	HighWatermark    int64
	LastStableOffset int64
	LogStartOffset   int64
	Records          RecordSource // nil: no records (an empty record set)
	// Aborted are the transactions aborted in the records' range, oldest
	// first, for a read_committed fetch (empty otherwise).
	Aborted []AbortedTxn
	// Diverging (v12+, a tagged field) tells a follower that its log
	// diverged from the leader's: the leader's last epoch at or below the
	// follower's last fetched epoch, and where it ends (KIP-320).
	Diverging          bool
	DivergingEpoch     int32
	DivergingEndOffset int64
}

// AbortedTxn is one aborted transaction of a Fetch response: producer
// ProducerID's records from FirstOffset on, up to its abort marker, are to
// be dropped by a read_committed consumer.
type AbortedTxn struct {
	ProducerID  int64
	FirstOffset int64
}

// FetchTopic is one topic of a Fetch response.
type FetchTopic struct {
	Topic      string
	TopicID    [16]byte
	Partitions []FetchPartition
}

// FetchResponse is a Fetch response to write with FetchWriter.Write.
type FetchResponse struct {
	Version        int16
	ThrottleMillis int32
	ErrorCode      int16
	SessionID      int32
	Topics         []FetchTopic
}

// FetchWriter encodes Fetch responses, reusing its scratch space.
type FetchWriter struct {
	buf    []byte
	splits []split
}

type split struct {
	at  int // buf position where src's bytes go
	src RecordSource
}

// Write writes r as a whole response frame for correlationID to w and
// returns the bytes written.
func (fw *FetchWriter) Write(w io.Writer, correlationID int32, r *FetchResponse) (int64, error) {
	v := r.Version
	flex := v >= 12
	b := append(fw.buf[:0], 0, 0, 0, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(correlationID))
	if flex {
		b = append(b, 0)
	}
	fw.splits = fw.splits[:0]
	var records int64
	if v >= 1 {
		b = binary.BigEndian.AppendUint32(b, uint32(r.ThrottleMillis))
	}
	if v >= 7 {
		b = binary.BigEndian.AppendUint16(b, uint16(r.ErrorCode))
		b = binary.BigEndian.AppendUint32(b, uint32(r.SessionID))
	}
	b = appendArrayLen(b, len(r.Topics), flex)
	for i := range r.Topics {
		t := &r.Topics[i]
		if v >= 13 {
			b = append(b, t.TopicID[:]...)
		} else {
			b = appendString(b, t.Topic, flex)
		}
		b = appendArrayLen(b, len(t.Partitions), flex)
		for j := range t.Partitions {
			p := &t.Partitions[j]
			b = binary.BigEndian.AppendUint32(b, uint32(p.Partition))
			b = binary.BigEndian.AppendUint16(b, uint16(p.ErrorCode))
			b = binary.BigEndian.AppendUint64(b, uint64(p.HighWatermark))
			b = binary.BigEndian.AppendUint64(b, uint64(p.LastStableOffset))
			if v >= 5 {
				b = binary.BigEndian.AppendUint64(b, uint64(p.LogStartOffset))
			}
			b = appendArrayLen(b, len(p.Aborted), flex)
			for _, a := range p.Aborted {
				b = binary.BigEndian.AppendUint64(b, uint64(a.ProducerID))
				b = binary.BigEndian.AppendUint64(b, uint64(a.FirstOffset))
				if flex {
					b = append(b, 0)
				}
			}
			if v >= 11 {
				b = binary.BigEndian.AppendUint32(b, uint32(0xffffffff)) // preferred read replica: -1
			}
			var n int64
			if p.Records != nil {
				n = p.Records.Len()
			}
			if flex {
				b = binary.AppendUvarint(b, uint64(n)+1)
			} else {
				b = binary.BigEndian.AppendUint32(b, uint32(n))
			}
			if n > 0 {
				fw.splits = append(fw.splits, split{at: len(b), src: p.Records})
				records += n
			}
			switch {
			case flex && p.Diverging:
				// One tagged field: 0, DivergingEpoch {epoch int32,
				// end offset int64, no tags}.
				b = append(b, 1, 0, 13)
				b = binary.BigEndian.AppendUint32(b, uint32(p.DivergingEpoch))
				b = binary.BigEndian.AppendUint64(b, uint64(p.DivergingEndOffset))
				b = append(b, 0)
			case flex:
				b = append(b, 0)
			}
		}
		if flex {
			b = append(b, 0)
		}
	}
	if flex {
		b = append(b, 0)
	}
	binary.BigEndian.PutUint32(b, uint32(int64(len(b))-4+records))
	fw.buf = b

	var total int64
	from := 0
	for _, s := range fw.splits {
		n, err := w.Write(b[from:s.at])
		total += int64(n)
		if err != nil {
			return total, err
		}
		m, err := s.src.WriteTo(w)
		total += m
		if err != nil {
			return total, err
		}
		if m != s.src.Len() {
			return total, io.ErrShortWrite
		}
		from = s.at
	}
	n, err := w.Write(b[from:])
	total += int64(n)
	return total, err
}

func appendArrayLen(b []byte, n int, flex bool) []byte {
	if flex {
		return binary.AppendUvarint(b, uint64(n)+1)
	}
	return binary.BigEndian.AppendUint32(b, uint32(n))
}

func appendString(b []byte, s string, flex bool) []byte {
	if flex {
		b = binary.AppendUvarint(b, uint64(len(s))+1)
	} else {
		b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
	}
	return append(b, s...)
}
