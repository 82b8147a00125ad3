package broker

// Consumer lag (issue 18): for every group this broker coordinates, per
// partition with a committed offset, the partition's high watermark less
// the offset, as Burrow and kafka-lag-exporter compute it (Kafka itself
// exports no lag). The high watermark of a partition this broker leads is
// read from it; of one led elsewhere it is asked of its leader, one
// ListOffsets (latest, read_uncommitted) per leader, through a connection
// of this broker's own (cluster mode). The figures are sampled at most once
// per lagSampleInterval, whatever the scrape rate, and cost nothing unless
// asked for.

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/wire/interbroker"
)

// lagSampleInterval bounds how often GroupLag asks the leaders.
const lagSampleInterval = 10 * time.Second

// lagAskTimeout bounds one sample's requests.
const lagAskTimeout = 5 * time.Second

// GroupLag is one group's lag on one partition.
type GroupLag struct {
	Group     string
	Topic     string
	Partition int32
	// Committed is the group's committed offset, End the partition's high
	// watermark when sampled; Lag is End less Committed, at least 0. End
	// is -1 (and Lag 0) when the leader could not be asked.
	Committed, End, Lag int64
}

// lagSampler caches the last sample.
type lagSampler struct {
	mu   sync.Mutex
	at   time.Time
	lags []GroupLag
	send interbroker.Sender // cluster mode, opened at the first remote ask
}

// GroupLag returns the lag of every group this broker coordinates, by
// group, topic and partition, sampled at most once per
// lagSampleInterval.
func (b *Broker) GroupLag(ctx context.Context) []GroupLag {
	s := &b.lag
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.at.IsZero() && time.Since(s.at) < lagSampleInterval {
		return slices.Clone(s.lags)
	}
	s.lags = b.sampleLag(ctx)
	s.at = time.Now()
	return slices.Clone(s.lags)
}

// sampleLag takes one sample. Called under lagSampler.mu.
func (b *Broker) sampleLag(ctx context.Context) []GroupLag {
	g := b.existingGroups()
	if g == nil {
		return nil
	}
	var out []GroupLag
	type key struct {
		topic     string
		partition int32
	}
	ends := map[key]int64{}
	remote := map[int32][]key{} // by leader
	snap := b.ctl.cache.load()
	for _, gs := range g.Stats() {
		for _, o := range gs.Offsets {
			k := key{o.Topic, o.Partition}
			out = append(out, GroupLag{Group: gs.ID, Topic: o.Topic, Partition: o.Partition, Committed: o.Offset, End: -1})
			if _, ok := ends[k]; ok {
				continue
			}
			ends[k] = -1
			if p := b.partition(o.Topic, o.Partition); p != nil && p.Leads() {
				ends[k] = p.HighWatermark()
				continue
			}
			if b.cluster == nil {
				continue
			}
			if t := snap.topics[o.Topic]; t != nil {
				if cp, ok := t.partitions[o.Partition]; ok && cp.leader >= 0 && cp.leader != b.cfg.ID {
					remote[cp.leader] = append(remote[cp.leader], k)
				}
			}
		}
	}
	if len(remote) > 0 {
		ctx, cancel := context.WithTimeout(ctx, lagAskTimeout)
		defer cancel()
		if b.lag.send == nil {
			b.lag.send = b.openInterBroker(b.cluster.zk, interbroker.Options{RequestTimeout: lagAskTimeout,
				ClientID: "broker-" + strconv.Itoa(int(b.cfg.ID)) + "-lag"})
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
			resp, err := b.lag.send.Send(ctx, leader, req)
			if err != nil {
				b.log.Debug("asking a leader for high watermarks", "leader", leader, "err", err)
				continue
			}
			for _, rt := range resp.(*kmsg.ListOffsetsResponse).Topics {
				for _, rp := range rt.Partitions {
					if rp.ErrorCode == 0 {
						ends[key{rt.Topic, rp.Partition}] = rp.Offset
					} else {
						b.log.Debug("a leader's high watermark", "topic", rt.Topic, "partition", rp.Partition, "err", kerr.ErrorForCode(rp.ErrorCode))
					}
				}
			}
		}
	}
	for i := range out {
		l := &out[i]
		l.End = ends[key{l.Topic, l.Partition}]
		if l.End >= 0 {
			l.Lag = max(l.End-l.Committed, 0)
		}
	}
	return out
}

// closeLag closes the sampler's connections.
func (b *Broker) closeLag() {
	b.lag.mu.Lock()
	defer b.lag.mu.Unlock()
	if b.lag.send != nil {
		b.lag.send.Close()
		b.lag.send = nil
	}
}
