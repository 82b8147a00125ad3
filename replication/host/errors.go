package host

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-io/sluice/engine"
)

// ErrorCode is the Kafka code of an error the partition decided (a kerr
// value: the replication core's, the owner's refusals), UNKNOWN_SERVER_ERROR
// for any other.
func ErrorCode(err error) int16 {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return kerr.UnknownServerError.Code
}

// AppendError maps an error of AppendAsLeader to Kafka's code and the
// message to answer with; an error it does not know is logged and answered
// KAFKA_STORAGE_ERROR.
func (p *Partition) AppendError(err error) (int16, string) {
	var ke *kerr.Error
	switch {
	case errors.As(err, &ke):
		// The owner's refusals (owner.go): NOT_LEADER_OR_FOLLOWER, and
		// NOT_ENOUGH_REPLICAS checked again under its lock.
		return ke.Code, err.Error()
	case errors.Is(err, engine.ErrBatchTooLarge):
		return kerr.MessageTooLarge.Code, err.Error()
	case errors.Is(err, engine.ErrCorrupt):
		return kerr.CorruptMessage.Code, err.Error()
	case errors.Is(err, engine.ErrInvalidBatch):
		return kerr.InvalidRecord.Code, err.Error()
	case errors.Is(err, engine.ErrOutOfOrderSequence):
		return kerr.OutOfOrderSequenceNumber.Code, err.Error()
	case errors.Is(err, engine.ErrInvalidProducerEpoch):
		return kerr.InvalidProducerEpoch.Code, err.Error()
	case errors.Is(err, engine.ErrInvalidTxnState):
		return kerr.InvalidTxnState.Code, err.Error()
	case errors.Is(err, engine.ErrCoordinatorFenced):
		return kerr.TransactionCoordinatorFenced.Code, err.Error()
	case errors.Is(err, engine.ErrClosed):
		return kerr.NotLeaderForPartition.Code, ""
	default:
		p.m.o.Logger.Error("append failed", "topic", p.Topic, "partition", p.Index, "err", err)
		return kerr.KafkaStorageError.Code, ""
	}
}
