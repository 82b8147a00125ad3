package broker

// Fetch (key 1), versions 4-17 (4 is the first that carries RecordBatch v2
// only).
//
// Behavior:
//   - Records go out exactly as stored: the response's fixed fields are
//     encoded by wire.FetchWriter and each partition's bytes are streamed
//     from its engine view, with sendfile(2) on a TCP connection.
//   - Long poll: with less than MinBytes available the fetch waits up to
//     MaxWaitMs, woken by the next append to any of its partitions (each
//     partition keeps a list of waiting fetches), not by a timer loop.
//   - Limits as Kafka's (KIP-74): PartitionMaxBytes per partition and
//     MaxBytes (v3+) per response, except that the first batch of the first
//     partition with data is returned whole even when larger.
//   - Offsets below the log start or above the log end get
//     OFFSET_OUT_OF_RANGE; unknown topics UNKNOWN_TOPIC_OR_PARTITION (v13+:
//     UNKNOWN_TOPIC_ID); a current leader epoch other than 0 gets
//     FENCED_LEADER_EPOCH (older) or UNKNOWN_LEADER_EPOCH (newer).
//   - Fetch sessions (KIP-227) are declined: every response has session id 0,
//     so clients send full requests; a request naming a session id gets
//     FETCH_SESSION_ID_NOT_FOUND.
//   - A topic whose compression.type is zstd answers fetches below v10
//     with UNSUPPORTED_COMPRESSION_TYPE, as Kafka does (those clients
//     predate zstd); zstd batches a producer stored in another topic are
//     served to them as they are, as Kafka serves them.
//   - A follower's fetch of a leader-throttled partition (KIP-73,
//     throttle.go) gets no records while the follower is out of the ISR
//     and the leader's replication quota is exceeded: it waits, as a fetch
//     short of MinBytes does, until the quota allows again or MaxWaitMs.
//     The bytes sent for throttled partitions count against the quota.
//   - Isolation (v4+): a consumer's read_committed fetch (isolation level
//     1) reads up to the partition's last stable offset (the first offset
//     of its oldest open transaction, if below the high watermark; else
//     the high watermark) and is told the transactions aborted in the
//     range, whose records it drops: engine.Log.AbortedTxns over [fetch
//     offset, last stable offset), Kafka's collectAbortedTxns, which like
//     Kafka's bound may name transactions past the bytes returned. Every
//     response carries the last stable offset; read_uncommitted reads up
//     to the high watermark, followers to the log end, both with no
//     aborted transactions. A waiting read_committed fetch is woken when a
//     marker's append moves the last stable offset, as by any append.
//   - Client quotas (clientquotas.go): a consumer's fetch asks for at
//     most what its consumer_byte_rate allows at once; its records' bytes
//     and its handling time count against its quotas, and over one it is
//     answered with throttle_time_ms and no partitions (its bytes taken
//     back), the connection then muted, as Kafka's handleFetchRequest.

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/engine"
	"github.com/sluice-io/sluice/metrics"
	"github.com/sluice-io/sluice/replication"
	"github.com/sluice-io/sluice/replication/host"
	"github.com/sluice-io/sluice/security/acl"
	"github.com/sluice-io/sluice/security/quota"
	"github.com/sluice-io/sluice/wire"
)

func init() { register(1, 4, 17, handleFetch) }

// wireFetch is a connection's reusable Fetch response state.
type wireFetch struct {
	w     wire.FetchWriter
	resp  wire.FetchResponse
	views []engine.View
	// A follower's fetch, at the last read: the bytes read for
	// leader-throttled partitions, and how long the leader quota stays
	// exceeded for those it left without records (0: none was).
	throttledBytes int64
	throttledFor   time.Duration
	// counts are the last read's partitions as the metrics count them
	// (only kept with metrics on): each partition found (nil: unknown),
	// whether it failed, and the record bytes read.
	counts []fetchCount
	// A read_committed fetch's aborted transactions: read from the log
	// into found, kept for the response in aborted, of which each
	// partition's Aborted is a run (abortedAt says where).
	found     []engine.AbortedTxn
	aborted   []wire.AbortedTxn
	abortedAt []abortedRun
}

// abortedRun is where one partition's aborted transactions lie in
// wireFetch.aborted.
type abortedRun struct{ ti, pi, lo, hi int }

type fetchCount struct {
	p      *host.Partition
	failed bool
	bytes  int64
}

// note keeps one partition's outcome for countFetch.
func (f *wireFetch) note(b *Broker, p *host.Partition, failed bool, bytes int64) {
	if b.metrics.reg != nil {
		f.counts = append(f.counts, fetchCount{p, failed, bytes})
	}
}

// countFetch counts the answered fetch into the metrics: a request and a
// failure or not per partition, and the bytes sent, to a consumer or (as
// replication bytes out, which Kafka counts apart) to a follower.
func (b *Broker) countFetch(f *wireFetch, follower bool) {
	if b.metrics.reg == nil {
		return
	}
	for _, n := range f.counts {
		switch {
		case n.p == nil:
			b.metrics.reg.FailedUnknown(metrics.FailedFetch)
		case n.failed:
			n.p.Metrics.Add(metrics.TotalFetch, 1)
			n.p.Metrics.Add(metrics.FailedFetch, 1)
		default:
			n.p.Metrics.Add(metrics.TotalFetch, 1)
			switch {
			case n.bytes == 0:
			case follower:
				n.p.Metrics.Replicated(metrics.ReplicationBytesOut, int(n.bytes))
			default:
				n.p.Metrics.Add(metrics.BytesOut, n.bytes)
			}
		}
	}
}

func (f *wireFetch) release() {
	for i := range f.views {
		f.views[i].Release()
	}
	f.views = f.views[:0]
}

func handleFetch(c *conn, h wire.Header, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.FetchRequest)
	c.Follower = req.ReplicaID >= 0 || req.Version >= 15 && req.ReplicaState.ID >= 0
	f := &c.fetch
	f.resp = wire.FetchResponse{Version: req.Version, Topics: f.resp.Topics[:0]}
	if req.SessionID != 0 {
		f.resp.ErrorCode = kerr.FetchSessionIDNotFound.Code
		return nil, c.writeFetch(h.CorrelationID, &f.resp)
	}
	if c.Follower {
		c.q.on = false // replication is not a client's quota
	} else {
		c.capFetchToQuota(req)
	}
	deadline := time.Now().Add(time.Duration(req.MaxWaitMillis) * time.Millisecond)
	var timer *time.Timer
	var bytes int64
	for {
		// Register before reading, so an append after the read wakes us.
		waiting := req.MaxWaitMillis > 0 && req.MinBytes > 0
		if waiting {
			select { // drop a stale wake-up
			case <-c.wake:
			default:
			}
		}
		var failed bool
		bytes, failed = c.b.readFetch(c, req, f, waiting, c.wake)
		now := time.Now()
		if !waiting || failed || bytes >= int64(req.MinBytes) || !now.Before(deadline) {
			break
		}
		f.release()
		wait := deadline.Sub(now)
		if f.throttledFor > 0 { // read again when the quota allows
			wait = min(wait, f.throttledFor)
		}
		if timer == nil {
			timer = time.NewTimer(wait)
			defer timer.Stop()
		} else {
			timer.Reset(wait)
		}
		select {
		case <-c.wake:
		case <-timer.C:
		case <-c.b.life.closing:
			// The broker is closing: answer now with what there is
			// (closing stays closed, so waiting again would spin).
			deadline = now
		}
		c.quotaWait(now) // the long poll is not request time
	}
	c.throttleFetch(f, bytes)
	c.b.quotas.repl.leader.Record(f.throttledBytes)
	c.b.countFetch(f, c.Follower)
	err := c.writeFetch(h.CorrelationID, &f.resp)
	f.release()
	return nil, err
}

// capFetchToQuota bounds a consumer's fetch to what its consumer_byte_rate
// allows at once (Kafka's getMaxValueInQuotaWindow): asking for more would
// be throttled whatever came before.
func (c *conn) capFetchToQuota(req *kmsg.FetchRequest) {
	if !c.q.on || !c.q.client.Limited(quota.ConsumerByteRate) {
		return
	}
	most := c.b.quotas.clients.MaxInWindow(&c.q.client, quota.ConsumerByteRate)
	if most >= math.MaxInt32 {
		return
	}
	limit := int32(max(most, 1))
	if req.MaxBytes <= 0 || req.MaxBytes > limit {
		req.MaxBytes = limit
	}
	req.MinBytes = min(req.MinBytes, req.MaxBytes)
}

// throttleFetch records a consumer's fetch of bytes against its quotas,
// as Kafka's handleFetchRequest: over either, the response carries
// throttle_time_ms and no partitions, and its bytes are taken back.
func (c *conn) throttleFetch(f *wireFetch, bytes int64) {
	if !c.q.on {
		return
	}
	d := max(c.quotaTime(), c.quotaBytes(quota.ConsumerByteRate, bytes))
	if d <= 0 {
		return
	}
	if c.q.client.Limited(quota.ConsumerByteRate) {
		c.b.quotas.clients.Unrecord(&c.q.client, quota.ConsumerByteRate, float64(bytes), quota.Now())
	}
	f.release()
	f.resp.Topics = f.resp.Topics[:0]
	f.counts = f.counts[:0]
	f.resp.ThrottleMillis = throttleMillis(c.q.throttle)
}

// readFetch fills f.resp with what every requested partition has now, and
// returns the record bytes found and whether any partition failed. With
// register, each partition first records wake as a waiting fetch. c's
// principal must have Read on each topic (a consumer) or ClusterAction on
// the cluster (a replica), else its partitions fail
// TOPIC_AUTHORIZATION_FAILED, as Kafka answers both.
func (b *Broker) readFetch(c *conn, req *kmsg.FetchRequest, f *wireFetch, register bool, wake chan struct{}) (int64, bool) {
	f.resp.Topics = f.resp.Topics[:0]
	f.throttledBytes, f.throttledFor = 0, 0
	f.counts = f.counts[:0]
	f.aborted, f.abortedAt = f.aborted[:0], f.abortedAt[:0]
	readCommitted := req.IsolationLevel == 1
	var total int64
	failed := false
	quotaChecked := false // the leader quota, read once per fetch
	remaining := int64(req.MaxBytes)
	if req.Version < 3 || remaining <= 0 {
		remaining = 1<<31 - 1
	}
	// A replica's fetch names it (v15+: its ReplicaState, with its broker
	// epoch); a consumer's is -1.
	follower, followerEpoch := req.ReplicaID, int64(-1)
	if req.Version >= 15 {
		follower, followerEpoch = req.ReplicaState.ID, req.ReplicaState.Epoch
	}
	checked := b.sec.acls != nil
	replicaAllowed := checked && follower >= 0 && c.authorizedCluster(acl.OpClusterAction)
	for ti := range req.Topics {
		rt := &req.Topics[ti]
		var ts *host.Topic
		if req.Version >= 13 {
			ts = b.replicas.TopicByID(engine.TopicID(rt.TopicID))
		} else {
			ts = b.topic(rt.Topic)
		}
		denied := false
		if checked && (ts != nil || req.Version < 13) { // an unknown id is UNKNOWN_TOPIC_ID first
			name := rt.Topic
			if ts != nil {
				name = ts.Name
			}
			denied = !(follower >= 0 && replicaAllowed || follower < 0 && c.authorized(acl.OpRead, acl.ResourceTopic, name))
		}
		f.resp.Topics = append(f.resp.Topics, wire.FetchTopic{Topic: rt.Topic, TopicID: rt.TopicID})
		out := &f.resp.Topics[len(f.resp.Topics)-1]
		out.Partitions = out.Partitions[:0]
		for pi := range rt.Partitions {
			rp := &rt.Partitions[pi]
			fp := wire.FetchPartition{Partition: rp.Partition, HighWatermark: -1, LastStableOffset: -1, LogStartOffset: -1}
			var p *host.Partition
			if ts != nil && rp.Partition >= 0 && int(rp.Partition) < len(ts.Partitions) {
				p = ts.Partitions[rp.Partition]
			}
			switch {
			case denied:
				fp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			case p == nil && req.Version >= 13 && ts == nil && !b.plane.state.Cache.HasTopicID(rt.TopicID):
				fp.ErrorCode = kerr.UnknownTopicID.Code
			case p == nil && req.Version >= 13 && ts == nil:
				fp.ErrorCode = kerr.NotLeaderForPartition.Code
			case p == nil || !p.Leads():
				name := rt.Topic
				if ts != nil {
					name = ts.Name
				}
				// Led here since the topic state was read: the current one.
				if p, fp.ErrorCode = b.leaderPartition(name, rp.Partition); p != nil {
					fp.ErrorCode = p.CheckLeaderEpoch(rp.CurrentLeaderEpoch)
				}
			case req.Version < 10 && recompressesTo(p, engine.CompressionZstd):
				fp.ErrorCode = kerr.UnsupportedCompressionType.Code
			default:
				fp.ErrorCode = p.CheckLeaderEpoch(rp.CurrentLeaderEpoch)
			}
			if fp.ErrorCode != 0 {
				failed = true
				f.note(b, p, true, 0)
				out.Partitions = append(out.Partitions, fp)
				continue
			}
			if register {
				p.Wait(wake)
			}
			hw := p.HighWatermark()
			lso := p.LastStableOffset(hw)
			upTo, from := hw, rp.FetchOffset
			if readCommitted {
				upTo = lso
			}
			throttled := false // a follower's fetch of a leader-throttled partition
			fp.HighWatermark, fp.LastStableOffset, fp.LogStartOffset = hw, lso, p.Log.StartOffset()
			if follower >= 0 {
				// A replica's fetch: the core answers it (replication/host).
				lastFetched := int32(-1)
				if req.Version >= 12 {
					lastFetched = rp.LastFetchedEpoch
				}
				a, inISR := p.FollowerFetch(replication.FollowerFetch{Replica: follower, ReplicaEpoch: followerEpoch,
					FetchOffset: rp.FetchOffset, LastFetchedEpoch: lastFetched, CurrentLeaderEpoch: rp.CurrentLeaderEpoch})
				switch {
				case a.Err != nil:
					fp.ErrorCode = host.ErrorCode(a.Err)
				case a.Diverged:
					fp.Diverging, fp.DivergingEpoch, fp.DivergingEndOffset = true, a.Diverging.Epoch, a.Diverging.EndOffset
				}
				fp.HighWatermark, fp.LastStableOffset, fp.LogStartOffset = a.HighWatermark, p.LastStableOffset(a.HighWatermark), a.LogStart
				if a.Err != nil || a.Diverged {
					failed = failed || a.Err != nil
					f.note(b, p, a.Err != nil, 0)
					out.Partitions = append(out.Partitions, fp)
					continue
				}
				from, upTo = a.From, a.LogEnd
				if throttled = p.LeaderThrottled.Load(); throttled && !inISR {
					if !quotaChecked {
						f.throttledFor, quotaChecked = b.quotas.repl.leader.Exceeded(), true
					}
					if f.throttledFor > 0 {
						f.note(b, p, false, 0)
						out.Partitions = append(out.Partitions, fp) // no records until the quota allows
						continue
					}
				}
			}
			limit := min(int64(rp.PartitionMaxBytes), remaining)
			var read int64
			if limit > 0 || total == 0 {
				v, err := p.Log.Read(from, max(limit, 1), upTo)
				switch {
				case err != nil:
					fp.ErrorCode = fetchError(b, p, err)
					failed = true
				case v.Len() > 0 && total > 0 && v.Len() > limit:
					v.Release() // only the first partition with data may exceed the limits
				case v.Len() > 0:
					f.views = append(f.views, v)
					fp.Records = &f.views[len(f.views)-1]
					read = v.Len()
					total += v.Len()
					remaining -= v.Len()
					if throttled {
						f.throttledBytes += v.Len()
					}
					if readCommitted && follower < 0 {
						f.noteAborted(p, from, upTo, len(f.resp.Topics)-1, len(out.Partitions))
					}
				}
			}
			f.note(b, p, fp.ErrorCode != 0, read)
			out.Partitions = append(out.Partitions, fp)
		}
	}
	// f.views and f.aborted may have moved while growing: point the
	// partitions at their final places.
	for _, a := range f.abortedAt {
		f.resp.Topics[a.ti].Partitions[a.pi].Aborted = f.aborted[a.lo:a.hi]
	}
	vi := 0
	for ti := range f.resp.Topics {
		ps := f.resp.Topics[ti].Partitions
		for pi := range ps {
			if ps[pi].Records != nil {
				ps[pi].Records = &f.views[vi]
				vi++
			}
		}
	}
	return total, failed
}

// noteAborted keeps the transactions aborted in [from, to) of p for the
// response's partition (ti, pi), reusing f's slices.
func (f *wireFetch) noteAborted(p *host.Partition, from, to int64, ti, pi int) {
	f.found = p.Log.AbortedTxns(f.found[:0], from, to)
	if len(f.found) == 0 {
		return
	}
	lo := len(f.aborted)
	for _, a := range f.found {
		f.aborted = append(f.aborted, wire.AbortedTxn{ProducerID: a.ProducerID, FirstOffset: a.FirstOffset})
	}
	f.abortedAt = append(f.abortedAt, abortedRun{ti, pi, lo, len(f.aborted)})
}

func fetchError(b *Broker, p *host.Partition, err error) int16 {
	switch {
	case errors.Is(err, engine.ErrOffsetOutOfRange):
		return kerr.OffsetOutOfRange.Code
	case errors.Is(err, engine.ErrClosed):
		return kerr.NotLeaderForPartition.Code
	default:
		b.log.Error("read failed", "topic", p.Topic, "partition", p.Index, "err", err)
		return kerr.KafkaStorageError.Code
	}
}

// recompressesTo reports whether p's topic stores its batches in codec c
// (compression.type names it).
func recompressesTo(p *host.Partition, c engine.Compression) bool {
	r := p.Log.Options().Recompression
	return r.Enabled && r.Codec == c
}

// writeFetch writes a fetch response to the connection's stream: straight
// to the socket (the records by sendfile) on plaintext, through a buffer
// on TLS (server.Conn.Stream).
func (c *conn) writeFetch(correlationID int32, resp *wire.FetchResponse) error {
	if _, err := c.fetch.w.Write(c.Stream(), correlationID, resp); err != nil {
		return fmt.Errorf("broker: fetch response: %w", err)
	}
	return c.Flush()
}
