package host

// A client's batch as its partition's leader takes it (Kafka's
// Partition.appendRecordsToLeader with the checks of LogValidator and
// ReplicaManager before it): the rules each refusal follows are written in
// broker/00_produce.go, whose handler calls Produce once per partition,
// and CheckTransactional once per request.

import (
	"errors"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/engine"
)

// Produce is one partition's part of a Produce request.
type Produce struct {
	Records []byte
	Version int16 // the request's
	Acks    int16
	Guard   engine.VerificationGuard // the batch's transaction verification, 0 for most
	// Internal: the topic is one only the broker writes (__consumer_offsets,
	// __transaction_state).
	Internal bool
}

// Produce checks a client's batch and appends it as leader, without
// waiting for the flush policy or the replicas. It returns the code and
// message refusing it, and for a compacted topic's keyless records their
// error records.
func (p *Partition) Produce(pr Produce) (res engine.AppendResult, code int16, msg string, recErrs []kmsg.ProduceResponseTopicPartitionErrorRecord) {
	records := pr.Records
	// The batch's header, read once for the checks below; a batch too
	// short or damaged to have one is refused by the append.
	hdr, hdrErr := engine.ParseBatchHeader(records)
	hasHeader := hdrErr == nil
	if hasHeader && pr.Version < 7 && hdr.Compression() == engine.CompressionZstd {
		// As Kafka's ProduceRequest.validateRecords: zstd came with v7
		// (KIP-110).
		return res, kerr.UnsupportedCompressionType.Code, fmt.Sprintf("Produce requests with version %d are not allowed to use ZStandard compression", pr.Version), nil
	}
	if pr.Internal {
		// As Kafka's ReplicaManager: only the broker writes its internal
		// topics (a client record in __consumer_offsets would be read as
		// group state at the next start).
		return res, kerr.InvalidTopicException.Code, "Cannot append to internal topic " + p.Topic, nil
	}
	if pr.Acks == -1 {
		if err := p.CheckAcksAll(); err != nil {
			return res, ErrorCode(err), fmt.Sprintf("%s-%d: %v (min.insync.replicas=%d)", p.Topic, p.Index, err, p.MinInsync()), nil
		}
	}
	if hasHeader && hdr.Size() < int64(len(records)) && hdr.Size() >= engine.BatchHeaderSize {
		return res, kerr.InvalidRecord.Code, "a produce request must carry exactly one record batch per partition", nil
	}
	if hasHeader && hdr.Control() && len(records) <= p.Log.Options().MaxBatchBytes {
		// As Kafka's LogValidator.validateBatch, after the checks of size
		// and damage (which the append reports).
		if _, err := engine.ValidateBatch(records); err == nil {
			return res, kerr.InvalidRecord.Code, fmt.Sprintf("Clients are not allowed to write control records in topic partition %s-%d", p.Topic, p.Index), nil
		}
	}
	// The keys are checked after the size, as Kafka checks max.message.bytes
	// before it validates records: the append refuses an oversized batch.
	if p.Compacted.Load() && len(records) <= p.Log.Options().MaxBatchBytes {
		if code, msg, recErrs := p.checkKeys(records); code != 0 {
			return res, code, msg, recErrs
		}
	}
	res, err := p.AppendAsLeader(records, AppendHow{Guard: pr.Guard, AcksAll: pr.Acks == -1})
	if err != nil {
		code, msg := p.AppendError(err)
		return res, code, msg, nil
	}
	return res, 0, "", nil
}

// checkKeys refuses a batch for a compacted topic that holds records
// without a key, as Kafka's LogValidator.validateKey does: every keyless
// record is an error record (its index in the batch), and the message
// shows the first three, as its processRecordErrors words it. A batch
// that cannot be read (corrupt, or not decompressing) gets the error its
// append would.
func (p *Partition) checkKeys(batch []byte) (int16, string, []kmsg.ProduceResponseTopicPartitionErrorRecord) {
	var recErrs []kmsg.ProduceResponseTopicPartitionErrorRecord
	why := fmt.Sprintf("Compacted topic cannot accept message without key in topic partition %s-%d.", p.Topic, p.Index)
	it := engine.NewRecordIterator(batch)
	for i := int32(0); it.Next(); i++ {
		if it.Record().Key == nil {
			e := kmsg.NewProduceResponseTopicPartitionErrorRecord()
			e.RelativeOffset, e.ErrorMessage = i, &why
			recErrs = append(recErrs, e)
		}
	}
	if err := it.Err(); err != nil {
		if errors.Is(err, engine.ErrBatchTooLarge) {
			return kerr.MessageTooLarge.Code, err.Error(), nil
		}
		return kerr.CorruptMessage.Code, err.Error(), nil
	}
	if len(recErrs) == 0 {
		return 0, "", nil
	}
	shown := make([]string, 0, 3)
	for _, e := range recErrs[:min(3, len(recErrs))] {
		shown = append(shown, fmt.Sprintf("RecordError(batchIndex=%d, message='%s')", e.RelativeOffset, *e.ErrorMessage))
	}
	msg := fmt.Sprintf("One or more records have been rejected due to %d record errors in total, and only showing the first three errors at most: [%s]",
		len(recErrs), strings.Join(shown, ", "))
	return kerr.InvalidRecord.Code, msg, recErrs
}

// HasTransactional reports whether any batch of req is transactional.
func HasTransactional(req *kmsg.ProduceRequest) bool {
	for ti := range req.Topics {
		for pi := range req.Topics[ti].Partitions {
			if h, err := engine.ParseBatchHeader(req.Topics[ti].Partitions[pi].Records); err == nil && h.Transactional() {
				return true
			}
		}
	}
	return false
}

// CheckTransactional is the check of the whole request Kafka makes before
// any partition is appended: transactional batches need a transactional id
// (KafkaApis.handleProduceRequest: TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
// and may carry only one producer id and epoch
// (ReplicaManager.handleProduceAppend: INVALID_PRODUCER_ID_MAPPING). It
// returns the code every partition is answered, or 0.
func CheckTransactional(req *kmsg.ProduceRequest) int16 {
	var pid int64 = -1
	var epoch int16 = -1
	for ti := range req.Topics {
		for pi := range req.Topics[ti].Partitions {
			h, err := engine.ParseBatchHeader(req.Topics[ti].Partitions[pi].Records)
			if err != nil || !h.Transactional() {
				continue
			}
			if req.TransactionID == nil {
				return kerr.TransactionalIDAuthorizationFailed.Code
			}
			if h.ProducerID < 0 {
				continue
			}
			if pid >= 0 && (h.ProducerID != pid || h.ProducerEpoch != epoch) {
				return kerr.InvalidProducerIDMapping.Code
			}
			pid, epoch = h.ProducerID, h.ProducerEpoch
		}
	}
	return 0
}
