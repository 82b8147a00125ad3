package broker

// The replica role table: what the controller told this broker about each
// partition it hosts, by LeaderAndIsr (leader or follower, at which leader
// epoch) and StopReplica (stopped, or deleted); hosting.go makes the logs
// and partitions follow it (produce and fetch are served where this broker
// leads).
//
// Readers take no lock: the table is an immutable snapshot behind an
// atomic pointer. Writers (the control handlers, under controlState.mu, so
// one at a time) copy it, change the copy and publish it; a reader sees
// either the whole of a request's effect or none of it.

import (
	"maps"
	"sync/atomic"
)

// replicaRole is one hosted partition's state, as the last accepted
// LeaderAndIsr gave it.
type replicaRole struct {
	topicID     [16]byte // zero when the controller sent none (before v5)
	leader      int32    // the leader's broker id; -1 none
	leaderEpoch int32
	isLeader    bool // leader == this broker
	stopped     bool // StopReplica without delete: neither leader nor follower now
	isr         []int32
	replicas    []int32
	zkVersion   int32 // the partition epoch (the state znode's version)
}

// leads reports whether this broker is to lead the partition now.
func (r replicaRole) leads() bool { return r.isLeader && !r.stopped }

// roleTable is one immutable snapshot of the table.
type roleTable struct {
	roles map[topicPartition]replicaRole
	// deleted holds partitions StopReplica deleted (or that this broker did
	// not host when told to delete them) whose logs are yet to be removed;
	// a later LeaderAndIsr hosting one again takes it out.
	deleted map[topicPartition]struct{}
}

type replicaRoles struct{ tab atomic.Pointer[roleTable] }

// role returns a partition's role, and whether this broker hosts it.
func (r *replicaRoles) role(topic string, partition int32) (replicaRole, bool) {
	rr, ok := r.tab.Load().roles[topicPartition{topic, partition}]
	return rr, ok
}

// pendingDelete reports whether StopReplica deleted a partition and it has
// not been hosted again since.
func (r *replicaRoles) pendingDelete(topic string, partition int32) bool {
	_, ok := r.tab.Load().deleted[topicPartition{topic, partition}]
	return ok
}

// edit returns a copy of the table to change and publish with publish.
// Callers hold controlState.mu.
func (r *replicaRoles) edit() *roleTable {
	cur := r.tab.Load()
	return &roleTable{roles: maps.Clone(cur.roles), deleted: maps.Clone(cur.deleted)}
}

func (r *replicaRoles) publish(t *roleTable) { r.tab.Store(t) }
