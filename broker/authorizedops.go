package broker

// Authorized operations (KIP-430), which Metadata (topics, and the cluster
// in v8-10), DescribeCluster and DescribeGroups report when the client asks:
// a bit field with bit n set when the client may perform ACL operation n on
// the resource, in Kafka's numbering (AclOperation codes). Without an
// authorizer, as Kafka answers, every operation the resource type supports
// is allowed; with one, the operations the ACLs allow the connection's
// principal, and 0 when it may not even Describe the resource. A client
// that does not ask gets Kafka's "not requested" value, math.MinInt32.

import "github.com/sluice-io/sluice/security/acl"

// Kafka's AclOperation codes.
const (
	opRead            = 3
	opWrite           = 4
	opCreate          = 5
	opDelete          = 6
	opAlter           = 7
	opDescribe        = 8
	opClusterAction   = 9
	opDescribeConfigs = 10
	opAlterConfigs    = 11
	opIdempotentWrite = 12
)

// opBits is the bit field of operations.
func opBits(ops ...int) int32 {
	var v int32
	for _, op := range ops {
		v |= 1 << op
	}
	return v
}

// The operations each resource type supports (Kafka's
// AclEntry.supportedOperations): the bit fields Kafka answers with no
// authorizer, 3576 for a topic, 8096 for the cluster, 328 for a group.
var (
	topicOperations   = opBits(opRead, opWrite, opCreate, opDelete, opAlter, opDescribe, opDescribeConfigs, opAlterConfigs)
	clusterOperations = opBits(opCreate, opClusterAction, opDescribeConfigs, opAlterConfigs, opIdempotentWrite, opAlter, opDescribe)
	groupOperations   = opBits(opRead, opDescribe, opDelete)
)

// authorizedOps is the bit field of the operations the connection's
// principal may perform on a resource: every supported one without an
// authorizer; with one, those the ACLs allow, or 0 without Describe.
func (c *conn) authorizedOps(rt acl.ResourceType, name string) int32 {
	if c.b.sec.acls == nil {
		switch rt {
		case acl.ResourceTopic:
			return topicOperations
		case acl.ResourceCluster:
			return clusterOperations
		case acl.ResourceGroup:
			return groupOperations
		}
	}
	if !c.authorized(acl.OpDescribe, rt, name) {
		return 0
	}
	var v int32
	for _, op := range acl.Operations(rt) {
		if c.authorized(op, rt, name) {
			v |= 1 << op
		}
	}
	return v
}
