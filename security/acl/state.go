package acl

// The broker's ACLs as a service: an Authorizer loaded from a Store at
// start and kept current by the store's change notifications (each
// notified resource pattern is read again). The ACL APIs' administration
// of the same store is admin.go.

import (
	"fmt"
	"log/slog"
)

// Store keeps ACLs by resource pattern, durably (the single node: a file
// of its data directory; ZooKeeper mode: the /kafka-acl znodes, shared by
// every broker). The broker adapts its coordinator to it.
type Store interface {
	// LoadACLs reads every resource pattern's ACLs.
	LoadACLs() (map[Resource][]Entry, error)
	// ACLs reads one resource pattern's ACLs.
	ACLs(r Resource) ([]Entry, error)
	// UpdateACLs replaces r's ACLs with what change returns for the
	// current ones (an empty result removes them), atomically with
	// respect to other writers, announces the change to the other
	// brokers and returns the stored list. An error from change is
	// returned as is, with nothing written.
	UpdateACLs(r Resource, change func(cur []Entry) ([]Entry, error)) ([]Entry, error)
	// OnACLChange sets fn to be called with each resource pattern whose
	// ACLs changed. It is called once, after LoadACLs, and must deliver
	// the changes made since the load began.
	OnACLChange(fn func(r Resource))
}

// Service is a broker's authorizer and the administration of its ACLs. A
// nil *Service is a broker with no authorizer: Authorizer is nil and the
// ACL APIs answer SECURITY_DISABLED.
type Service struct {
	authz *Authorizer
	store Store
	log   *slog.Logger
}

// Start returns the service of an authorizer with superUsers and
// allow.everyone.if.no.acl.found = allowIfNoACL, loaded with every ACL of
// store and following its changes.
func Start(store Store, superUsers []Principal, allowIfNoACL bool, log *slog.Logger) (*Service, error) {
	if log == nil {
		log = slog.Default()
	}
	s := &Service{authz: New(superUsers, allowIfNoACL), store: store, log: log}
	// Load, then watch: the store delivers every change made since the
	// load began, so none is missed.
	all, err := store.LoadACLs()
	if err != nil {
		return nil, fmt.Errorf("broker: loading ACLs: %w", err)
	}
	s.authz.SetAll(all)
	store.OnACLChange(s.Reload)
	return s, nil
}

// Authorizer is the service's authorizer; nil for a nil service.
func (s *Service) Authorizer() *Authorizer {
	if s == nil {
		return nil
	}
	return s.authz
}

// Reload reads one resource pattern's ACLs from the store into the
// authorizer, after a change notification; an error is logged, and the
// authorizer keeps what it had.
func (s *Service) Reload(r Resource) {
	entries, err := s.store.ACLs(r)
	if err != nil {
		s.log.Error("reloading ACLs", "resource", r.String(), "err", err)
		return
	}
	s.authz.Set(map[Resource][]Entry{r: entries})
}
