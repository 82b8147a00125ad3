package host

// Followers' fetchers (Kafka's ReplicaFetcherThread): per source broker
// (the leader followed) num.replica.fetchers goroutines, each with its own
// connection, a partition going to one by the hash of its name and index
// (as Kafka's AbstractFetcherManager spreads them); each multiplexes the
// partitions it has into one Fetch (replica id set, v12: epochs and
// DivergingEpoch), sized and timed by replica.fetch.* (config/fetcher.go).
// What to fetch is each partition's core's decision (Ready.Fetch, kept in
// replicaDriver.fetch); the answer is stepped into the core as a
// FetchResult, whose Ready the partition performs: truncate, append the
// leader's batches as they are (engine.AppendReplicated), the high
// watermark and log start learnt from the leader. An OFFSET_OUT_OF_RANGE
// answer is followed by a ListOffsets of the leader's log end and start
// (as a replica asks: its log end, not the high watermark), which the core
// needs to decide where the follower's log goes.
//
// A follower-throttled partition (throttle.go) that is not in sync is
// left out of the fetch while the follower quota is exceeded, and taken
// again when it allows; the bytes fetched for throttled partitions count
// against the quota.
//
// Only ZooKeeper mode has followers (the single node leads every
// partition): requests go through wire/interbroker's Clients, which find
// a broker's address from its registration. Each fetcher has one of its own, which
// reads every answer from its leader into one buffer (ReuseResponses): a
// fetcher is done with an answer before it sends its next request, so
// replication allocates nothing the size of the records it copies.

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/config"
	"github.com/sluice-io/sluice/engine"
	"github.com/sluice-io/sluice/metrics"
	"github.com/sluice-io/sluice/replication"
	"github.com/sluice-io/sluice/wire/interbroker"
)

const (
	replicaFetchVersion       = 12
	replicaListOffsetsVersion = 4 // carries CurrentLeaderEpoch
	// RequestTimeout bounds the fetchers' requests and the ISR changes'.
	RequestTimeout = 30 * time.Second
)

// fetchers are a broker's fetchers, by source broker and fetcher id.
type fetchers struct {
	m   *Manager
	cfg config.FetcherConfig

	mu struct {
		sync.Mutex
		bySource map[fetcherKey]*fetcher
	}
}

// fetcherKey names a fetcher: the leader it fetches from and its index
// among that leader's num.replica.fetchers.
type fetcherKey struct {
	leader int32
	id     int
}

// fetcher fetches for the partitions following one leader that hash to
// its id.
type fetcher struct {
	f      *fetchers
	leader int32
	send   interbroker.Sender // this fetcher's own connection
	wake   chan struct{}      // capacity 1

	mu struct {
		sync.Mutex
		parts map[*Partition]struct{}
		// delayed are partitions whose last answer was an error, not
		// fetched before the time given, as Kafka's fetcher delays a
		// partition in error: a leader that refuses a partition is not
		// asked again at once, in a loop. The delay starts short and
		// doubles with each error in a row (fetcher.errs) up to
		// replica.fetch.backoff.ms: the common error, a new leader that
		// has not yet had its own LeaderAndIsr, clears within
		// milliseconds, and waiting the whole backoff for it (Kafka's
		// way) made failovers a second slower.
		delayed map[*Partition]time.Time
	}

	// errs counts each partition's errors in a row (delay); the fetcher
	// goroutine's.
	errs map[*Partition]int

	// The fetcher goroutine's, reused for every partition of every answer:
	// the batches of the answer being stepped and their spans (fetched).
	batches []replication.Batch
	spans   [][2]int
}

func newFetchers(m *Manager, cfg config.FetcherConfig) *fetchers {
	fs := &fetchers{m: m, cfg: cfg}
	fs.mu.bySource = map[fetcherKey]*fetcher{}
	return fs
}

// fetcherID is the fetcher of p among n per leader.
func fetcherID(p *Partition, n int) int {
	if n <= 1 {
		return 0
	}
	h := fnv.New32a()
	h.Write([]byte(p.Topic))
	h.Write([]byte{byte(p.Index >> 24), byte(p.Index >> 16), byte(p.Index >> 8), byte(p.Index)})
	return int(h.Sum32() % uint32(n))
}

// want registers p with its leader's fetcher (starting it), to send the
// fetch p's core decided. Called under p's replica lock.
func (fs *fetchers) want(leader int32, p *Partition) {
	key := fetcherKey{leader, fetcherID(p, fs.cfg.Fetchers)}
	fs.mu.Lock()
	f := fs.mu.bySource[key]
	if f == nil {
		f = &fetcher{f: fs, leader: leader, wake: make(chan struct{}, 1)}
		f.send = fs.m.o.Dial(interbroker.Options{RequestTimeout: RequestTimeout, ReuseResponses: true,
			ClientID: "broker-" + strconv.Itoa(int(fs.m.o.Self)) + "-fetcher-" + strconv.Itoa(key.id)})
		f.mu.parts, f.mu.delayed, f.errs = map[*Partition]struct{}{}, map[*Partition]time.Time{}, map[*Partition]int{}
		fs.mu.bySource[key] = f
		go f.run()
	}
	fs.mu.Unlock()
	f.mu.Lock()
	f.mu.parts[p] = struct{}{}
	f.mu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// followerQuotaExceeded is how long the follower quota is exceeded for, 0
// when it is not or there is none.
func (fs *fetchers) followerQuotaExceeded() time.Duration {
	if q := fs.m.o.FollowerQuota; q != nil {
		return q.Exceeded()
	}
	return 0
}

// firstFetchRetry is the delay after a partition's first error in a row.
const firstFetchRetry = 25 * time.Millisecond

// delay holds back the partitions whose answer was an error, each for
// twice its previous delay (firstFetchRetry first) up to the backoff, and
// forgets the errors of those answered.
func (f *fetcher) delay(failed, answered []*Partition) {
	if len(failed) == 0 && len(f.errs) == 0 {
		return
	}
	for _, p := range answered {
		delete(f.errs, p)
	}
	now := time.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range failed {
		n := f.errs[p]
		f.errs[p] = n + 1
		f.mu.delayed[p] = now.Add(min(f.f.cfg.Backoff, firstFetchRetry<<min(n, 16)))
	}
}

// pending is a partition's fetch to send.
type pending struct {
	p   *Partition
	req replication.FetchRequest
}

// take returns the fetches the fetcher's partitions want now (their
// core's pending fetch of this leader, unless delayed or held back by the
// follower quota), dropping partitions that follow another leader or none,
// and when the first partition held back is due (zero if none is).
// Lock order: a partition's replica lock before fetcher.mu (want is
// called under it), so the partitions are read with fetcher.mu released.
func (f *fetcher) take() ([]pending, time.Time) {
	now := time.Now()
	var due time.Time
	f.mu.Lock()
	parts := make([]*Partition, 0, len(f.mu.parts))
	for p := range f.mu.parts {
		if until, ok := f.mu.delayed[p]; ok {
			if now.Before(until) {
				if due.IsZero() || until.Before(due) {
					due = until
				}
				continue
			}
			delete(f.mu.delayed, p)
		}
		parts = append(parts, p)
	}
	f.mu.Unlock()
	var out []pending
	quota, quotaChecked := time.Duration(0), false // the follower quota, read once
	for _, p := range parts {
		p.rep.mu.Lock()
		req, ok := p.rep.mu.fetch, p.rep.mu.fetching
		if ok && req.Backoff && req.Leader == f.leader {
			// The last answer's records were refused: this fetch waits
			// replica.fetch.backoff.ms, as Kafka's fetcher delays a
			// partition whose records failed to append.
			p.rep.mu.fetch.Backoff = false
			p.rep.mu.Unlock()
			until := now.Add(f.f.cfg.Backoff)
			f.mu.Lock()
			f.mu.delayed[p] = until
			f.mu.Unlock()
			if due.IsZero() || until.Before(due) {
				due = until
			}
			continue
		}
		held := false
		if ok && req.Leader == f.leader && p.FollowerThrottled.Load() && !p.rep.mu.inSync {
			if !quotaChecked {
				quota, quotaChecked = f.f.followerQuotaExceeded(), true
			}
			held = quota > 0
		}
		if ok && req.Leader == f.leader && !held {
			p.rep.mu.fetching = false // sent now; the answer's Ready asks for the next
		}
		p.rep.mu.Unlock()
		if held {
			if until := now.Add(quota); due.IsZero() || until.Before(due) {
				due = until
			}
			continue
		}
		if !ok {
			continue
		}
		if req.Leader != f.leader {
			f.mu.Lock()
			delete(f.mu.parts, p)
			f.mu.Unlock()
			continue
		}
		out = append(out, pending{p, req})
	}
	return out, due
}

func (f *fetcher) run() {
	closing := f.f.m.o.Closing
	defer f.send.Close()
	for {
		ps, due := f.take()
		if len(ps) == 0 {
			var later <-chan time.Time
			if !due.IsZero() {
				later = time.After(time.Until(due))
			}
			select {
			case <-f.wake:
			case <-later:
			case <-closing:
				return
			}
			continue
		}
		if err := f.fetch(ps); err != nil {
			select {
			case <-time.After(f.f.cfg.Backoff):
			case <-closing:
				return
			}
		}
	}
}

// fetch sends one Fetch for ps and steps each partition's answer.
func (f *fetcher) fetch(ps []pending) error {
	m, cfg := f.f.m, f.f.cfg
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(replicaFetchVersion)
	req.ReplicaID = m.o.Self
	req.MaxWaitMillis = int32(cfg.WaitMax.Milliseconds())
	req.MinBytes = cfg.MinBytes
	req.MaxBytes = cfg.ResponseMaxBytes
	req.SessionEpoch = -1
	byTopic := map[string]int{}
	for _, pd := range ps {
		i, ok := byTopic[pd.p.Topic]
		if !ok {
			i = len(req.Topics)
			byTopic[pd.p.Topic] = i
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic = pd.p.Topic
			req.Topics = append(req.Topics, rt)
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = pd.p.Index, pd.req.Offset, cfg.MaxBytes
		rp.LastFetchedEpoch, rp.CurrentLeaderEpoch, rp.LogStartOffset = pd.req.LastFetchedEpoch, pd.req.CurrentLeaderEpoch, -1
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	}
	ctx, cancel := m.closingContext(RequestTimeout)
	defer cancel()
	raw, err := f.send.Send(ctx, f.leader, req)
	if err != nil {
		for _, pd := range ps {
			pd.p.stepFetchAnswer(replication.FetchResult{Seq: pd.req.Seq, Err: replication.ErrUnreachable})
		}
		return err
	}
	resp := raw.(*kmsg.FetchResponse)
	answered := map[*Partition]bool{}
	var throttledBytes int64
	var outOfRange []pending
	var errored, fine []*Partition
	defer func() { f.delay(errored, fine) }()
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			for _, pd := range ps {
				if pd.p.Topic != rt.Topic || pd.p.Index != rp.Partition || answered[pd.p] {
					continue
				}
				answered[pd.p] = true
				if pd.p.FollowerThrottled.Load() {
					throttledBytes += int64(len(rp.RecordBatches))
				}
				if rp.ErrorCode == kerr.OffsetOutOfRange.Code {
					outOfRange = append(outOfRange, pd)
					continue
				}
				switch {
				case rp.ErrorCode != 0:
					errored = append(errored, pd.p)
				case len(f.errs) > 0: // only a partition in error needs its answer noted
					fine = append(fine, pd.p)
				}
				f.fetched(pd.p, pd.req.Seq, &rp, 1<<63-1) // a fetch answers no log end
			}
		}
	}
	if q := m.o.FollowerQuota; q != nil {
		q.Record(throttledBytes)
	}
	if len(outOfRange) > 0 {
		f.outOfRange(ctx, outOfRange)
	}
	for _, pd := range ps {
		if !answered[pd.p] {
			pd.p.stepFetchAnswer(replication.FetchResult{Seq: pd.req.Seq, Err: replication.ErrUnreachable})
		}
	}
	if resp.ErrorCode != 0 {
		return kerr.ErrorForCode(resp.ErrorCode)
	}
	return nil
}

// outOfRange asks the leader for the log end and start of the partitions
// whose fetch was OFFSET_OUT_OF_RANGE (Kafka's fetchLatestOffsetFromLeader
// and fetchEarliestOffsetFromLeader: ListOffsets as replica, so the log
// end is not capped at the high watermark) and steps the answers. A
// partition without an answer is stepped as unreachable: fetched again
// after the backoff.
func (f *fetcher) outOfRange(ctx context.Context, ps []pending) {
	ends := map[*Partition][2]int64{}
	for _, ts := range [2]int64{-1, -2} { // latest, earliest
		req := kmsg.NewPtrListOffsetsRequest()
		req.SetVersion(replicaListOffsetsVersion)
		req.ReplicaID = f.f.m.o.Self
		for _, pd := range ps {
			rt := kmsg.NewListOffsetsRequestTopic()
			rt.Topic = pd.p.Topic
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Partition, rp.CurrentLeaderEpoch, rp.Timestamp = pd.p.Index, pd.req.CurrentLeaderEpoch, ts
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
		}
		raw, err := f.send.Send(ctx, f.leader, req)
		if err != nil {
			break
		}
		for _, rt := range raw.(*kmsg.ListOffsetsResponse).Topics {
			for _, rp := range rt.Partitions {
				for _, pd := range ps {
					if pd.p.Topic == rt.Topic && pd.p.Index == rp.Partition && rp.ErrorCode == 0 {
						e := ends[pd.p]
						if ts == -1 {
							e[0] = rp.Offset
						} else {
							e[1] = rp.Offset
						}
						ends[pd.p] = e
					}
				}
			}
		}
	}
	for _, pd := range ps {
		e, ok := ends[pd.p]
		if !ok || e[0] < e[1] {
			pd.p.stepFetchAnswer(replication.FetchResult{Seq: pd.req.Seq, Err: replication.ErrUnreachable})
			f.delay([]*Partition{pd.p}, nil)
			continue
		}
		pd.p.stepFetchAnswer(replication.FetchResult{Seq: pd.req.Seq, Err: kerr.OffsetOutOfRange, LeaderLogEnd: e[0], LeaderLogStart: e[1]})
	}
}

// fetched steps a fetch answer into p's core, with the batches it carried.
// The core keeps none of them past the step (Advance drops its Ready), so
// their index is built in the fetcher's reused slices.
func (f *fetcher) fetched(p *Partition, seq uint64, rp *kmsg.FetchResponseTopicPartition, leaderEnd int64) {
	ev := replication.FetchResult{Seq: seq, HighWatermark: rp.HighWatermark, LeaderLogStart: max(rp.LogStartOffset, 0),
		LeaderLogEnd: leaderEnd}
	if rp.ErrorCode != 0 {
		ev.Err = kerr.ErrorForCode(rp.ErrorCode)
	}
	if rp.DivergingEpoch.EndOffset >= 0 {
		ev.Diverged, ev.Diverging = true, replication.EpochEnd{Epoch: rp.DivergingEpoch.Epoch, EndOffset: rp.DivergingEpoch.EndOffset}
	}
	// Whole batches only: a fetch cut at its byte limit ends in a partial
	// one, fetched again next time.
	data := rp.RecordBatches
	f.batches, f.spans = f.batches[:0], f.spans[:0]
	for pos := 0; pos < len(data); {
		h, err := engine.ParseBatchHeader(data[pos:])
		if err != nil || int64(len(data)-pos) < h.Size() {
			break
		}
		f.batches = append(f.batches, replication.Batch{Base: h.BaseOffset, End: h.LastOffset() + 1, Epoch: h.LeaderEpoch})
		f.spans = append(f.spans, [2]int{pos, pos + int(h.Size())})
		pos += int(h.Size())
	}
	ev.Batches = f.batches
	p.role.RLock() // the owner (owner.go): no role change while the answer is appended
	defer p.role.RUnlock()
	p.rep.mu.Lock()
	defer p.rep.mu.Unlock()
	p.rep.mu.batches, p.rep.mu.spans = data, f.spans
	p.rep.mu.batchIndex = ev.Batches
	p.stepLocked(ev)
	p.rep.mu.batches, p.rep.mu.spans, p.rep.mu.batchIndex = nil, nil, nil
	if ev.Err == nil && !ev.Diverged {
		p.rep.mu.inSync = p.Log.EndOffset() >= rp.HighWatermark
	}
}

// performFollower carries out a follower's Ready: truncation, the
// leader's batches appended as they are. Under p's role and replica locks.
// It returns the log's outcome of the append, which the core is told
// (FetchAppended), and whether there was one. The append is refused, as a
// mismatch of the log and the core's view of it, when the log does not
// end where the core's view does or has led a later epoch than the one it
// follows (its leadership began behind the core's back): the core stops
// following, and the driver retries later (noteFailure).
func (p *Partition) performFollower(rd *replication.Ready) (replication.FetchAppended, bool) {
	start := func(off int64) {
		if _, err := p.Log.IncrementStartOffset(off); err != nil {
			p.m.o.Logger.Error("moving the log start to follow the leader", "topic", p.Topic, "partition", p.Index, "offset", off, "err", err)
		}
	}
	if rd.Truncated {
		off := rd.Truncate.Offset
		p.m.o.Logger.Info("truncating to follow the leader", "topic", p.Topic, "partition", p.Index,
			"offset", off, "fully", rd.Truncate.Fully, "log_end", p.Log.EndOffset())
		var err error
		switch {
		case rd.Truncate.Fully && off >= p.Log.EndOffset():
			start(off)
		case rd.Truncate.Fully:
			err = p.Log.TruncateTo(off)
			start(off)
		default:
			err = p.Log.TruncateTo(off)
		}
		if err != nil {
			// The log is then longer than the core's view: its next append
			// is refused as a mismatch.
			p.m.o.Logger.Error("truncating to follow the leader", "topic", p.Topic, "partition", p.Index, "offset", off, "err", err)
		}
	}
	if rd.LogStartChanged {
		defer start(rd.LogStart) // after the append: the start may lie in what it brings
	}
	if len(rd.Append) == 0 {
		return replication.FetchAppended{}, false
	}
	base := rd.Append[0].Base
	out := replication.FetchAppended{Seq: rd.AppendSeq, End: base}
	r := p.rep.mu.r
	// rd.Append is a run of the fetched batches: find its bytes.
	first, last := -1, -1
	for i, bt := range p.rep.mu.batchIndex {
		if bt.Base == base {
			first = i
		}
		if bt.Base == rd.Append[len(rd.Append)-1].Base {
			last = i
		}
	}
	switch {
	case first < 0 || last < first:
		out.Err = errors.New("replication/host: the core appends batches the fetch did not carry")
	case p.Log.EndOffset() != r.LogEnd():
		out.Err = fmt.Errorf("%w: %s-%d: the log ends at %d, the replica's view at %d", replication.ErrLogMismatch, p.Topic, p.Index, p.Log.EndOffset(), r.LogEnd())
	case p.Log.LatestEpoch() > r.LeaderEpoch():
		out.Err = fmt.Errorf("%w: %s-%d: the log has led epoch %d, the replica follows epoch %d", replication.ErrLogMismatch, p.Topic, p.Index, p.Log.LatestEpoch(), r.LeaderEpoch())
	default:
		batches := p.rep.mu.batches[p.rep.mu.spans[first][0]:p.rep.mu.spans[last][1]]
		res, err := p.Log.AppendReplicated(batches)
		if res.LastOffset >= 0 {
			out.End = res.LastOffset + 1
			p.Metrics.Replicated(metrics.ReplicationBytesIn, len(batches))
		}
		switch {
		case err == nil:
		case (errors.Is(err, engine.ErrCorrupt) || errors.Is(err, engine.ErrInvalidBatch)) && !errors.Is(err, engine.ErrLogFailed):
			// Damaged in transit or cut short: fetched again, as Kafka's
			// fetcher retries a CorruptRecordException.
			p.m.o.Logger.Warn("the leader's records were refused; fetching them again", "topic", p.Topic, "partition", p.Index,
				"offset", out.End, "err", err)
			out.Err = fmt.Errorf("%w: %w", replication.ErrRecordsRefused, err)
		default:
			out.Err = err
		}
	}
	return out, true
}
