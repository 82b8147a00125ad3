package broker

// Authorized operations (KIP-430), which Metadata (topics, and the cluster
// in v8-10), DescribeCluster and DescribeGroups report when the client asks:
// a bit field with bit n set when the client may perform ACL operation n on
// the resource, in Kafka's numbering (AclOperation codes). sluice has no
// authorizer yet, so, as Kafka without an authorizer answers, every
// operation the resource type supports is allowed. A client that does not
// ask gets Kafka's "not requested" value, math.MinInt32.

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
