package acl

// The ACL APIs' administration (DescribeAcls, CreateAcls, DeleteAcls) as
// Kafka's ZooKeeper-mode AclAuthorizer does it: filters and bindings are
// checked, changes go to the Store one resource pattern at a time and
// then to the Authorizer. The answers carry Kafka's error codes and
// messages; the handlers only decode, check the caller's permission and
// encode.

import (
	"github.com/twmb/franz-go/pkg/kerr"
)

// Status is how one item of an ACL request ended: a Kafka error code (0
// for none) and its message.
type Status struct {
	Code    int16
	Message string
}

// OK reports whether the status is no error.
func (s Status) OK() bool { return s.Code == 0 }

func invalid(err error) Status { return Status{Code: kerr.InvalidRequest.Code, Message: err.Error()} }

func storeFailed(err error) Status {
	return Status{Code: kerr.UnknownServerError.Code, Message: "storing the ACLs failed: " + err.Error()}
}

// Describe returns the ACLs f matches, sorted by resource pattern. An
// invalid filter is INVALID_REQUEST; a nil service SECURITY_DISABLED.
func (s *Service) Describe(f Filter) ([]Binding, Status) {
	if s == nil {
		return nil, Status{Code: kerr.SecurityDisabled.Code, Message: "No Authorizer is configured on the broker"}
	}
	if err := f.Validate(); err != nil {
		return nil, invalid(err)
	}
	return s.authz.Bindings(f), Status{}
}

// Creation is one ACL a CreateAcls asks for, its principal as the request
// gives it ("Type:name").
type Creation struct {
	Resource   Resource
	Principal  string
	Host       string
	Operation  Operation
	Permission Permission
}

// Create adds the ACLs creations ask for, on behalf of by (for the log),
// and returns each one's status. Each is checked alone (INVALID_REQUEST:
// a principal not Type:name, or a binding Binding.Validate refuses); the
// valid ones are added to their resource pattern's ACLs in the store (a
// set: an existing ACL is no change), one update per pattern in the order
// of their first creation, and then to the authorizer. A failed update is
// UNKNOWN_SERVER_ERROR for its pattern's creations. A nil service answers
// SECURITY_DISABLED for each.
func (s *Service) Create(by Principal, creations []Creation) []Status {
	out := make([]Status, len(creations))
	if s == nil {
		for i := range out {
			out[i] = Status{Code: kerr.SecurityDisabled.Code, Message: "No Authorizer is configured."}
		}
		return out
	}
	byResource := map[Resource][]int{} // creations' indexes
	var order []Resource
	entries := make([]Entry, len(creations))
	for i, cr := range creations {
		p, err := ParsePrincipal(cr.Principal)
		if err != nil {
			out[i] = invalid(err)
			continue
		}
		b := Binding{Resource: cr.Resource, Entry: Entry{Principal: p, Host: cr.Host, Operation: cr.Operation, Permission: cr.Permission}}
		if err := b.Validate(); err != nil {
			out[i] = invalid(err)
			continue
		}
		entries[i] = b.Entry
		if byResource[b.Resource] == nil {
			order = append(order, b.Resource)
		}
		byResource[b.Resource] = append(byResource[b.Resource], i)
	}
	for _, res := range order {
		idx := byResource[res]
		add := make([]Entry, len(idx))
		for j, i := range idx {
			add[j] = entries[i]
		}
		stored, err := s.store.UpdateACLs(res, func(cur []Entry) ([]Entry, error) {
			return AddEntries(cur, add), nil
		})
		if err != nil {
			s.log.Error("CreateAcls: storing ACLs", "resource", res.String(), "err", err)
			for _, i := range idx {
				out[i] = storeFailed(err)
			}
			continue
		}
		s.authz.Set(map[Resource][]Entry{res: stored})
		s.log.Info("ACLs added", "resource", res.String(), "principal", by.String(), "added", len(add))
	}
	return out
}

// Deletion is what one DeleteAcls filter deleted, and its status. A
// filter whose deletions failed on one resource pattern may still have
// deleted on others: both are reported.
type Deletion struct {
	Status
	Deleted []Binding
}

// Delete removes the ACLs filters match, on behalf of by (for the log), as
// Kafka's AclAuthorizer.deleteAcls: an invalid filter is INVALID_REQUEST
// and takes no part; the resource patterns examined are those with ACLs a
// valid filter matches and those a filter names exactly (another broker
// may have written them since); each is rewritten in the store without
// the ACLs the filters match, and each deleted ACL is reported under the
// first filter that matches it. A failed rewrite is UNKNOWN_SERVER_ERROR
// for every filter matching that pattern. A nil service answers
// SECURITY_DISABLED for each filter.
func (s *Service) Delete(by Principal, filters []Filter) []Deletion {
	out := make([]Deletion, len(filters))
	if s == nil {
		for i := range out {
			out[i].Status = Status{Code: kerr.SecurityDisabled.Code, Message: "No Authorizer is configured."}
		}
		return out
	}
	var valid []Filter
	var validIdx []int // valid filters' indexes in filters
	for i, f := range filters {
		if err := f.Validate(); err != nil {
			out[i].Status = invalid(err)
			continue
		}
		valid, validIdx = append(valid, f), append(validIdx, i)
	}
	for _, res := range s.authz.DeleteTargets(valid) {
		var removed []Entry
		var first []int
		stored, err := s.store.UpdateACLs(res, func(cur []Entry) ([]Entry, error) {
			var kept []Entry
			kept, removed, first = RemoveEntries(res, cur, valid)
			return kept, nil
		})
		if err != nil {
			s.log.Error("DeleteAcls: storing ACLs", "resource", res.String(), "err", err)
			for j, f := range valid {
				if f.MatchesResource(res) {
					out[validIdx[j]].Status = storeFailed(err)
				}
			}
			continue
		}
		s.authz.Set(map[Resource][]Entry{res: stored})
		for k, e := range removed {
			d := &out[validIdx[first[k]]]
			d.Deleted = append(d.Deleted, Binding{Resource: res, Entry: e})
		}
		if len(removed) > 0 {
			s.log.Info("ACLs deleted", "resource", res.String(), "principal", by.String(), "deleted", len(removed))
		}
	}
	return out
}
