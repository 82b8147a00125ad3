package broker

// Produce (key 0), versions 3-11 (3 is the first that carries RecordBatch
// v2 only).
//
// Behavior:
//   - acks must be 0, 1 or -1, else INVALID_REQUIRED_ACKS. acks=-1 waits
//     until the high watermark passes the batch: every in-sync replica has
//     it (replication/host/driver.go; on a single node the leader alone, so nothing more
//     than 1).
//   - Each partition's records must be exactly one RecordBatch v2
//     (INVALID_RECORD otherwise); the engine validates it: a damaged batch
//     (length, magic, CRC) is CORRUPT_MESSAGE, a malformed one
//     INVALID_RECORD, one over max.message.bytes MESSAGE_TOO_LARGE. Unknown
//     topics and partitions get UNKNOWN_TOPIC_OR_PARTITION (Produce does not
//     create topics; Metadata does). Internal topics (__consumer_offsets)
//     get INVALID_TOPIC_EXCEPTION: only the broker writes them, as in Kafka.
//   - acks=-1 with fewer in-sync replicas than the topic's
//     min.insync.replicas gets NOT_ENOUGH_REPLICAS before the append (on a
//     single node whenever the minimum is above 1), and
//     NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR fell below it while the
//     produce waited; REQUEST_TIMED_OUT at the request's timeout.
//   - A topic whose cleanup.policy includes compact refuses a batch holding
//     any record without a key (a null key), as Kafka's LogValidator does:
//     INVALID_RECORD, one error record per keyless record ("Compacted topic
//     cannot accept message without key in topic partition T-P.") and
//     Kafka's summary message. A compressed batch is decompressed to check
//     its keys; topics that do not compact skip the check and its cost.
//   - acks=0 sends no response; if any partition failed the connection is
//     closed instead, as Kafka does, so the client notices.
//   - Records are written as the producer sent them: the engine writes the
//     base offset and leader epoch into the batch in place in the request
//     buffer and writes it with one write (compression.type=producer, the
//     default, or a batch already in the topic's codec).
//   - A topic (or broker) compression.type naming a codec, or uncompressed,
//     has a batch in another codec recompressed, or decompressed, before it
//     is appended, as Kafka's LogValidator does: the records are checked and
//     re-encoded at the topic's compression.<codec>.level, then offsets,
//     epoch and LogAppendTime are set as for any batch (engine/recompress.go).
//     This runs here, on the connection's goroutine, outside the log's lock.
//     Records that do not decompress are CORRUPT_MESSAGE, malformed ones
//     INVALID_RECORD, a batch over max.message.bytes once rebuilt
//     MESSAGE_TOO_LARGE. Control batches are refused (INVALID_RECORD), as
//     Kafka refuses them from clients.
//   - Idempotent producers (a batch with a producer id, which InitProducerId
//     hands out) are checked against the partition's producer state, as
//     Kafka 3.9 does (engine/producerstate.go): a retry of one of the
//     producer's last five batches is answered with the offsets it was
//     first written at (in a LogAppendTime topic, its append time too;
//     elsewhere -1, where Kafka answers the batch's max timestamp) and not
//     written again, also after a restart; a first sequence that does
//     not follow the producer's last is OUT_OF_ORDER_SEQUENCE_NUMBER, as is
//     a new epoch not starting at 0; an older epoch is
//     INVALID_PRODUCER_EPOCH. A producer the partition does not know (new,
//     or expired after producer.id.expiration.ms) is accepted at any
//     sequence: UNKNOWN_PRODUCER_ID is never answered.
//
//   - Transactional producers, as Kafka 3.9's KafkaApis, ReplicaManager
//     and ProducerAppendInfo: a request carrying a transactional batch
//     (attribute bit 4) without a transactional id is refused whole with
//     TRANSACTIONAL_ID_AUTHORIZATION_FAILED, one whose transactional
//     batches carry more than one producer id and epoch whole with
//     INVALID_PRODUCER_ID_MAPPING; a transactional id with
//     non-transactional batches is accepted (Kafka checks nothing there).
//     A producer's first transactional batch in a partition opens its
//     transaction there (the last stable offset stops at it until the
//     coordinator's marker, 27_write_txn_markers.go); a non-transactional
//     batch from a producer whose transaction is open is
//     INVALID_TXN_STATE; an older epoch INVALID_PRODUCER_EPOCH (the
//     partition leader's answer to a fenced producer).
//   - KIP-890 (transaction.partition.verification.enable, default true):
//     the first transactional batch of a producer in a partition without
//     its open transaction is appended only once the transaction
//     coordinator confirms the partition is in the transaction; otherwise
//     INVALID_TXN_STATE, or NOT_ENOUGH_REPLICAS while the coordinator
//     cannot tell (txnverify.go), and nothing is written.
//
//   - Client quotas (clientquotas.go): the request's size counts against
//     the producer_byte_rate of its user and client id; over it, the
//     response carries throttle_time_ms and the connection is muted.
//
// Version notes: v5+ reports the log start offset; v7+ may carry zstd
// batches (below, UNSUPPORTED_COMPRESSION_TYPE, as Kafka); v8+ an error
// message.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/broker/cluster"
	"github.com/sluice-io/sluice/broker/server"
	"github.com/sluice-io/sluice/engine"
	"github.com/sluice-io/sluice/metrics"
	"github.com/sluice-io/sluice/replication/host"
	"github.com/sluice-io/sluice/security/acl"
	"github.com/sluice-io/sluice/security/quota"
	"github.com/sluice-io/sluice/wire"
)

func init() { register(0, 3, 11, handleProduce) }

func handleProduce(c *conn, h wire.Header, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.ProduceRequest)
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	failed := false
	type appended struct {
		p      *host.Partition
		res    engine.AppendResult
		ti, pi int
	}
	var done []appended
	refuseAll := host.CheckTransactional(req)
	if refuseAll == 0 && c.b.sec.acls != nil && req.TransactionID != nil && host.HasTransactional(req) &&
		!c.authorized(acl.OpWrite, acl.ResourceTransactionalID, *req.TransactionID) {
		refuseAll = kerr.TransactionalIDAuthorizationFailed.Code
	}
	var verdicts map[engine.Partition]txnVerdict // KIP-890 (txnverify.go); nil for most requests
	if refuseAll == 0 && req.TransactionID != nil {
		verdicts = c.verifyProduce(req)
	}
	for _, rt := range req.Topics {
		st := kmsg.NewProduceResponseTopic()
		st.Topic = rt.Topic
		writable := c.authorized(acl.OpWrite, acl.ResourceTopic, rt.Topic) // once per topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewProduceResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.BaseOffset, sp.LogAppendTime, sp.LogStartOffset = -1, -1, -1
			var p *host.Partition
			var res engine.AppendResult
			var code int16
			var msg string
			var recErrs []kmsg.ProduceResponseTopicPartitionErrorRecord
			switch {
			case refuseAll != 0:
				code = refuseAll
			case !writable:
				code = kerr.TopicAuthorizationFailed.Code
			default:
				var v txnVerdict
				if verdicts != nil {
					v = verdicts[engine.Partition{Topic: rt.Topic, Partition: rp.Partition}]
				}
				if v.code != 0 {
					p, _ = c.b.leaderPartition(rt.Topic, rp.Partition)
					code, msg = v.code, v.msg
				} else {
					p, res, code, msg, recErrs = c.b.produceOne(req, rt.Topic, &rp, v.guard)
				}
			}
			c.b.countProduce(p, code, res, len(rp.Records))
			if code != 0 {
				failed = true
				setProduceError(req, &sp, code, msg)
				if req.Version >= 8 {
					sp.ErrorRecords = recErrs
				}
			} else {
				sp.BaseOffset, sp.LogStartOffset, sp.LogAppendTime = res.FirstOffset, p.Log.StartOffset(), res.LogAppendTime
				done = append(done, appended{p, res, len(resp.Topics), len(st.Partitions)})
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	// Every partition is written before any waits for its flush policy, so
	// one group-commit round can cover them all.
	for _, a := range done {
		if err := a.p.Log.AwaitFlushPolicy(a.res); err != nil {
			failed = true
			a.p.Metrics.Add(metrics.FailedProduce, 1)
			sp := &resp.Topics[a.ti].Partitions[a.pi]
			code, msg := a.p.AppendError(err)
			sp.BaseOffset = -1
			setProduceError(req, sp, code, msg)
		}
		a.p.Notify()
	}
	if req.Acks == -1 {
		// acks=all: until the in-sync replicas have every batch (the high
		// watermark passes it), at most the request's timeout.
		defer c.quotaWait(time.Now()) // not request time (clientquotas.go)
		timeout := time.Duration(max(req.TimeoutMillis, 0)) * time.Millisecond
		for _, a := range done {
			sp := &resp.Topics[a.ti].Partitions[a.pi]
			if sp.ErrorCode != 0 {
				continue
			}
			if err := a.p.AwaitReplicated(a.res.LastOffset+1, timeout, c.b.life.closing); err != nil {
				failed = true
				a.p.Metrics.Add(metrics.FailedProduce, 1)
				sp.BaseOffset = -1
				setProduceError(req, sp, host.ErrorCode(err), err.Error())
			}
		}
	}
	// The producer's byte rate counts the whole request (Kafka's
	// request.sizeInBytes); throttle_time_ms is set as the response goes
	// (quotaEnd), and acks=0, answered with nothing, is still muted.
	c.quotaBytes(quota.ProducerByteRate, int64(c.q.bytes))
	if req.Acks == 0 {
		if failed {
			return nil, server.ErrClose
		}
		return nil, nil
	}
	return resp, nil
}

// countProduce counts one partition of a Produce into the metrics: a
// request, its bytes and records once appended (a duplicate's bytes, not
// its records: nothing was appended), or a failure.
func (b *Broker) countProduce(p *host.Partition, code int16, res engine.AppendResult, bytes int) {
	switch {
	case b.metrics.reg == nil:
	case p == nil:
		b.metrics.reg.FailedUnknown(metrics.FailedProduce)
	case code != 0:
		p.Metrics.Add(metrics.TotalProduce, 1)
		p.Metrics.Add(metrics.FailedProduce, 1)
	default:
		p.Metrics.Add(metrics.TotalProduce, 1)
		p.Metrics.Add(metrics.BytesIn, int64(bytes))
		if !res.Duplicate {
			p.Metrics.Add(metrics.MessagesIn, res.LastOffset-res.FirstOffset+1)
		}
	}
}

func setProduceError(req *kmsg.ProduceRequest, sp *kmsg.ProduceResponseTopicPartition, code int16, msg string) {
	sp.ErrorCode = code
	if req.Version >= 8 && msg != "" {
		sp.ErrorMessage = &msg
	}
}

// produceOne appends one partition's batch, without waiting for its flush
// policy (replication/host/produce.go checks it). recErrs are the
// per-record errors of a refused batch (keyless records in a compacted
// topic). p is the partition once found, also when the append is refused
// (its metrics count the failure). guard is the batch's transaction
// verification (txnverify.go), 0 for most batches.
func (b *Broker) produceOne(req *kmsg.ProduceRequest, topic string, rp *kmsg.ProduceRequestTopicPartition, guard engine.VerificationGuard) (p *host.Partition, res engine.AppendResult, code int16, msg string, recErrs []kmsg.ProduceResponseTopicPartitionErrorRecord) {
	if req.Acks != 0 && req.Acks != 1 && req.Acks != -1 {
		return nil, res, kerr.InvalidRequiredAcks.Code, "acks must be 0, 1 or -1", nil
	}
	p, code = b.leaderPartition(topic, rp.Partition)
	if p == nil {
		return nil, res, code, "", nil
	}
	res, code, msg, recErrs = p.Produce(host.Produce{Records: rp.Records, Version: req.Version, Acks: req.Acks, Guard: guard, Internal: cluster.IsInternal(topic)})
	return p, res, code, msg, recErrs
}
