package config

import (
	"fmt"
	"strings"

	"github.com/sluice-io/sluice/security/acl"
)

// AuthzConfig is the authorizer's configuration, with Kafka's keys.
type AuthzConfig struct {
	// ClassName is authorizer.class.name. Kafka's ACL authorizer class
	// names (aclAuthorizerClasses) select sluice's ACL authorizer; empty,
	// the default, is no authorizer (everything allowed, the ACL APIs
	// answer SECURITY_DISABLED). Any other class is refused at start.
	ClassName string
	// SuperUsers is super.users: principals ("User:admin") allowed
	// everything, without ACLs; default none.
	SuperUsers []acl.Principal
	// AllowEveryoneIfNoACL is allow.everyone.if.no.acl.found: a resource
	// with no ACL at all is open to everyone; default false.
	AllowEveryoneIfNoACL bool
}

// aclAuthorizerClasses are the class names that mean "the ACL authorizer":
// ZooKeeper mode's current and former class and KRaft's.
var aclAuthorizerClasses = map[string]bool{
	"kafka.security.authorizer.AclAuthorizer":                 true,
	"kafka.security.auth.SimpleAclAuthorizer":                 true,
	"org.apache.kafka.metadata.authorizer.StandardAuthorizer": true,
}

// Enabled reports whether an authorizer is configured.
func (a AuthzConfig) Enabled() bool { return a.ClassName != "" }

// Validate refuses an authorizer class sluice does not have.
func (a AuthzConfig) Validate() error {
	if a.ClassName != "" && !aclAuthorizerClasses[a.ClassName] {
		return fmt.Errorf("broker: config authorizer.class.name=%q: not an authorizer sluice has; use kafka.security.authorizer.AclAuthorizer (or kafka.security.auth.SimpleAclAuthorizer, org.apache.kafka.metadata.authorizer.StandardAuthorizer) or leave it empty", a.ClassName)
	}
	return nil
}

// static adds the authorizer keys the configuration sets to m.
func (a AuthzConfig) static(m map[string]string) {
	if a.ClassName != "" {
		m["authorizer.class.name"] = a.ClassName
	}
	if a.SuperUsers != nil {
		names := make([]string, len(a.SuperUsers))
		for i, p := range a.SuperUsers {
			names[i] = p.String()
		}
		m["super.users"] = strings.Join(names, ";")
	}
	if a.AllowEveryoneIfNoACL {
		m["allow.everyone.if.no.acl.found"] = "true"
	}
}

// Apply sets the field an authorizer key names; ok is false for other
// keys.
func (a *AuthzConfig) Apply(k, v string) (ok bool, err error) {
	switch k {
	case "authorizer.class.name":
		a.ClassName = strings.TrimSpace(v)
	case "super.users":
		a.SuperUsers = nil
		for i, s := range strings.Split(v, ";") {
			s = strings.TrimSpace(s)
			if s == "" {
				continue
			}
			p, err := acl.ParsePrincipal(s)
			if err != nil {
				return true, fmt.Errorf("broker: config super.users=%q: entry %d, %q, is not Type:name", v, i, s)
			}
			a.SuperUsers = append(a.SuperUsers, p)
		}
	case "allow.everyone.if.no.acl.found":
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "true":
			a.AllowEveryoneIfNoACL = true
		case "false":
			a.AllowEveryoneIfNoACL = false
		default:
			return true, fmt.Errorf("broker: config %s=%q: not true or false", k, v)
		}
	default:
		return false, nil
	}
	return true, nil
}
