package acl

// Bindings and the filters DescribeAcls and DeleteAcls take, with the
// matching rules of Kafka's ResourcePatternFilter and
// AccessControlEntryFilter.

import (
	"fmt"
	"strings"
)

// Principal is a KafkaPrincipal, "Type:name".
type Principal struct {
	Type string // "User"
	Name string
}

// WildcardPrincipal, "User:*", matches every principal of type User.
var WildcardPrincipal = Principal{Type: "User", Name: Wildcard}

func (p Principal) String() string { return p.Type + ":" + p.Name }

// ParsePrincipal reads "Type:name" as Kafka's
// SecurityUtils.parseKafkaPrincipal does: the type before the first colon,
// the name after it, both non-empty.
func ParsePrincipal(s string) (Principal, error) {
	i := strings.IndexByte(s, ':')
	if i <= 0 || i == len(s)-1 {
		return Principal{}, fmt.Errorf("%w: principal %q is not Type:name", ErrInvalid, s)
	}
	return Principal{Type: s[:i], Name: s[i+1:]}, nil
}

// Resource is a ResourcePattern: the ACLs of one Resource apply to the
// resource of that type and name (Literal; the literal name "*" is every
// name) or to every name starting with Name (Prefixed).
type Resource struct {
	Type    ResourceType
	Name    string
	Pattern PatternType // PatternLiteral or PatternPrefixed
}

func (r Resource) String() string {
	return fmt.Sprintf("ResourcePattern(resourceType=%s, name=%s, patternType=%s)", r.Type, r.Name, r.Pattern)
}

// Validate checks that r can hold ACLs: a known type, Literal or Prefixed,
// a non-empty name, and the cluster only as "kafka-cluster" (Kafka's
// CreateAcls checks).
func (r Resource) Validate() error {
	switch {
	case !r.Type.Known():
		return fmt.Errorf("%w: resource type %s", ErrInvalid, r.Type)
	case r.Pattern != PatternLiteral && r.Pattern != PatternPrefixed:
		return fmt.Errorf("%w: pattern type %s", ErrInvalid, r.Pattern)
	case r.Name == "":
		return fmt.Errorf("%w: Invalid empty resource name", ErrInvalid)
	case r.Type == ResourceCluster && r.Name != ClusterName:
		return fmt.Errorf("%w: The only valid name for the CLUSTER resource is %s", ErrInvalid, ClusterName)
	}
	return nil
}

// Entry is an AccessControlEntry.
type Entry struct {
	Principal  Principal
	Host       string // an IP address as Java prints it, or "*"
	Operation  Operation
	Permission Permission
}

func (e Entry) String() string {
	return fmt.Sprintf("(principal=%s, host=%s, operation=%s, permissionType=%s)", e.Principal, e.Host, e.Operation, e.Permission)
}

// Validate checks that e can be stored: a concrete operation and
// permission (not Any, not Unknown) and a host.
func (e Entry) Validate() error {
	switch {
	case e.Operation <= OpAny || e.Operation >= numOperations:
		return fmt.Errorf("%w: operation %s", ErrInvalid, e.Operation)
	case e.Permission != Allow && e.Permission != Deny:
		return fmt.Errorf("%w: permission type %s", ErrInvalid, e.Permission)
	case e.Host == "":
		return fmt.Errorf("%w: empty host", ErrInvalid)
	case e.Principal.Type == "" || e.Principal.Name == "":
		return fmt.Errorf("%w: principal %q is not Type:name", ErrInvalid, e.Principal)
	}
	return nil
}

// Binding is an AclBinding.
type Binding struct {
	Resource Resource
	Entry    Entry
}

// Validate checks the resource and the entry.
func (b Binding) Validate() error {
	if err := b.Resource.Validate(); err != nil {
		return err
	}
	return b.Entry.Validate()
}

// Filter is an AclBindingFilter. A nil Name, Principal or Host matches any.
type Filter struct {
	Type      ResourceType // ResourceAny: every type
	Name      *string
	Pattern   PatternType // PatternAny, PatternMatch, PatternLiteral or PatternPrefixed
	Principal *string     // as "Type:name"
	Host      *string
	Operation Operation  // OpAny: every operation
	Perm      Permission // PermissionAny: both
}

// Validate refuses a filter with an Unknown element (Kafka's
// AclBindingFilter.isUnknown).
func (f Filter) Validate() error {
	switch {
	case f.Type <= ResourceUnknown || f.Type >= numResourceTypes:
		return fmt.Errorf("%w: filter resource type %s", ErrInvalid, f.Type)
	case f.Pattern <= PatternUnknown || f.Pattern >= numPatternTypes:
		return fmt.Errorf("%w: filter pattern type %s", ErrInvalid, f.Pattern)
	case f.Operation <= OpUnknown || f.Operation >= numOperations:
		return fmt.Errorf("%w: filter operation %s", ErrInvalid, f.Operation)
	case f.Perm <= PermissionUnknown || f.Perm >= numPermissions:
		return fmt.Errorf("%w: filter permission type %s", ErrInvalid, f.Perm)
	}
	return nil
}

// MatchesResource is ResourcePatternFilter.matches: the type and pattern
// type agree (Any and Match agree with both), and the name is equal, or,
// for Match, the pattern covers the filter's name (the literal name, the
// literal "*", or a prefix of it).
func (f Filter) MatchesResource(r Resource) bool {
	if f.Type != ResourceAny && f.Type != r.Type {
		return false
	}
	if f.Pattern != PatternAny && f.Pattern != PatternMatch && f.Pattern != r.Pattern {
		return false
	}
	if f.Name == nil {
		return true
	}
	if f.Pattern == PatternAny || f.Pattern == r.Pattern {
		return *f.Name == r.Name
	}
	switch r.Pattern {
	case PatternLiteral:
		return *f.Name == r.Name || r.Name == Wildcard
	case PatternPrefixed:
		return strings.HasPrefix(*f.Name, r.Name)
	}
	return false
}

// MatchesEntry is AccessControlEntryFilter.matches.
func (f Filter) MatchesEntry(e Entry) bool {
	if f.Principal != nil && *f.Principal != e.Principal.String() {
		return false
	}
	if f.Host != nil && *f.Host != e.Host {
		return false
	}
	if f.Operation != OpAny && f.Operation != e.Operation {
		return false
	}
	return f.Perm == PermissionAny || f.Perm == e.Permission
}

// Matches is AclBindingFilter.matches.
func (f Filter) Matches(b Binding) bool {
	return f.MatchesResource(b.Resource) && f.MatchesEntry(b.Entry)
}

// ExactResource is the one resource a filter names when it can match at
// most one (Kafka's matchesAtMostOne: a concrete type, a name, Literal or
// Prefixed); ok is false otherwise.
func (f Filter) ExactResource() (r Resource, ok bool) {
	if !f.Type.Known() || f.Name == nil || (f.Pattern != PatternLiteral && f.Pattern != PatternPrefixed) {
		return Resource{}, false
	}
	return Resource{Type: f.Type, Name: *f.Name, Pattern: f.Pattern}, true
}
