package group

// Records of __consumer_offsets, in Kafka's formats (each key and value
// starts with its int16 version, then the fields of kmsg's types):
//
//	offset commit   key   OffsetCommitKey v1     group, topic, partition
//	                value OffsetCommitValue v3   offset, leader epoch, metadata, commit time
//	group metadata  key   GroupMetadataKey v2    group
//	                value GroupMetadataValue v3  protocol type, generation, protocol,
//	                                             leader, state time, members
//	                                             (id, instance id, client id and host,
//	                                             timeouts, subscription, assignment)
//
// A tombstone (no value) deletes its key. Offsets the group coordinator
// writes for TxnOffsetCommit are the same records in a transactional batch
// of the producer (txnoffsets.go); the producer's commit or abort marker
// later in the partition ends them. Loading reads a partition (New:
// every partition) in order and keeps the last record of each key, a
// transaction's offsets pending until its marker (applied then as
// CompleteTxn applies it; without a marker yet they stay pending); a record that does not
// parse is skipped with a warning (a broker that cannot start over one bad
// record would lose every group, not one), and a storage error fails the
// load.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func offsetKey(group, topic string, partition int32) []byte {
	k := kmsg.NewOffsetCommitKey()
	k.Version, k.Group, k.Topic, k.Partition = 1, group, topic, partition
	return k.AppendTo(nil)
}

func offsetValue(o committed) []byte {
	v := kmsg.NewOffsetCommitValue()
	v.Version, v.Offset, v.LeaderEpoch, v.Metadata, v.CommitTimestamp = 3, o.offset, o.leaderEpoch, o.metadata, o.commitTime
	return v.AppendTo(nil)
}

func groupKey(group string) []byte {
	k := kmsg.NewGroupMetadataKey()
	k.Version, k.Group = 2, group
	return k.AppendTo(nil)
}

func ptrIfSet(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// storeGroup writes the group's metadata with assignment (member id ->
// assignment) to its partition.
func (c *Coordinator) storeGroup(g *group, assignment map[string][]byte) error {
	v := kmsg.NewGroupMetadataValue()
	v.Version = 3
	v.ProtocolType, v.Generation = g.protocolType, g.generation
	v.Protocol, v.Leader = ptrIfSet(g.protocolName), ptrIfSet(g.leader)
	v.CurrentStateTimestamp = g.stateTime.UnixMilli()
	for _, id := range g.order {
		m := g.members[id]
		vm := kmsg.NewGroupMetadataValueMember()
		vm.MemberID, vm.InstanceID, vm.ClientID, vm.ClientHost = m.id, m.instanceID, m.clientID, m.clientHost
		vm.RebalanceTimeoutMillis = int32(m.rebalanceTimeout.Milliseconds())
		vm.SessionTimeoutMillis = int32(m.sessionTimeout.Milliseconds())
		vm.Subscription, vm.Assignment = m.metadata(g.protocolName), assignment[id]
		if vm.Assignment == nil {
			vm.Assignment = []byte{}
		}
		v.Members = append(v.Members, vm)
	}
	return c.store.Append(g.partition, []Record{{Key: groupKey(g.id), Value: v.AppendTo(nil)}})
}

// read rebuilds the groups of partitions from the store. Their timers are
// not armed (armLoaded does it once they are live). A set cancelled stops
// the read with errLoadCancelled.
func (c *Coordinator) read(partitions []int32, cancelled *atomic.Bool) (map[string]*group, error) {
	type loaded struct {
		meta    *kmsg.GroupMetadataValue
		offsets map[topicPartition]committed
		pending map[int64]map[topicPartition]committed // by producer id
	}
	all := map[string]*loaded{}
	get := func(id string) *loaded {
		l := all[id]
		if l == nil {
			l = &loaded{offsets: map[topicPartition]committed{}, pending: map[int64]map[topicPartition]committed{}}
			all[id] = l
		}
		return l
	}
	// The groups holding each producer's pending offsets, so a marker
	// finds them (Kafka's loader keys its pendingOffsets by producer).
	txnGroups := map[int64]map[string]struct{}{}
	for _, p := range partitions {
		err := c.store.Read(p, func(r Record) error {
			if cancelled != nil && cancelled.Load() {
				return errLoadCancelled
			}
			if r.Marker != NoMarker {
				// A transaction's end: a commit makes its offsets the
				// committed ones where written after them, an abort
				// drops them (Kafka's loadGroupsAndOffsets).
				for id := range txnGroups[r.ProducerID] {
					l := all[id]
					if l == nil {
						continue
					}
					if r.Marker == MarkerCommit {
						applyTxn(l.offsets, l.pending[r.ProducerID])
					}
					delete(l.pending, r.ProducerID)
				}
				delete(txnGroups, r.ProducerID)
				return nil
			}
			if len(r.Key) < 2 {
				c.log.Warn("skipping a record that is not the coordinator's", "partition", p, "key_bytes", len(r.Key))
				return nil
			}
			switch version := int16(binary.BigEndian.Uint16(r.Key)); version {
			case 0, 1:
				var k kmsg.OffsetCommitKey
				if err := k.ReadFrom(r.Key); err != nil {
					c.log.Warn("skipping an offset record whose key does not parse", "partition", p, "err", err)
					return nil
				}
				l, tp := get(k.Group), topicPartition{k.Topic, k.Partition}
				offsets := l.offsets
				if r.Transactional {
					offsets = l.pending[r.ProducerID]
					if offsets == nil {
						offsets = map[topicPartition]committed{}
						l.pending[r.ProducerID] = offsets
					}
					gs := txnGroups[r.ProducerID]
					if gs == nil {
						gs = map[string]struct{}{}
						txnGroups[r.ProducerID] = gs
					}
					gs[k.Group] = struct{}{}
				}
				if r.Value == nil {
					delete(offsets, tp)
					return nil
				}
				var v kmsg.OffsetCommitValue
				if err := v.ReadFrom(r.Value); err != nil {
					c.log.Warn("skipping an offset record whose value does not parse", "partition", p, "group", k.Group, "topic", k.Topic, "topic_partition", k.Partition, "err", err)
					return nil
				}
				expire := int64(-1)
				if v.Version == 1 {
					expire = v.ExpireTimestamp
				}
				leaderEpoch := int32(-1)
				if v.Version >= 3 {
					leaderEpoch = v.LeaderEpoch
				}
				offsets[tp] = committed{offset: v.Offset, leaderEpoch: leaderEpoch, metadata: v.Metadata, commitTime: v.CommitTimestamp, expireTime: expire, order: c.order.Add(1)}
			case 2:
				var k kmsg.GroupMetadataKey
				if err := k.ReadFrom(r.Key); err != nil {
					c.log.Warn("skipping a group record whose key does not parse", "partition", p, "err", err)
					return nil
				}
				l := get(k.Group)
				if r.Value == nil {
					// The group was deleted: its offsets were tombstoned first.
					l.meta = nil
					if len(l.offsets) == 0 && len(l.pending) == 0 {
						delete(all, k.Group)
					}
					return nil
				}
				v := new(kmsg.GroupMetadataValue)
				if err := v.ReadFrom(r.Value); err != nil {
					c.log.Warn("skipping a group record whose value does not parse", "partition", p, "group", k.Group, "err", err)
					return nil
				}
				l.meta = v
			default:
				// Newer record types (consumer-protocol groups, KIP-848) are
				// not this coordinator's.
			}
			return nil
		})
		if err != nil {
			if errors.Is(err, errLoadCancelled) {
				return nil, err
			}
			return nil, fmt.Errorf("group: read partition %d of __consumer_offsets: %w", p, err)
		}
	}
	now := c.now()
	out := make(map[string]*group, len(all))
	for id, l := range all {
		g := newGroup(id, c.partitionFor(id), now)
		g.offsets = l.offsets
		for pid, pend := range l.pending {
			if len(pend) > 0 {
				g.pendingTxn[pid] = pend
				c.addTxnGroup(pid, id) // still open: its marker comes later
			}
		}
		if m := l.meta; m != nil {
			g.protocolType, g.generation = m.ProtocolType, m.Generation
			if m.Protocol != nil {
				g.protocolName = *m.Protocol
			}
			if m.CurrentStateTimestamp > 0 {
				g.stateTime = time.UnixMilli(m.CurrentStateTimestamp)
			}
			for _, vm := range m.Members {
				mm := &member{
					id: vm.MemberID, instanceID: vm.InstanceID, clientID: vm.ClientID, clientHost: vm.ClientHost,
					rebalanceTimeout: time.Duration(vm.RebalanceTimeoutMillis) * time.Millisecond,
					sessionTimeout:   time.Duration(vm.SessionTimeoutMillis) * time.Millisecond,
					protocolType:     m.ProtocolType,
					protocols:        []protocol{{g.protocolName, vm.Subscription}},
					assignment:       vm.Assignment,
				}
				if m.Version == 0 {
					mm.rebalanceTimeout = mm.sessionTimeout
				}
				g.add(mm, nil)
			}
			if m.Leader != nil {
				g.leader = *m.Leader
			}
			if len(g.members) > 0 {
				g.state = stable
				g.subscribed = g.computeSubscribed()
			}
		}
		out[id] = g
	}
	return out, nil
}

// armLoaded starts the session timers of a loaded group's members, once
// the group is live; g.mu is held.
func (c *Coordinator) armLoaded(g *group) {
	for _, m := range g.members {
		c.scheduleExpiry(g, m, m.sessionTimeout)
	}
}
