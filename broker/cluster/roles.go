package cluster

// The replica role table: what the controller told this broker about each
// partition it hosts, by LeaderAndIsr (leader or follower, at which leader
// epoch) and StopReplica (stopped, or deleted); replication/host/hosting.go makes the logs
// and partitions follow it (produce and fetch are served where this broker
// leads).
//
// Readers take no lock: the table is an immutable snapshot behind an
// atomic pointer. Writers (the control handlers, under ControlState.mu, so
// one at a time) copy it, change the copy and publish it; a reader sees
// either the whole of a request's effect or none of it.

import (
	"maps"
	"sync/atomic"

	"github.com/sluice-io/sluice/engine"
)

// Role is one hosted partition's state, as the last accepted
// LeaderAndIsr gave it.
type Role struct {
	TopicID     [16]byte // zero when the controller sent none (before v5)
	Leader      int32    // the leader's broker id; -1 none
	LeaderEpoch int32
	IsLeader    bool // leader == this broker
	Stopped     bool // StopReplica without delete: neither leader nor follower now
	ISR         []int32
	Replicas    []int32
	ZKVersion   int32 // the partition epoch (the state znode's version)
}

// Leads reports whether this broker is to lead the partition now.
func (r Role) Leads() bool { return r.IsLeader && !r.Stopped }

// RoleTable is one immutable snapshot of the table.
type RoleTable struct {
	Roles map[engine.Partition]Role
	// Deleted holds partitions StopReplica Deleted (or that this broker did
	// not host when told to delete them) whose logs are yet to be removed;
	// a later LeaderAndIsr hosting one again takes it out.
	Deleted map[engine.Partition]struct{}
}

type Roles struct{ tab atomic.Pointer[RoleTable] }

// Role returns a partition's Role, and whether this broker hosts it.
func (r *Roles) Role(topic string, partition int32) (Role, bool) {
	rr, ok := r.tab.Load().Roles[engine.Partition{Topic: topic, Partition: partition}]
	return rr, ok
}

// PendingDelete reports whether StopReplica deleted a partition and it has
// not been hosted again since.
func (r *Roles) PendingDelete(topic string, partition int32) bool {
	_, ok := r.tab.Load().Deleted[engine.Partition{Topic: topic, Partition: partition}]
	return ok
}

// Edit returns a copy of the table to change and publish with publish.
// Callers hold ControlState.mu.
func (r *Roles) Edit() *RoleTable {
	cur := r.tab.Load()
	return &RoleTable{Roles: maps.Clone(cur.Roles), Deleted: maps.Clone(cur.Deleted)}
}

func (r *Roles) Publish(t *RoleTable) { r.tab.Store(t) }

// Load returns the current table; it must not be changed.
func (r *Roles) Load() *RoleTable { return r.tab.Load() }
