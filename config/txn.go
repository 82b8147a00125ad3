package config

import (
	"strconv"
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

// TxnStateTopicConfigs are the configs __transaction_state is created
// with, Kafka's (TransactionLog.transactionTopicConfigs):
// cleanup.policy=compact, compression.type=uncompressed,
// min.insync.replicas=transaction.state.log.min.isr (1 on a single node),
// segment.bytes=transaction.state.log.segment.bytes and
// unclean.leader.election.enable=false.
func TxnStateTopicConfigs(tc TxnConfig, single bool) map[string]string {
	minISR := tc.StateMinISR
	if single {
		minISR = 1
	}
	return map[string]string{
		"cleanup.policy":                 "compact",
		"compression.type":               "uncompressed",
		"min.insync.replicas":            strconv.Itoa(int(minISR)),
		"segment.bytes":                  strconv.FormatInt(tc.StateSegmentBytes, 10),
		"unclean.leader.election.enable": "false",
	}
}
