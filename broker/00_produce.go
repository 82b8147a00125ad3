package broker

// Produce (key 0), versions 3-11 (3 is the first that carries RecordBatch
// v2 only).
//
// Behavior:
//   - acks must be 0, 1 or -1, else INVALID_REQUIRED_ACKS. On a single node
//     the in-sync replica set is the leader alone, so -1 waits for nothing
//     more than 1.
//   - Each partition's records must be exactly one RecordBatch v2
//     (INVALID_RECORD otherwise); the engine validates it: a damaged batch
//     (length, magic, CRC) is CORRUPT_MESSAGE, a malformed one
//     INVALID_RECORD, one over max.message.bytes MESSAGE_TOO_LARGE. Unknown
//     topics and partitions get UNKNOWN_TOPIC_OR_PARTITION (Produce does not
//     create topics; Metadata does).
//   - acks=0 sends no response; if any partition failed the connection is
//     closed instead, as Kafka does, so the client notices.
//   - Records are written as the producer sent them: the engine writes the
//     base offset and leader epoch into the batch in place in the request
//     buffer and writes it with one write.
//
// Version notes: v5+ reports the log start offset; v8+ an error message.
// Transactional produce (a transactional id) is not served yet: it gets
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED.

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/engine"
	"github.com/sluice-io/sluice/wire"
)

func init() { register(0, 3, 11, handleProduce) }

func handleProduce(c *conn, h wire.Header, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.ProduceRequest)
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	failed := false
	for _, rt := range req.Topics {
		st := kmsg.NewProduceResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewProduceResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.BaseOffset, sp.LogAppendTime, sp.LogStartOffset = -1, -1, -1
			code, msg := c.b.produceOne(req, rt.Topic, &rp, &sp)
			if code != 0 {
				failed = true
				sp.ErrorCode = code
				if req.Version >= 8 && msg != "" {
					sp.ErrorMessage = &msg
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	if req.Acks == 0 {
		if failed {
			return nil, errCloseConn
		}
		return nil, nil
	}
	return resp, nil
}

// produceOne appends one partition's batch and fills its response.
func (b *Broker) produceOne(req *kmsg.ProduceRequest, topic string, rp *kmsg.ProduceRequestTopicPartition, sp *kmsg.ProduceResponseTopicPartition) (int16, string) {
	if req.Acks != 0 && req.Acks != 1 && req.Acks != -1 {
		return kerr.InvalidRequiredAcks.Code, "acks must be 0, 1 or -1"
	}
	if req.TransactionID != nil {
		return kerr.TransactionalIDAuthorizationFailed.Code, "transactions are not supported yet"
	}
	p := b.partition(topic, rp.Partition)
	if p == nil {
		return kerr.UnknownTopicOrPartition.Code, ""
	}
	records := rp.Records
	if len(records) >= engine.BatchHeaderSize {
		if hdr, err := engine.ParseBatchHeader(records); err == nil && hdr.Size() < int64(len(records)) && hdr.Size() >= engine.BatchHeaderSize {
			return kerr.InvalidRecord.Code, "a produce request must carry exactly one record batch per partition"
		}
	}
	res, err := p.log.Append(records)
	if err != nil {
		return produceError(b, p, err)
	}
	p.notify()
	sp.BaseOffset = res.FirstOffset
	sp.LogStartOffset = p.log.StartOffset()
	return 0, ""
}

// produceError maps an engine append error to Kafka's code.
func produceError(b *Broker, p *partition, err error) (int16, string) {
	switch {
	case errors.Is(err, engine.ErrBatchTooLarge):
		return kerr.MessageTooLarge.Code, err.Error()
	case errors.Is(err, engine.ErrCorrupt):
		return kerr.CorruptMessage.Code, err.Error()
	case errors.Is(err, engine.ErrInvalidBatch):
		return kerr.InvalidRecord.Code, err.Error()
	case errors.Is(err, engine.ErrClosed):
		return kerr.NotLeaderForPartition.Code, ""
	default:
		b.log.Error("append failed", "topic", p.topic, "partition", p.index, "err", err)
		return kerr.KafkaStorageError.Code, ""
	}
}
