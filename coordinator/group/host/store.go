package host

// A Store is the group coordinator's view of __consumer_offsets on a
// broker: appends to the partitions it leads (acks=all, as Kafka's
// GroupMetadataManager writes, waiting offsets.commit.timeout.ms for the
// in-sync replicas) and the reading of a partition as the coordinator
// loads it.

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-io/sluice/coordinator/group"
	"github.com/sluice-io/sluice/engine"
	rhost "github.com/sluice-io/sluice/replication/host"
)

// OffsetsTopic is Kafka's internal topic of committed offsets and group
// metadata.
const OffsetsTopic = "__consumer_offsets"

// commitTimeout is offsets.commit.timeout.ms, Kafka's default: an offset
// commit waits this long for the in-sync replicas.
const commitTimeout = 5 * time.Second

// Store is group.Store over the partitions of __consumer_offsets this
// broker leads: another is group.ErrNotLeader.
type Store struct {
	opts Options
}

// Options are a broker's collaborators for its Store.
type Options struct {
	// Leader is this broker's replica of a partition if it leads it,
	// else nil and the code a request for it is answered.
	Leader func(topic string, partition int32) (*rhost.Partition, int16)
	// VerifyTxn verifies (KIP-890) that a leader partition is in the
	// producer's transaction: group.Store's VerifyTxn.
	VerifyTxn func(p *rhost.Partition, transactionalID string, producerID int64, producerEpoch int16) (engine.VerificationGuard, int16)
	// Closing is closed as the broker shuts down: waits end.
	Closing <-chan struct{}
}

// NewStore returns the store of a broker.
func NewStore(opts Options) *Store { return &Store{opts: opts} }

func (s *Store) partition(partition int32) (*rhost.Partition, error) {
	p, code := s.opts.Leader(OffsetsTopic, partition)
	if p == nil {
		return nil, fmt.Errorf("group host: %s-%d: %w (%v)", OffsetsTopic, partition, group.ErrNotLeader, kerr.ErrorForCode(code))
	}
	return p, nil
}

// Append writes records as one batch and waits for the flush policy: on a
// single node that is acks=all.
func (s *Store) Append(partition int32, records []group.Record) error {
	return s.append(partition, records, -1, -1, false, 0)
}

// VerifyTxn verifies that partition is in the producer's transaction
// (Options.VerifyTxn).
func (s *Store) VerifyTxn(partition int32, transactionalID string, producerID int64, producerEpoch int16) (uint64, int16) {
	p, code := s.opts.Leader(OffsetsTopic, partition)
	if p == nil {
		return 0, code
	}
	guard, code := s.opts.VerifyTxn(p, transactionalID, producerID, producerEpoch)
	return uint64(guard), code
}

// AppendTxn writes records as one transactional batch of the producer, as
// Kafka's GroupMetadataManager.storeOffsets builds it (base sequence 0),
// appended as the coordinator's (no sequence check; an older producer
// epoch refused: group.ErrInvalidProducerEpoch), with the guard of
// VerifyTxn (a stale one: group.ErrInvalidTxnState).
func (s *Store) AppendTxn(partition int32, producerID int64, producerEpoch int16, guard uint64, records []group.Record) error {
	return s.append(partition, records, producerID, producerEpoch, true, engine.VerificationGuard(guard))
}

func (s *Store) append(partition int32, records []group.Record, producerID int64, producerEpoch int16, txn bool, guard engine.VerificationGuard) error {
	p, err := s.partition(partition)
	if err != nil {
		return err
	}
	var bb engine.BatchBuilder
	if txn {
		bb.SetProducer(producerID, producerEpoch, 0, true)
	}
	now := time.Now().UnixMilli()
	for _, r := range records {
		bb.Add(engine.Record{Timestamp: now, Key: r.Key, Value: r.Value})
	}
	res, err := p.AppendAsLeader(bb.Build(), rhost.AppendHow{Coordinator: txn, Guard: guard})
	switch {
	case errors.Is(err, kerr.NotLeaderForPartition):
		err = fmt.Errorf("group host: %s-%d: %w (%w)", OffsetsTopic, partition, group.ErrNotLeader, err)
	case errors.Is(err, engine.ErrInvalidProducerEpoch):
		err = fmt.Errorf("group host: %s-%d: %w: %w", OffsetsTopic, partition, group.ErrInvalidProducerEpoch, err)
	case errors.Is(err, engine.ErrInvalidTxnState):
		err = fmt.Errorf("group host: %s-%d: %w: %w", OffsetsTopic, partition, group.ErrInvalidTxnState, err)
	}
	if err == nil {
		err = p.Log.AwaitFlushPolicy(res)
	}
	p.Notify()
	if err == nil {
		// acks=all, as Kafka's group coordinator writes (offsets.commit.timeout.ms).
		err = p.AwaitReplicated(res.LastOffset+1, commitTimeout, s.opts.Closing)
	}
	return err
}

// Read calls fn for every record of a partition up to its log end, not
// the high watermark, as Kafka's group coordinator loads (FetchLogEnd): a
// new leader's high watermark is the one it learnt as a follower, which
// lags the old leader's by a fetch, so the last commits acknowledged
// before a failover sit above it; a leader's log is never truncated under
// it, so what it holds becomes committed once its followers fetch it.
// Records carry their batch's producer id and transactional flag;
// transaction markers are reported as group.Record markers.
func (s *Store) Read(partition int32, fn func(group.Record) error) error {
	p, err := s.partition(partition)
	if err != nil {
		return err
	}
	it := engine.NewRecordIterator(nil)
	return p.ReadChunks(func(buf []byte, off int64) error {
		// Runs of data batches of one kind (transactional or not, one
		// producer) are read by one iterator; a control batch is a
		// transaction marker.
		run, runStart := engine.BatchHeader{}, -1
		flush := func(end int) error {
			if runStart < 0 {
				return nil
			}
			err := readOffsetsRun(buf[runStart:end], &run, it, fn)
			runStart = -1
			return err
		}
		for pos := 0; pos < len(buf); {
			h, err := engine.ParseBatchHeader(buf[pos:])
			if err == nil && h.Size() > int64(len(buf)-pos) {
				err = fmt.Errorf("%w: a batch of %d bytes in %d", engine.ErrCorrupt, h.Size(), len(buf)-pos)
			}
			if err != nil {
				return fmt.Errorf("group host: read %s-%d at %d: %w", OffsetsTopic, partition, off, err)
			}
			if h.Control() || runStart >= 0 && (h.Transactional() != run.Transactional() || h.ProducerID != run.ProducerID) {
				if err := flush(pos); err != nil {
					return offsetsReadError(partition, off, err)
				}
			}
			if h.Control() {
				if err := readOffsetsMarker(buf[pos:pos+int(h.Size())], &h, fn); err != nil {
					return offsetsReadError(partition, h.BaseOffset, err)
				}
			} else if runStart < 0 {
				run, runStart = h, pos
			}
			off = h.LastOffset() + 1
			pos += int(h.Size())
		}
		if err := flush(len(buf)); err != nil {
			return offsetsReadError(partition, off, err)
		}
		return nil
	})
}

// offsetsReadError names the partition and offset of a storage defect;
// fn's own errors pass as they are.
func offsetsReadError(partition int32, off int64, err error) error {
	if errors.Is(err, engine.ErrCorrupt) || errors.Is(err, engine.ErrBatchTooLarge) {
		return fmt.Errorf("group host: read %s-%d at %d: %w", OffsetsTopic, partition, off, err)
	}
	return err
}

// readOffsetsMarker reports a control batch of __consumer_offsets (header
// h) to fn as its transaction marker (commit or abort); other control
// records are skipped.
func readOffsetsMarker(batch []byte, h *engine.BatchHeader, fn func(group.Record) error) error {
	if h.NumRecords == 0 {
		return nil
	}
	cr, err := engine.ParseControlBatch(batch)
	if err != nil {
		return err
	}
	switch cr.Type {
	case engine.ControlCommit:
		return fn(group.Record{ProducerID: h.ProducerID, Marker: group.MarkerCommit})
	case engine.ControlAbort:
		return fn(group.Record{ProducerID: h.ProducerID, Marker: group.MarkerAbort})
	}
	return nil
}

// readOffsetsRun calls fn for each record of batches, data batches of
// __consumer_offsets sharing run's transactional flag and producer id.
func readOffsetsRun(batches []byte, run *engine.BatchHeader, it *engine.RecordIterator, fn func(group.Record) error) error {
	*it = *engine.NewRecordIterator(batches)
	for it.Next() {
		r := it.Record()
		rec := group.Record{Key: bytes.Clone(r.Key), Transactional: run.Transactional(), ProducerID: run.ProducerID}
		if r.Value != nil {
			rec.Value = bytes.Clone(r.Value)
		}
		if err := fn(rec); err != nil {
			return err
		}
	}
	return it.Err()
}
