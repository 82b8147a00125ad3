package config

import (
	"errors"
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

// superUsersField is super.users, Type:name entries separated by ';'.
var superUsersField = custom(func(c *Config, _ string, v configValue) error {
	c.Authz.SuperUsers = nil
	for i, s := range strings.Split(v.s, ";") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		p, err := acl.ParsePrincipal(s)
		if err != nil {
			return fmt.Errorf("entry %d, %q, is not Type:name", i, s)
		}
		c.Authz.SuperUsers = append(c.Authz.SuperUsers, p)
	}
	return nil
}, func(c *Config) (string, bool) {
	names := make([]string, len(c.Authz.SuperUsers))
	for i, p := range c.Authz.SuperUsers {
		names[i] = p.String()
	}
	return strings.Join(names, ";"), c.Authz.SuperUsers != nil
})

// allowEveryoneField is allow.everyone.if.no.acl.found, a key of the
// authorizer's that KafkaConfig does not type: true or false.
var allowEveryoneField = custom(func(c *Config, _ string, v configValue) error {
	switch strings.ToLower(v.s) {
	case "true":
		c.Authz.AllowEveryoneIfNoACL = true
	case "false":
		c.Authz.AllowEveryoneIfNoACL = false
	default:
		return errors.New("not true or false")
	}
	return nil
}, func(c *Config) (string, bool) { return "true", c.Authz.AllowEveryoneIfNoACL })
