package group

// Ownership of the partitions of __consumer_offsets (Kafka's
// GroupCoordinator.onElection and onResignation, GroupMetadataManager's
// loadingPartitions, ownedPartitions and epochForPartitionId).

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"
)

// ownership is a partition's state in this coordinator.
type ownership int8

const (
	notOwned ownership = iota // another broker leads it, or nobody has said
	loading                   // this broker leads it; its records are being read
	owned                     // loaded: its groups are served
)

// partition is one partition's ownership, guarded by Coordinator.mu.
type partition struct {
	state ownership
	// epoch is the coordinator epoch (the partition's leader epoch) of the
	// last Load or Unload acted on; set tells whether there was one.
	epoch int32
	set   bool
	// load is the running load while loading; done is closed when the
	// partition leaves the loading state.
	load *partitionLoad
	done chan struct{}
	// err is why the last load failed, while notOwned after it.
	err error
	// ended are the transactions CompleteTxn reported while the partition
	// was loading: the load that installs its groups applies them, since
	// its read may have ended before their markers.
	ended []txnEnd
}

// txnEnd is a producer's transaction ended by a marker.
type txnEnd struct {
	producerID int64
	commit     bool
}

// partitionLoad is one run of a load; cancelled tells its reader to stop.
type partitionLoad struct {
	epoch     int32
	cancelled atomic.Bool
}

// code is what a request for one of the partition's groups is answered
// before the group is looked at (Kafka's validateGroupStatus).
func (p *partition) code() int16 {
	switch p.state {
	case owned:
		return 0
	case loading:
		return errLoadInProgress
	}
	return errNotCoordinator
}

// stale reports whether a Load or Unload at epoch is older than the last
// one acted on (Kafka's maybeUpdateCoordinatorEpoch), and records epoch
// otherwise.
func (p *partition) stale(epoch int32) bool {
	if p.set && epoch < p.epoch {
		return true
	}
	p.epoch, p.set = epoch, true
	return false
}

// Load tells the coordinator that this broker became the leader of a
// partition of __consumer_offsets at leader epoch epoch (Kafka's
// coordinator epoch). It returns at once: the partition is loading
// (requests for its groups are answered COORDINATOR_LOAD_IN_PROGRESS)
// while a goroutine reads it from the store; then its groups are live.
// A Load older than the partition's last Load or Unload is ignored, as is
// one for a partition already owned (its groups stay as they are) or
// already loading at the same epoch; a newer Load during a load restarts
// it, and the older load's result is discarded. WaitLoaded waits for the
// outcome.
func (c *Coordinator) Load(partition, epoch int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.closed || partition < 0 || partition >= c.cfg.Partitions {
		return
	}
	p := &c.mu.parts[partition]
	if p.state == loading && p.load.epoch == epoch {
		return
	}
	if p.stale(epoch) {
		c.log.Info("ignoring a stale load of a __consumer_offsets partition", "partition", partition, "epoch", epoch, "current_epoch", p.epoch)
		return
	}
	switch p.state {
	case owned:
		return
	case loading:
		p.load.cancelled.Store(true)
	default:
		p.state, p.done, p.err = loading, make(chan struct{}), nil
		c.mu.loading++
	}
	l := &partitionLoad{epoch: epoch}
	p.load = l
	c.loads.Add(1)
	go c.runLoad(partition, l)
}

// runLoad reads a partition and makes its groups live, unless the load
// went stale meanwhile.
func (c *Coordinator) runLoad(partition int32, l *partitionLoad) {
	defer c.loads.Done()
	start := time.Now()
	groups, err := c.read([]int32{partition}, &l.cancelled)
	// The new groups are nobody else's yet: their locks are taken before
	// Coordinator.mu, as the lock order wants, so that their timers are
	// armed before any request can reach them.
	for _, g := range groups {
		g.mu.Lock()
	}
	c.mu.Lock()
	current := !c.mu.closed && c.mu.parts[partition].load == l
	if current {
		if err != nil {
			c.endLoadLocked(partition, notOwned, err)
		} else {
			ended := c.mu.parts[partition].ended
			c.endLoadLocked(partition, owned, nil)
			for id, g := range groups {
				c.mu.groups[id] = g
			}
			for _, e := range ended {
				// A marker the read already applied finds nothing pending:
				// no transactional commit is accepted while loading.
				for id := range c.mu.txnGroups[e.producerID] {
					if g := groups[id]; g != nil {
						g.completeTxn(e.producerID, e.commit)
						delete(c.mu.txnGroups[e.producerID], id)
					}
				}
				if len(c.mu.txnGroups[e.producerID]) == 0 {
					delete(c.mu.txnGroups, e.producerID)
				}
			}
		}
	}
	c.mu.Unlock()
	for _, g := range groups {
		if current && err == nil {
			c.armLoaded(g)
		}
		g.mu.Unlock()
	}
	switch {
	case !current:
		c.log.Info("discarded a stale load of a __consumer_offsets partition", "partition", partition, "epoch", l.epoch)
	case err != nil:
		c.log.Error("loading a __consumer_offsets partition", "partition", partition, "epoch", l.epoch, "err", err)
	default:
		c.log.Info("loaded consumer groups", "partition", partition, "epoch", l.epoch, "groups", len(groups), "took", time.Since(start))
	}
}

// endLoadLocked moves a loading partition to state (owned, or notOwned
// with why); Coordinator.mu is held.
func (c *Coordinator) endLoadLocked(partition int32, state ownership, err error) {
	p := &c.mu.parts[partition]
	p.load.cancelled.Store(true)
	p.state, p.load, p.err, p.ended = state, nil, err, nil
	close(p.done)
	c.mu.loading--
}

// Unload tells the coordinator that this broker stopped leading a
// partition of __consumer_offsets, at leader epoch epoch. Its groups
// leave memory at once, nothing is written: parked JoinGroup and
// SyncGroup requests are answered NOT_COORDINATOR, timers stopped, and
// later requests answered NOT_COORDINATOR. A running load is cancelled.
// An Unload older than the last Load or Unload is ignored; one with a
// negative epoch (a StopReplica without a leader epoch: Kafka's NoEpoch
// -1 and EpochDuringDelete -2) always applies, as Kafka's resignation
// without an epoch, and leaves the recorded epoch as it was. Unload takes
// each of the partition's groups' locks, so it waits for a store append
// in progress for one of them.
func (c *Coordinator) Unload(partition, epoch int32) {
	c.mu.Lock()
	if c.mu.closed || partition < 0 || partition >= c.cfg.Partitions {
		c.mu.Unlock()
		return
	}
	p := &c.mu.parts[partition]
	if epoch >= 0 && p.stale(epoch) {
		c.mu.Unlock()
		c.log.Info("ignoring a stale unload of a __consumer_offsets partition", "partition", partition, "epoch", epoch, "current_epoch", p.epoch)
		return
	}
	if p.state == loading {
		c.endLoadLocked(partition, notOwned, nil)
	}
	p.state, p.err = notOwned, nil
	var gone []*group
	for id, g := range c.mu.groups {
		if g.partition == partition {
			gone = append(gone, g)
			delete(c.mu.groups, id)
		}
	}
	for pid, gs := range c.mu.txnGroups {
		for id := range gs {
			if c.partitionFor(id) == partition {
				delete(gs, id)
			}
		}
		if len(gs) == 0 {
			delete(c.mu.txnGroups, pid)
		}
	}
	c.mu.Unlock()
	for _, g := range gone {
		g.mu.Lock()
		g.stop()
		g.transition(dead, c.now())
		g.mu.Unlock()
	}
	c.log.Info("unloaded consumer groups", "partition", partition, "epoch", epoch, "groups", len(gone))
}

// Loaded reports whether the coordinator owns a partition, loaded.
func (c *Coordinator) Loaded(partition int32) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return partition >= 0 && partition < c.cfg.Partitions && c.mu.parts[partition].state == owned
}

// WaitLoaded waits until a partition is loaded (nil), its load fails (the
// store's error), it is unloaded or not loading (ErrNotOwned), the
// coordinator closes (ErrClosed) or ctx ends (its error). A load replaced
// by a newer Load is waited through.
func (c *Coordinator) WaitLoaded(ctx context.Context, partition int32) error {
	for {
		c.mu.Lock()
		if c.mu.closed {
			c.mu.Unlock()
			return ErrClosed
		}
		if partition < 0 || partition >= c.cfg.Partitions {
			c.mu.Unlock()
			return fmt.Errorf("%w: partition %d of %d", ErrNotOwned, partition, c.cfg.Partitions)
		}
		p := c.mu.parts[partition]
		c.mu.Unlock()
		switch p.state {
		case owned:
			return nil
		case notOwned:
			if p.err != nil {
				return p.err
			}
			return fmt.Errorf("%w: partition %d", ErrNotOwned, partition)
		}
		select {
		case <-p.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// status is the code a request for a group is answered before anything
// else is checked: 0 when its partition is owned.
func (c *Coordinator) status(groupID string) int16 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.closed {
		return 0
	}
	return c.mu.parts[c.partitionFor(groupID)].code()
}

// anyLoading reports whether a partition is loading.
func (c *Coordinator) anyLoading() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.loading > 0
}
