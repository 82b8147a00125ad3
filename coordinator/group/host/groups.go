package host

// Groups is the group coordinator of a broker: made as the broker starts
// (it owns no partition of __consumer_offsets until the broker is made the
// leader of one: Move), found by the group handlers (Coordinator) and
// closed as the broker stops.
//
// __consumer_offsets is compacted, with Kafka's internal topic configs
// (config.OffsetsTopicConfigs): the cleaner keeps each group's latest
// offset per partition and its latest metadata, and drops what tombstones
// deleted once delete.retention.ms has passed, so loading reads a bounded
// log and no retention by time loses the offsets of a quiet group.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/sluice-io/sluice/config"
	"github.com/sluice-io/sluice/coordinator/group"
)

// ErrClosed is returned by Coordinator once Close was called.
var ErrClosed = errors.New("group host: closing")

// GroupsOptions are a broker's collaborators for its group coordinator.
type GroupsOptions struct {
	Config config.GroupConfig
	Logger *slog.Logger
	// Partitions is the partition count of __consumer_offsets: as it was
	// created if it exists, else offsets.topic.num.partitions.
	Partitions int32
	// Topics is a topic's partition count in the controller's metadata
	// (group.Config's Topics).
	Topics func(topic string) (int32, bool)
	// Store are the collaborators of the coordinator's Store.
	Store Options
	// CreateTopic, set on the single node, creates __consumer_offsets if
	// it does not exist and reports whether it did: the first group
	// request creates it, as the first FindCoordinator does, because a
	// client that knows its coordinator is the only broker may skip
	// FindCoordinator. The new partitions are then waited for, bounded
	// by CreateWait.
	CreateTopic func() (bool, error)
	CreateWait  time.Duration
	// Lag are the collaborators of the lag sampler (lag.go).
	Lag LagOptions
}

// Groups holds the broker's group coordinator.
type Groups struct {
	opts  GroupsOptions
	store *Store
	c     *group.Coordinator // set at NewGroups, never changed

	mu     sync.Mutex
	closed bool

	lag lagSampler
}

// NewGroups makes the group coordinator of a broker.
func NewGroups(opts GroupsOptions) *Groups {
	g := &Groups{opts: opts, store: NewStore(opts.Store)}
	g.c = group.NewPartitioned(opts.groupConfig(), g.store)
	return g
}

// Store is the coordinator's store.
func (g *Groups) Store() *Store { return g.store }

// groupConfig is the coordinator's configuration.
func (o GroupsOptions) groupConfig() group.Config {
	gc := o.Config.WithDefaults()
	cfg := group.Config{
		Partitions:            o.Partitions,
		MinSessionTimeout:     gc.MinSessionTimeout,
		MaxSessionTimeout:     gc.MaxSessionTimeout,
		MaxGroupSize:          gc.MaxSize,
		OffsetsRetention:      gc.OffsetsRetention,
		OffsetsRetentionCheck: gc.OffsetsRetentionCheck,
		MaxMetadataBytes:      gc.OffsetMetadataMax,
		Logger:                o.Logger,
		Topics:                o.Topics,
	}
	if d := gc.InitialRebalanceDelay; d != nil {
		cfg.InitialRebalanceDelay, cfg.NoInitialDelay = *d, *d == 0
	}
	return cfg
}

// Coordinator returns the group coordinator for a group request, creating
// __consumer_offsets first where Options.CreateTopic says so; ErrClosed
// once the broker is closing.
func (g *Groups) Coordinator() (*group.Coordinator, error) {
	g.mu.Lock()
	closed := g.closed
	g.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	if g.opts.CreateTopic == nil {
		return g.c, nil
	}
	created, err := g.opts.CreateTopic()
	if err != nil || !created {
		return g.c, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), g.opts.CreateWait)
	defer cancel()
	for p := range g.c.Partitions() {
		if err := g.c.WaitLoaded(ctx, p); err != nil {
			return nil, fmt.Errorf("group host: loading %s-%d: %w", OffsetsTopic, p, err)
		}
	}
	return g.c, nil
}

// Existing is the group coordinator, closing or not: for the broker's own
// uses (metrics, markers, deleted topics), which need no topic created.
func (g *Groups) Existing() *group.Coordinator { return g.c }

// Move loads (lead) or unloads the groups of a partition of
// __consumer_offsets at its leader epoch, as the broker gains or loses
// its leadership.
func (g *Groups) Move(partition int32, lead bool, leaderEpoch int32) {
	if lead {
		g.c.Load(partition, leaderEpoch)
	} else {
		g.c.Unload(partition, leaderEpoch)
	}
}

// Close stops the coordinator (parked joins and syncs are answered
// NOT_COORDINATOR, so that connections can finish) and the lag sampler's
// connections.
func (g *Groups) Close() {
	g.mu.Lock()
	if !g.closed {
		g.closed = true
		g.c.Close()
	}
	g.mu.Unlock()
	g.lag.close()
}
