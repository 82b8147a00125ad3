package broker

// Followers' fetchers (Kafka's ReplicaFetcherThread): one goroutine per
// source broker (the leader followed), multiplexing every partition this
// broker follows from it into one Fetch (replica id set, v12: epochs and
// DivergingEpoch), as replica.fetch.* configure (Kafka's defaults here:
// wait 500 ms, min 1 byte, 1 MiB per partition, 10 MiB per request,
// backoff 1 s). What to fetch is each partition's core's decision
// (Ready.Fetch, kept in replicaDriver.fetch); the answer is stepped into
// the core as a FetchResult, whose Ready the partition performs: truncate,
// append the leader's batches as they are (engine.AppendReplicated), the
// high watermark and log start learnt from the leader.
//
// Only ZooKeeper mode has followers (the single node leads every
// partition): requests go through a zk.NetSender, which finds a broker's
// address from its registration. The fetchers have one of their own, which
// reads every answer from a leader into one buffer (ReuseResponses): a
// fetcher is done with an answer before it sends the next fetch, so
// replication allocates nothing the size of the records it copies.

import (
	"errors"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/coordinator/zk"
	"github.com/sluice-io/sluice/engine"
	"github.com/sluice-io/sluice/replication"
)

const (
	replicaFetchWaitMax     = 500 * time.Millisecond // replica.fetch.wait.max.ms
	replicaFetchMaxBytes    = 1 << 20                // replica.fetch.max.bytes
	replicaFetchRespMax     = 10 << 20               // replica.fetch.response.max.bytes
	replicaFetchBackoff     = time.Second            // replica.fetch.backoff.ms
	replicaFetchVersion     = 12
	replicaFetchSendTimeout = 30 * time.Second
)

// fetchers are a broker's fetchers, by source broker.
type fetchers struct {
	b    *Broker
	send *zk.NetSender

	mu struct {
		sync.Mutex
		bySource map[int32]*fetcher
	}
}

// fetcher fetches for the partitions following one leader.
type fetcher struct {
	f      *fetchers
	leader int32
	wake   chan struct{} // capacity 1

	mu struct {
		sync.Mutex
		parts map[*partition]struct{}
	}

	// The fetcher goroutine's, reused for every partition of every answer:
	// the batches of the answer being stepped and their spans (fetched).
	batches []replication.Batch
	spans   [][2]int
}

func newFetchers(b *Broker, send *zk.NetSender) *fetchers {
	fs := &fetchers{b: b, send: send}
	fs.mu.bySource = map[int32]*fetcher{}
	return fs
}

// want registers p with its leader's fetcher (starting it), to send the
// fetch p's core decided. Called under p's replica lock.
func (fs *fetchers) want(leader int32, p *partition) {
	fs.mu.Lock()
	f := fs.mu.bySource[leader]
	if f == nil {
		f = &fetcher{f: fs, leader: leader, wake: make(chan struct{}, 1)}
		f.mu.parts = map[*partition]struct{}{}
		fs.mu.bySource[leader] = f
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

// pending is a partition's fetch to send.
type pending struct {
	p   *partition
	req replication.FetchRequest
}

// take returns the fetches the fetcher's partitions want now (their
// core's pending fetch of this leader), dropping partitions that follow
// another leader or none.
// Lock order: a partition's replica lock before fetcher.mu (want is
// called under it), so the partitions are read with fetcher.mu released.
func (f *fetcher) take() []pending {
	f.mu.Lock()
	parts := make([]*partition, 0, len(f.mu.parts))
	for p := range f.mu.parts {
		parts = append(parts, p)
	}
	f.mu.Unlock()
	var out []pending
	for _, p := range parts {
		p.rep.mu.Lock()
		req, ok := p.rep.mu.fetch, p.rep.mu.fetching
		if ok && req.Leader == f.leader {
			p.rep.mu.fetching = false // sent now; the answer's Ready asks for the next
		}
		p.rep.mu.Unlock()
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
	return out
}

func (f *fetcher) run() {
	b := f.f.b
	for {
		ps := f.take()
		if len(ps) == 0 {
			select {
			case <-f.wake:
				continue
			case <-b.closing:
				return
			}
		}
		if err := f.fetch(ps); err != nil {
			select {
			case <-time.After(replicaFetchBackoff):
			case <-b.closing:
				return
			}
		}
	}
}

// fetch sends one Fetch for ps and steps each partition's answer.
func (f *fetcher) fetch(ps []pending) error {
	b := f.f.b
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(replicaFetchVersion)
	req.ReplicaID = b.cfg.ID
	req.MaxWaitMillis = int32(replicaFetchWaitMax.Milliseconds())
	req.MinBytes = 1
	req.MaxBytes = replicaFetchRespMax
	req.SessionEpoch = -1
	byTopic := map[string]int{}
	for _, pd := range ps {
		i, ok := byTopic[pd.p.topic]
		if !ok {
			i = len(req.Topics)
			byTopic[pd.p.topic] = i
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic = pd.p.topic
			req.Topics = append(req.Topics, rt)
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = pd.p.index, pd.req.Offset, replicaFetchMaxBytes
		rp.LastFetchedEpoch, rp.CurrentLeaderEpoch, rp.LogStartOffset = pd.req.LastFetchedEpoch, pd.req.CurrentLeaderEpoch, -1
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	}
	ctx, cancel := b.closingContext(replicaFetchSendTimeout)
	defer cancel()
	raw, err := f.f.send.Send(ctx, f.leader, req)
	if err != nil {
		for _, pd := range ps {
			pd.p.step(replication.FetchResult{Seq: pd.req.Seq, Err: replication.ErrUnreachable})
		}
		return err
	}
	resp := raw.(*kmsg.FetchResponse)
	answered := map[*partition]bool{}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			for _, pd := range ps {
				if pd.p.topic == rt.Topic && pd.p.index == rp.Partition && !answered[pd.p] {
					answered[pd.p] = true
					f.fetched(pd.p, pd.req.Seq, &rp)
				}
			}
		}
	}
	for _, pd := range ps {
		if !answered[pd.p] {
			pd.p.step(replication.FetchResult{Seq: pd.req.Seq, Err: replication.ErrUnreachable})
		}
	}
	if resp.ErrorCode != 0 {
		return kerr.ErrorForCode(resp.ErrorCode)
	}
	return nil
}

// fetched steps a fetch answer into p's core, with the batches it carried.
// The core keeps none of them past the step (Advance drops its Ready), so
// their index is built in the fetcher's reused slices.
func (f *fetcher) fetched(p *partition, seq uint64, rp *kmsg.FetchResponseTopicPartition) {
	ev := replication.FetchResult{Seq: seq, HighWatermark: rp.HighWatermark, LeaderLogStart: max(rp.LogStartOffset, 0),
		LeaderLogEnd: 1<<63 - 1} // unknown: a fetch answers no log end
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
	p.rep.mu.Lock()
	defer p.rep.mu.Unlock()
	p.rep.mu.batches, p.rep.mu.spans = data, f.spans
	p.rep.mu.batchIndex = ev.Batches
	p.stepLocked(ev)
	p.rep.mu.batches, p.rep.mu.spans, p.rep.mu.batchIndex = nil, nil, nil
}

// performFollower carries out a follower's Ready: truncation, the
// leader's batches appended as they are. Under p's replica lock.
func (p *partition) performFollower(rd *replication.Ready) error {
	var errs []error
	start := func(off int64) {
		_, err := p.log.IncrementStartOffset(off)
		errs = append(errs, err)
	}
	if rd.Truncated {
		off := rd.Truncate.Offset
		switch {
		case rd.Truncate.Fully && off >= p.log.EndOffset():
			start(off)
		case rd.Truncate.Fully:
			errs = append(errs, p.log.TruncateTo(off))
			start(off)
		default:
			errs = append(errs, p.log.TruncateTo(off))
		}
	}
	if len(rd.Append) > 0 {
		// rd.Append is a run of the fetched batches: find its bytes.
		first, last := -1, -1
		for i, bt := range p.rep.mu.batchIndex {
			if bt.Base == rd.Append[0].Base {
				first = i
			}
			if bt.Base == rd.Append[len(rd.Append)-1].Base {
				last = i
			}
		}
		if first >= 0 && last >= first {
			_, err := p.log.AppendReplicated(p.rep.mu.batches[p.rep.mu.spans[first][0]:p.rep.mu.spans[last][1]])
			errs = append(errs, err)
		} else {
			errs = append(errs, errors.New("broker: the core appends batches the fetch did not carry"))
		}
	}
	if rd.LogStartChanged {
		start(rd.LogStart)
	}
	return errors.Join(errs...)
}
