package broker

// The group coordinator's place in the broker: __consumer_offsets, created
// on first use as Kafka creates it (on the first FindCoordinator), and the
// coordinator/group.Coordinator loaded from it. The coordinator reads and
// appends through offsetsStore, a partition interface: it knows nothing of
// the engine, so replication will cover offsets without changing it.
//
// __consumer_offsets is compacted, with Kafka's internal topic configs
// (GroupCoordinatorService.groupMetadataTopicConfigs): cleanup.policy=compact,
// compression.type=producer, segment.bytes=offsets.topic.segment.bytes. The
// cleaner keeps each group's latest offset per partition and its latest
// metadata, and drops what tombstones deleted once delete.retention.ms has
// passed, so loading reads a bounded log and no retention by time loses the
// offsets of a quiet group. Brokers from before compaction created the topic
// with retention.ms=-1 and retention.bytes=-1 (keep everything) instead; at
// start such a topic is switched to the compacted configs
// (migrateOffsetsTopicLocked).

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-io/sluice/config"
	"github.com/sluice-io/sluice/coordinator/group"
	"github.com/sluice-io/sluice/engine"
	"github.com/sluice-io/sluice/replication/host"
)

// offsetsCommitTimeout is offsets.commit.timeout.ms, Kafka's default: an
// offset commit waits this long for the in-sync replicas.
const offsetsCommitTimeout = 5 * time.Second

// offsetsTopic is Kafka's internal topic of committed offsets and group
// metadata.
const offsetsTopic = "__consumer_offsets"

// groupsState holds the group coordinator once it exists. Lock order:
// Broker.admin before groupsState.mu (unhost's moveGroups reads the
// coordinator under admin), groupsState.mu before coordinator/group's own
// locks (the coordinator is made and closed under it); __consumer_offsets
// is created after it is released.
type groupsState struct {
	mu     sync.Mutex
	c      *group.Coordinator
	closed bool
}

// groupCoordinator returns the group coordinator (startClusterGroups made
// it at New). On the single node the first group request creates
// __consumer_offsets, as the first FindCoordinator does: a client that
// knows its coordinator is the only broker may skip FindCoordinator.
func (b *Broker) groupCoordinator() (*group.Coordinator, error) {
	b.groups.mu.Lock()
	closed, g := b.groups.closed, b.groups.c
	b.groups.mu.Unlock()
	if closed {
		return nil, errors.New("broker: closing")
	}
	if b.cluster == nil && !b.topicExists(offsetsTopic) {
		if _, _, _, code, msg := b.clusterCoordinator("", b.selfListener()); code != 0 {
			return nil, fmt.Errorf("broker: %s (%v)", msg, kerr.ErrorForCode(code))
		}
		ctx, cancel := context.WithTimeout(context.Background(), autoCreateWaitMs*time.Millisecond)
		defer cancel()
		for p := range g.Partitions() {
			if err := g.WaitLoaded(ctx, p); err != nil {
				return nil, fmt.Errorf("broker: loading %s-%d: %w", offsetsTopic, p, err)
			}
		}
	}
	return g, nil
}

// startClusterGroups starts the group coordinator: it owns no partition
// of __consumer_offsets until the controller makes this broker the leader
// of one (hosting.go's moveGroups).
func (b *Broker) startClusterGroups() {
	b.groups.mu.Lock()
	defer b.groups.mu.Unlock()
	n := b.cfg.Groups.WithDefaults().OffsetsPartitions
	if t, ok := b.coord.Topic(offsetsTopic); ok && t.Partitions > 0 {
		n = t.Partitions // the single node's, as it was created
	}
	b.groups.c = group.NewPartitioned(b.groupConfig(n), &offsetsStore{b: b})
}

// groupConfig is the group coordinator's configuration over partitions
// partitions of __consumer_offsets.
func (b *Broker) groupConfig(partitions int32) group.Config {
	gc := b.cfg.Groups.WithDefaults()
	cfg := group.Config{
		Partitions:            partitions,
		MinSessionTimeout:     gc.MinSessionTimeout,
		MaxSessionTimeout:     gc.MaxSessionTimeout,
		MaxGroupSize:          gc.MaxSize,
		OffsetsRetention:      gc.OffsetsRetention,
		OffsetsRetentionCheck: gc.OffsetsRetentionCheck,
		MaxMetadataBytes:      gc.OffsetMetadataMax,
		Logger:                b.log,
		Topics:                b.topicPartitions,
	}
	if d := gc.InitialRebalanceDelay; d != nil {
		cfg.InitialRebalanceDelay, cfg.NoInitialDelay = *d, *d == 0
	}
	return cfg
}

// topicPartitions is a topic's partition count in the controller's
// metadata.
func (b *Broker) topicPartitions(topic string) (int32, bool) {
	_, n, ok := b.clusterTopic(topic)
	return n, ok
}

// offsetsTopicConfigs are the configs __consumer_offsets is created with,
// Kafka's.
func offsetsTopicConfigs(gc config.GroupConfig) map[string]string {
	return map[string]string{
		"cleanup.policy":   "compact",
		"compression.type": "producer",
		"segment.bytes":    strconv.FormatInt(gc.OffsetsSegmentBytes, 10),
	}
}

// migrateOffsetsTopic switches a __consumer_offsets created before
// compaction existed (retention.ms=-1 and no cleanup.policy) to the
// compacted configs: the interim retention keys go, Kafka's internal topic
// configs come, other overrides stay.
func (b *Broker) migrateOffsetsTopic(configs map[string]string, gc config.GroupConfig) error {
	if _, ok := configs["cleanup.policy"]; ok || configs["retention.ms"] != "-1" {
		return nil
	}
	next := maps.Clone(configs)
	delete(next, "retention.ms")
	if next["retention.bytes"] == "-1" {
		delete(next, "retention.bytes")
	}
	maps.Copy(next, offsetsTopicConfigs(gc))
	if s, ok := configs["segment.bytes"]; ok {
		next["segment.bytes"] = s // as created: offsets.topic.segment.bytes applies to new topics only, as in Kafka
	}
	b.admin.Lock()
	defer b.admin.Unlock()
	if code, msg := b.setTopicConfigsLocked(offsetsTopic, next, false); code != 0 {
		return fmt.Errorf("broker: migrate %s to cleanup.policy=compact: %s (%v)", offsetsTopic, msg, kerr.ErrorForCode(code))
	}
	b.log.Info("migrated "+offsetsTopic+" to cleanup.policy=compact", "from", configs, "to", next)
	return nil
}

// existingGroups is the group coordinator if it exists already.
func (b *Broker) existingGroups() *group.Coordinator {
	b.groups.mu.Lock()
	defer b.groups.mu.Unlock()
	return b.groups.c
}

// closeGroups stops the group coordinator: parked joins and syncs are
// answered (NOT_COORDINATOR) so that connections can finish.
func (b *Broker) closeGroups() {
	b.groups.mu.Lock()
	defer b.groups.mu.Unlock()
	b.groups.closed = true
	if b.groups.c != nil {
		b.groups.c.Close()
	}
}

// offsetsStore is group.Store over the partitions of __consumer_offsets
// this broker leads: another is group.ErrNotLeader.
type offsetsStore struct {
	b *Broker
}

func (s *offsetsStore) partition(partition int32) (*host.Partition, error) {
	p, code := s.b.leaderPartition(offsetsTopic, partition)
	if p == nil {
		return nil, fmt.Errorf("broker: %s-%d: %w (%v)", offsetsTopic, partition, group.ErrNotLeader, kerr.ErrorForCode(code))
	}
	return p, nil
}

// Append writes records as one batch and waits for the flush policy: on a
// single node that is acks=all.
func (s *offsetsStore) Append(partition int32, records []group.Record) error {
	return s.append(partition, records, -1, -1, false, 0)
}

// VerifyTxn verifies that partition is in the producer's transaction
// (txnverify.go's verifyOffsets).
func (s *offsetsStore) VerifyTxn(partition int32, transactionalID string, producerID int64, producerEpoch int16) (uint64, int16) {
	p, code := s.b.leaderPartition(offsetsTopic, partition)
	if p == nil {
		return 0, code
	}
	guard, code := s.b.verifyOffsets(p, transactionalID, producerID, producerEpoch)
	return uint64(guard), code
}

// AppendTxn writes records as one transactional batch of the producer, as
// Kafka's GroupMetadataManager.storeOffsets builds it (base sequence 0),
// appended as the coordinator's (no sequence check; an older producer
// epoch refused: group.ErrInvalidProducerEpoch), with the guard of
// VerifyTxn (a stale one: group.ErrInvalidTxnState).
func (s *offsetsStore) AppendTxn(partition int32, producerID int64, producerEpoch int16, guard uint64, records []group.Record) error {
	return s.append(partition, records, producerID, producerEpoch, true, engine.VerificationGuard(guard))
}

func (s *offsetsStore) append(partition int32, records []group.Record, producerID int64, producerEpoch int16, txn bool, guard engine.VerificationGuard) error {
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
	res, err := p.AppendAsLeader(bb.Build(), host.AppendHow{Coordinator: txn, Guard: guard})
	switch {
	case errors.Is(err, kerr.NotLeaderForPartition):
		err = fmt.Errorf("broker: %s-%d: %w (%w)", offsetsTopic, partition, group.ErrNotLeader, err)
	case errors.Is(err, engine.ErrInvalidProducerEpoch):
		err = fmt.Errorf("broker: %s-%d: %w: %w", offsetsTopic, partition, group.ErrInvalidProducerEpoch, err)
	case errors.Is(err, engine.ErrInvalidTxnState):
		err = fmt.Errorf("broker: %s-%d: %w: %w", offsetsTopic, partition, group.ErrInvalidTxnState, err)
	}
	if err == nil {
		err = p.Log.AwaitFlushPolicy(res)
	}
	p.Notify()
	if err == nil {
		// acks=all, as Kafka's group coordinator writes (offsets.commit.timeout.ms).
		err = p.AwaitReplicated(res.LastOffset+1, offsetsCommitTimeout, s.b.closing)
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
func (s *offsetsStore) Read(partition int32, fn func(group.Record) error) error {
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
				return fmt.Errorf("broker: read %s-%d at %d: %w", offsetsTopic, partition, off, err)
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
		return fmt.Errorf("broker: read %s-%d at %d: %w", offsetsTopic, partition, off, err)
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

// clientHost is the connection's peer as Kafka reports it: "/" and the IP.
func (c *conn) clientHost() string {
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return "/" + a.IP.String()
	}
	return "/" + c.RemoteAddr().String()
}
