package host

// Consumer lag (issue 18): for every group this broker coordinates, per
// partition with a committed offset, the partition's high watermark less
// the offset, as Burrow and kafka-lag-exporter compute it (Kafka itself
// exports no lag). The high watermark of a partition this broker leads is
// read from it; of one led elsewhere it is asked of its leader, one
// ListOffsets (latest, read_uncommitted) per leader, through a connection
// of the sampler's own (LagOptions.Dial, cluster mode). The figures are
// sampled at most once per lagSampleInterval, whatever the scrape rate,
// and cost nothing unless asked for.

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/wire/interbroker"
)

// lagSampleInterval bounds how often Lag asks the leaders.
const lagSampleInterval = 10 * time.Second

// lagAskTimeout bounds one sample's requests.
const lagAskTimeout = 5 * time.Second

// Lag is one group's lag on one partition.
type Lag struct {
	Group     string
	Topic     string
	Partition int32
	// Committed is the group's committed offset, End the partition's high
	// watermark when sampled; Lag is End less Committed, at least 0. End
	// is -1 (and Lag 0) when the leader could not be asked.
	Committed, End, Lag int64
}

// LagOptions are the sampler's collaborators.
type LagOptions struct {
	// HighWatermark is the high watermark of a partition this broker
	// leads; false if it does not lead it.
	HighWatermark func(topic string, partition int32) (int64, bool)
	// Leader is the leader of a partition that another broker leads, by
	// the metadata cache; false if none or this one.
	Leader func(topic string, partition int32) (int32, bool)
	// Dial opens the sampler's connections to other brokers; nil on the
	// single node.
	Dial     func(interbroker.Options) interbroker.Sender
	ClientID string
}

// lagSampler caches the last sample. Its mu is taken with no other lock
// held and held across the ListOffsets to other brokers, so one sample
// runs at a time.
type lagSampler struct {
	mu     sync.Mutex
	at     time.Time
	lags   []Lag
	send   interbroker.Sender // opened at the first remote ask
	closed bool               // no connection is opened once closed
}

// Lag returns the lag of every group this broker coordinates, by group,
// topic and partition, sampled at most once per lagSampleInterval.
func (g *Groups) Lag(ctx context.Context) []Lag {
	s := &g.lag
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.at.IsZero() && time.Since(s.at) < lagSampleInterval {
		return slices.Clone(s.lags)
	}
	s.lags = g.sampleLag(ctx)
	s.at = time.Now()
	return slices.Clone(s.lags)
}

// lagKey names a partition.
type lagKey struct {
	topic     string
	partition int32
}

// sampleLag takes one sample. Called under lagSampler.mu.
func (g *Groups) sampleLag(ctx context.Context) []Lag {
	o := g.opts.Lag
	var out []Lag
	ends := map[lagKey]int64{}
	remote := map[int32][]lagKey{} // by leader
	for _, gs := range g.c.Stats() {
		for _, off := range gs.Offsets {
			k := lagKey{off.Topic, off.Partition}
			out = append(out, Lag{Group: gs.ID, Topic: off.Topic, Partition: off.Partition, Committed: off.Offset, End: -1})
			if _, ok := ends[k]; ok {
				continue
			}
			ends[k] = -1
			if hw, ok := o.HighWatermark(k.topic, k.partition); ok {
				ends[k] = hw
				continue
			}
			if o.Dial == nil {
				continue
			}
			if leader, ok := o.Leader(k.topic, k.partition); ok {
				remote[leader] = append(remote[leader], k)
			}
		}
	}
	if len(remote) > 0 {
		g.askLeaders(ctx, remote, ends)
	}
	for i := range out {
		l := &out[i]
		l.End = ends[lagKey{l.Topic, l.Partition}]
		if l.End >= 0 {
			l.Lag = max(l.End-l.Committed, 0)
		}
	}
	return out
}

// askLeaders fills ends with the high watermarks of the partitions other
// brokers lead, one ListOffsets per leader. Called under lagSampler.mu.
func (g *Groups) askLeaders(ctx context.Context, remote map[int32][]lagKey, ends map[lagKey]int64) {
	ctx, cancel := context.WithTimeout(ctx, lagAskTimeout)
	defer cancel()
	s := &g.lag
	if s.closed {
		return
	}
	if s.send == nil {
		s.send = g.opts.Lag.Dial(interbroker.Options{RequestTimeout: lagAskTimeout, ClientID: g.opts.Lag.ClientID})
	}
	for leader, ks := range remote {
		req := kmsg.NewPtrListOffsetsRequest()
		req.Version, req.ReplicaID = 4, -1
		for _, k := range ks {
			if n := len(req.Topics); n == 0 || req.Topics[n-1].Topic != k.topic {
				rt := kmsg.NewListOffsetsRequestTopic()
				rt.Topic = k.topic
				req.Topics = append(req.Topics, rt)
			}
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Partition, rp.Timestamp = k.partition, -1
			rt := &req.Topics[len(req.Topics)-1]
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp, err := s.send.Send(ctx, leader, req)
		if err != nil {
			g.opts.Logger.Debug("asking a leader for high watermarks", "leader", leader, "err", err)
			continue
		}
		for _, rt := range resp.(*kmsg.ListOffsetsResponse).Topics {
			for _, rp := range rt.Partitions {
				if rp.ErrorCode == 0 {
					ends[lagKey{rt.Topic, rp.Partition}] = rp.Offset
				} else {
					g.opts.Logger.Debug("a leader's high watermark", "topic", rt.Topic, "partition", rp.Partition, "err", kerr.ErrorForCode(rp.ErrorCode))
				}
			}
		}
	}
}

// close closes the sampler's connections.
func (s *lagSampler) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.send != nil {
		s.send.Close()
		s.send = nil
	}
}
