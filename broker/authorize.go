package broker

// Authorization: the broker's ACL service (security/acl/state.go and
// admin.go) started on the ACL store (the single node's file,
// coordinator/fileacls.go; ZooKeeper, coordinator/zk/acls.go, whose change
// notifications reload the resource another broker changed), and the check
// every handler makes, c.authorized. With no authorizer.class.name there is no authorizer and
// every check passes at once.
//
// The host an ACL names is compared with the client's IP address as Go
// prints it ("10.0.0.1"; IPv6 in its short form, "::1", where Kafka's
// Java prints "0:0:0:0:0:0:0:1").

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/coordinator"
	"github.com/sluice-io/sluice/security/acl"
)

// startAuthz validates the authorizer's configuration, opens its store and
// starts the ACL service (security/acl/state.go), which loads every ACL.
// The coordinator must be open.
func (b *Broker) startAuthz() error {
	cfg := b.cfg.Authz
	if err := cfg.Validate(); err != nil {
		return err
	}
	if !cfg.Enabled() {
		return nil
	}
	var store acl.Store
	if s, ok := b.coord.(coordinator.ACLStore); ok {
		store = s
	} else {
		f, err := coordinator.OpenFileACLs(b.cfg.DataDir)
		if err != nil {
			return err
		}
		store = f
	}
	svc, err := acl.Start(store, cfg.SuperUsers, cfg.AllowEveryoneIfNoACL, b.log)
	if err != nil {
		return err
	}
	b.sec.acls = svc
	b.log.Info("ACL authorizer started", "class", cfg.ClassName, "acls", svc.Authorizer().Count(), "super_users", len(cfg.SuperUsers))
	return nil
}

// aclHost is the client's address as ACL hosts name it, computed once.
func (c *conn) aclHost() string {
	if c.host == "" {
		if ip := c.RemoteIP(); ip.IsValid() {
			c.host = ip.String()
		} else {
			c.host = "unknown"
		}
	}
	return c.host
}

// authorized reports whether the connection's principal may perform op on
// the resource of type rt named name; true at once with no authorizer.
func (c *conn) authorized(op acl.Operation, rt acl.ResourceType, name string) bool {
	a := c.b.sec.acls.Authorizer()
	if a == nil {
		return true
	}
	return a.Authorize(c.Principal, c.aclHost(), op, rt, name)
}

// readableTopics splits a request's topics into those the principal may
// Read and the rest (with no authorizer, all are kept as they are): the
// offset APIs answer the denied ones TOPIC_AUTHORIZATION_FAILED alone.
func readableTopics[T any](c *conn, topics []T, name func(*T) string) (kept, denied []T) {
	if c.b.sec.acls == nil {
		return topics, nil
	}
	kept = topics[:0:0]
	for i := range topics {
		if c.authorized(acl.OpRead, acl.ResourceTopic, name(&topics[i])) {
			kept = append(kept, topics[i])
		} else {
			denied = append(denied, topics[i])
		}
	}
	return kept, denied
}

// authorizedCluster is authorized on the cluster resource.
func (c *conn) authorizedCluster(op acl.Operation) bool {
	return c.authorized(op, acl.ResourceCluster, acl.ClusterName)
}

// authorizedByType reports whether the principal may perform op on some
// resource of type rt (Kafka's authorizeByResourceType).
func (c *conn) authorizedByType(op acl.Operation, rt acl.ResourceType) bool {
	a := c.b.sec.acls.Authorizer()
	if a == nil {
		return true
	}
	return a.AuthorizeByResourceType(c.Principal, c.aclHost(), op, rt)
}

// configAuthorized is the check of Kafka's config APIs on one resource
// (ConfigHelper, KafkaApis.handleAlterConfigsRequest): op (DescribeConfigs
// or AlterConfigs) on the topic, or on the cluster for broker,
// broker-logger and client-metrics resources. It returns 0 when allowed,
// else TOPIC_AUTHORIZATION_FAILED or CLUSTER_AUTHORIZATION_FAILED with
// Kafka's message; other resource types are left to the handler (0).
func (c *conn) configAuthorized(op acl.Operation, kind kmsg.ConfigResourceType, name string) (int16, string) {
	switch kind {
	case kmsg.ConfigResourceTypeTopic:
		if !c.authorized(op, acl.ResourceTopic, name) {
			return kerr.TopicAuthorizationFailed.Code, "Topic authorization failed."
		}
	case kmsg.ConfigResourceTypeBroker, kmsg.ConfigResourceTypeBrokerLogger, kmsg.ConfigResourceTypeClientMetrics:
		if !c.authorizedCluster(op) {
			return kerr.ClusterAuthorizationFailed.Code, "Cluster authorization failed."
		}
	}
	return 0, ""
}

// aclFilter builds a filter from a DescribeAcls or DeleteAcls filter's
// fields; v0 filters are LITERAL. Strings are copied: the request's memory
// is reused.
func aclFilter(version int16, rt int8, name *string, pattern int8, principal, host *string, op, perm int8) acl.Filter {
	if version == 0 {
		pattern = int8(acl.PatternLiteral)
	}
	clone := func(s *string) *string {
		if s == nil {
			return nil
		}
		v := string([]byte(*s))
		return &v
	}
	return acl.Filter{
		Type: acl.ResourceType(rt), Name: clone(name), Pattern: acl.PatternType(pattern),
		Principal: clone(principal), Host: clone(host), Operation: acl.Operation(op), Perm: acl.Permission(perm),
	}
}
