package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// TxnConfig configures the transaction coordinator and its internal topic,
// __transaction_state, with Kafka's keys. Zero fields take Kafka's
// defaults.
type TxnConfig struct {
	MaxTimeout        time.Duration // transaction.max.timeout.ms; default 15 min
	IDExpiration      time.Duration // transactional.id.expiration.ms; default 7 days
	AbortCheck        time.Duration // transaction.abort.timed.out.transaction.cleanup.interval.ms; default 10 s
	ExpireCheck       time.Duration // transaction.remove.expired.transaction.cleanup.interval.ms; default 1 h
	StatePartitions   int32         // transaction.state.log.num.partitions; default 50
	StateReplication  int16         // transaction.state.log.replication.factor; default 3 (1 on a single node)
	StateMinISR       int32         // transaction.state.log.min.isr; default 2 (1 on a single node)
	StateSegmentBytes int64         // transaction.state.log.segment.bytes; default 100 MiB
	// PartitionVerification is transaction.partition.verification.enable
	// (KIP-890, static): a partition leader verifies with the transaction
	// coordinator that a transactional batch's partition is in its
	// transaction before the batch opens the transaction there
	// (txnverify.go). Default true.
	PartitionVerification *bool
}

// VerifyPartitions reports transaction.partition.verification.enable.
func (t TxnConfig) VerifyPartitions() bool {
	return t.PartitionVerification == nil || *t.PartitionVerification
}

func (t TxnConfig) WithDefaults() TxnConfig {
	if t.MaxTimeout <= 0 {
		t.MaxTimeout = 15 * time.Minute
	}
	if t.IDExpiration <= 0 {
		t.IDExpiration = 7 * 24 * time.Hour
	}
	if t.AbortCheck <= 0 {
		t.AbortCheck = 10 * time.Second
	}
	if t.ExpireCheck <= 0 {
		t.ExpireCheck = time.Hour
	}
	if t.StatePartitions <= 0 {
		t.StatePartitions = 50
	}
	if t.StateReplication <= 0 {
		t.StateReplication = 3
	}
	if t.StateMinISR <= 0 {
		t.StateMinISR = 2
	}
	if t.StateSegmentBytes <= 0 {
		t.StateSegmentBytes = 100 << 20
	}
	return t
}

// txnKeys are the keys TxnConfig.apply reads.
var txnKeys = map[string]bool{
	"transaction.max.timeout.ms":                                  true,
	"transactional.id.expiration.ms":                              true,
	"transaction.abort.timed.out.transaction.cleanup.interval.ms": true,
	"transaction.remove.expired.transaction.cleanup.interval.ms":  true,
	"transaction.state.log.num.partitions":                        true,
	"transaction.state.log.replication.factor":                    true,
	"transaction.state.log.min.isr":                               true,
	"transaction.state.log.segment.bytes":                         true,
	"transaction.partition.verification.enable":                   true,
}

// Apply sets the field a transaction key names; ok is false for other
// keys. Every value but the boolean's must be a positive integer, as
// Kafka's validators (atLeast(1)) require; the boolean is true or false in
// any case, as Kafka's ConfigDef reads it.
func (t *TxnConfig) Apply(k, v string) (ok bool, err error) {
	if !txnKeys[k] {
		return false, nil
	}
	if k == "transaction.partition.verification.enable" {
		on := strings.EqualFold(strings.TrimSpace(v), "true")
		if !on && !strings.EqualFold(strings.TrimSpace(v), "false") {
			return true, fmt.Errorf("broker: config %s=%q: must be true or false", k, v)
		}
		t.PartitionVerification = &on
		return true, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return true, fmt.Errorf("broker: config %s=%q: not a number", k, v)
	}
	if n < 1 {
		return true, fmt.Errorf("broker: config %s=%q: must be at least 1", k, v)
	}
	ms := time.Duration(n) * time.Millisecond
	switch k {
	case "transaction.max.timeout.ms":
		t.MaxTimeout = ms
	case "transactional.id.expiration.ms":
		t.IDExpiration = ms
	case "transaction.abort.timed.out.transaction.cleanup.interval.ms":
		t.AbortCheck = ms
	case "transaction.remove.expired.transaction.cleanup.interval.ms":
		t.ExpireCheck = ms
	case "transaction.state.log.num.partitions":
		t.StatePartitions = int32(min(n, 1<<31-1))
	case "transaction.state.log.replication.factor":
		t.StateReplication = int16(min(n, 1<<15-1))
	case "transaction.state.log.min.isr":
		t.StateMinISR = int32(min(n, 1<<31-1))
	case "transaction.state.log.segment.bytes":
		t.StateSegmentBytes = n
	}
	return true, nil
}

// static adds the transaction keys the configuration sets to m, by Kafka
// name (layers.go's StaticBrokerConfigs).
func (t TxnConfig) static(m map[string]string) {
	PutNonZero(m, "transaction.max.timeout.ms", t.MaxTimeout.Milliseconds())
	PutNonZero(m, "transactional.id.expiration.ms", t.IDExpiration.Milliseconds())
	PutNonZero(m, "transaction.abort.timed.out.transaction.cleanup.interval.ms", t.AbortCheck.Milliseconds())
	PutNonZero(m, "transaction.remove.expired.transaction.cleanup.interval.ms", t.ExpireCheck.Milliseconds())
	PutNonZero(m, "transaction.state.log.num.partitions", int64(t.StatePartitions))
	PutNonZero(m, "transaction.state.log.replication.factor", int64(t.StateReplication))
	PutNonZero(m, "transaction.state.log.min.isr", int64(t.StateMinISR))
	PutNonZero(m, "transaction.state.log.segment.bytes", t.StateSegmentBytes)
	if t.PartitionVerification != nil {
		m["transaction.partition.verification.enable"] = strconv.FormatBool(*t.PartitionVerification)
	}
}
