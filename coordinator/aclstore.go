package coordinator

// Where a cluster keeps its ACLs. The broker's authorizer
// (security/acl) holds them in memory; an ACLStore makes them durable and,
// in ZooKeeper mode, shared: every broker loads them all at start and
// learns of each change another broker makes (coordinator/zk/acls.go). On
// the single node they live in a file of the data directory
// (fileacls.go).

import (
	"errors"

	"github.com/sluice-io/sluice/security/acl"
)

// ACLStore keeps ACLs by resource pattern.
type ACLStore interface {
	// LoadACLs reads every resource pattern's ACLs.
	LoadACLs() (map[acl.Resource][]acl.Entry, error)
	// ACLs reads one resource pattern's ACLs.
	ACLs(r acl.Resource) ([]acl.Entry, error)
	// UpdateACLs replaces r's ACLs with what change returns for the
	// current ones (an empty result removes them), atomically with
	// respect to other writers (ZooKeeper: conditional on the znode's
	// version, retried), announces the change to the other brokers and
	// returns the stored list. An error from change is returned as is,
	// with nothing written.
	UpdateACLs(r acl.Resource, change func(cur []acl.Entry) ([]acl.Entry, error)) ([]acl.Entry, error)
	// OnACLChange sets fn to be called with each resource pattern whose
	// ACLs changed (by another broker, or this one: fn reloads it with
	// ACLs). It is called once, after LoadACLs: changes made since the
	// load began are delivered (ZooKeeper: the watchers begin with the
	// notifications there already). The single node never calls fn.
	OnACLChange(fn func(r acl.Resource))
}

// ErrCorruptACLs marks a stored ACL document that cannot be read; the
// error names the file or znode and the element.
var ErrCorruptACLs = errors.New("coordinator: corrupt ACLs")
