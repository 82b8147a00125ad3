package txn

// The records of __transaction_state, Kafka's TransactionLog format, which
// sluice reads and writes with kmsg's generated TxnMetadataKey and
// TxnMetadataValue. Every integer is big-endian.
//
// Key, version 0 (never flexible):
//
//	+-------------+--------------------+------------------------+
//	| version i16 | id length i16      | transactional id bytes |
//	|      0      |                    | (UTF-8)                |
//	+-------------+--------------------+------------------------+
//
// Value, version 0 (classic) or 1 (flexible, KIP-915; Kafka 3.5+ writes
// it and so does sluice by default):
//
//	version i16 | producer id i64 | producer epoch i16 | timeout ms i32 |
//	state i8 (State's ids) | partitions: array of {topic string,
//	partition ids array of i32} | last update ms i64 | start ms i64
//
// In version 1 strings and arrays are compact (uvarint length+1, 0 for
// null) and the value and each topic entry end with a tagged-field section
// (sluice writes it empty; Kafka 4.0's KIP-890 tags are not written). The
// partitions array is null in the Empty state and grouped by topic
// otherwise, as Kafka's TransactionLog.valueToBytes. A null value (a
// tombstone) removes the transactional id: written when it expires (Dead).
// These layouts are Kafka's wire format and must not change.

import (
	"fmt"

	"github.com/sluice-io/sluice/engine"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// EncodeKey returns the key of a transactional id's records.
func EncodeKey(transactionalID string) []byte {
	k := kmsg.TxnMetadataKey{Version: 0, TransactionalID: transactionalID}
	return k.AppendTo(nil)
}

// EncodeValue returns the value recording m in the given value version (0
// or 1).
func EncodeValue(m Metadata, version int16) []byte {
	v := kmsg.NewTxnMetadataValue()
	v.Version = version
	v.ProducerID, v.ProducerEpoch, v.TimeoutMillis = m.ProducerID, m.Epoch, m.TimeoutMs
	v.State = kmsg.TransactionState(m.State)
	v.LastUpdateTimestamp, v.StartTimestamp = m.UpdateMs, m.StartMs
	if m.State != Empty {
		v.Topics = []kmsg.TxnMetadataValueTopic{} // an empty array, not null
		for _, p := range m.Partitions {
			if n := len(v.Topics); n == 0 || v.Topics[n-1].Topic != p.Topic {
				v.Topics = append(v.Topics, kmsg.TxnMetadataValueTopic{Topic: p.Topic})
			}
			t := &v.Topics[len(v.Topics)-1]
			t.Partitions = append(t.Partitions, p.Partition)
		}
	}
	return v.AppendTo(nil)
}

// DecodeRecord parses one __transaction_state record. A nil value is a
// tombstone: ok is true and m holds only the transactional id.
func DecodeRecord(key, value []byte) (m Metadata, tombstone bool, err error) {
	var k kmsg.TxnMetadataKey
	if err := k.ReadFrom(key); err != nil || k.Version != 0 {
		return m, false, fmt.Errorf("%w: key (%d bytes) is not a version 0 transaction key", ErrCorrupt, len(key))
	}
	m.TransactionalID = k.TransactionalID
	if value == nil {
		return m, true, nil
	}
	var v kmsg.TxnMetadataValue
	if err := v.ReadFrom(value); err != nil || v.Version < 0 || v.Version > 1 {
		return m, false, fmt.Errorf("%w: value of %q (%d bytes) does not parse as version 0 or 1", ErrCorrupt, k.TransactionalID, len(value))
	}
	m.ProducerID, m.Epoch, m.TimeoutMs = v.ProducerID, v.ProducerEpoch, v.TimeoutMillis
	m.State, m.UpdateMs, m.StartMs = State(v.State), v.LastUpdateTimestamp, v.StartTimestamp
	m.LastProducerID, m.LastEpoch = -1, -1
	if m.State < Empty || m.State > PrepareEpochFence {
		return m, false, fmt.Errorf("%w: value of %q has state %d", ErrCorrupt, k.TransactionalID, v.State)
	}
	var ps []engine.Partition
	for _, t := range v.Topics {
		for _, p := range t.Partitions {
			ps = append(ps, engine.Partition{Topic: t.Topic, Partition: p})
		}
	}
	m.Partitions = union(nil, ps)
	return m, false, nil
}
