package acl

// The stored forms of ACLs, as Kafka's ZooKeeper-mode AclAuthorizer writes
// them (kafka.zk.ZkData; the single node's file uses the same document).
//
// A resource pattern's ACLs (the data of /kafka-acl/<Type>/<name> and
// /kafka-acl-extended/prefixed/<Type>/<name>):
//
//	{"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow","operation":"Read","host":"*"}]}
//
// with SecurityUtils' names: operations "Read", "DescribeConfigs", ...;
// permissions "Allow", "Deny".
//
// A change notification's data: for a literal pattern (under
// /kafka-acl-changes) the Java enum name of the type, a colon and the
// name, "TOPIC:orders"; for a prefixed one (under
// /kafka-acl-extended-changes)
//
//	{"version":1,"resourceType":"TOPIC","name":"orders-","patternType":"PREFIXED"}
//
// These layouts are Kafka's and must not change.

import (
	"encoding/json"
	"fmt"
	"strings"
)

type aclDoc struct {
	Version int         `json:"version"`
	ACLs    []aclDocACE `json:"acls"`
}

type aclDocACE struct {
	Principal      string `json:"principal"`
	PermissionType string `json:"permissionType"`
	Operation      string `json:"operation"`
	Host           string `json:"host"`
}

// EncodeEntries writes a resource pattern's ACL document.
func EncodeEntries(entries []Entry) []byte {
	d := aclDoc{Version: 1, ACLs: make([]aclDocACE, 0, len(entries))}
	for _, e := range entries {
		d.ACLs = append(d.ACLs, aclDocACE{
			Principal: e.Principal.String(), PermissionType: e.Permission.Name(),
			Operation: e.Operation.Name(), Host: e.Host,
		})
	}
	b, err := json.Marshal(d)
	if err != nil {
		panic(err) // strings only: cannot fail
	}
	return b
}

// DecodeEntries reads an ACL document; where names it in errors (a znode
// path, a file and resource). Empty data is no ACLs.
func DecodeEntries(data []byte, where string) ([]Entry, error) {
	if len(data) == 0 {
		return nil, nil
	}
	var d aclDoc
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrInvalid, where, err)
	}
	if d.Version != 1 {
		return nil, fmt.Errorf("%w: %s: version %d, want 1", ErrInvalid, where, d.Version)
	}
	out := make([]Entry, 0, len(d.ACLs))
	for i, a := range d.ACLs {
		p, err := ParsePrincipal(a.Principal)
		if err != nil {
			return nil, fmt.Errorf("%s: acls[%d]: %w", where, i, err)
		}
		op, ok := ParseOperation(a.Operation)
		if !ok {
			return nil, fmt.Errorf("%w: %s: acls[%d]: operation %q", ErrInvalid, where, i, a.Operation)
		}
		perm, ok := ParsePermission(a.PermissionType)
		if !ok {
			return nil, fmt.Errorf("%w: %s: acls[%d]: permissionType %q", ErrInvalid, where, i, a.PermissionType)
		}
		e := Entry{Principal: p, Host: a.Host, Operation: op, Permission: perm}
		if err := e.Validate(); err != nil {
			return nil, fmt.Errorf("%s: acls[%d]: %w", where, i, err)
		}
		out = append(out, e)
	}
	return out, nil
}

type changeDoc struct {
	Version      int    `json:"version"`
	ResourceType string `json:"resourceType"`
	Name         string `json:"name"`
	PatternType  string `json:"patternType"`
}

// EncodeChange writes the data of the change notification for r: the
// literal form for a literal pattern, the JSON event otherwise.
func EncodeChange(r Resource) []byte {
	if r.Pattern == PatternLiteral {
		return []byte(r.Type.String() + ":" + r.Name)
	}
	b, err := json.Marshal(changeDoc{Version: 1, ResourceType: r.Type.String(), Name: r.Name, PatternType: r.Pattern.String()})
	if err != nil {
		panic(err)
	}
	return b
}

// DecodeChange reads a change notification's data; extended says it came
// from /kafka-acl-extended-changes (JSON), else the literal form.
func DecodeChange(data []byte, extended bool, where string) (Resource, error) {
	if !extended {
		s := string(data)
		i := strings.IndexByte(s, ':')
		if i < 0 {
			return Resource{}, fmt.Errorf("%w: %s: %q is not ResourceType:ResourceName", ErrInvalid, where, s)
		}
		t, ok := ParseResourceType(s[:i])
		if !ok || !t.Known() {
			return Resource{}, fmt.Errorf("%w: %s: resource type %q", ErrInvalid, where, s[:i])
		}
		return Resource{Type: t, Name: s[i+1:], Pattern: PatternLiteral}, nil
	}
	var d changeDoc
	if err := json.Unmarshal(data, &d); err != nil {
		return Resource{}, fmt.Errorf("%w: %s: %v", ErrInvalid, where, err)
	}
	if d.Version > 1 {
		return Resource{}, fmt.Errorf("%w: %s: change event version %d", ErrInvalid, where, d.Version)
	}
	t, ok := ParseResourceType(d.ResourceType)
	if !ok || !t.Known() {
		return Resource{}, fmt.Errorf("%w: %s: resource type %q", ErrInvalid, where, d.ResourceType)
	}
	p, ok := ParsePatternType(d.PatternType)
	if !ok || (p != PatternLiteral && p != PatternPrefixed) {
		return Resource{}, fmt.Errorf("%w: %s: pattern type %q", ErrInvalid, where, d.PatternType)
	}
	return Resource{Type: t, Name: d.Name, Pattern: p}, nil
}
