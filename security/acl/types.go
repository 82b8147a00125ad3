package acl

// The enumerations of Kafka's ACL model with Kafka's wire codes. Each has
// two spellings: String is the Java enum's name ("TOPIC", "DESCRIBE_CONFIGS"),
// which DescribeAcls output and change events use; Name is Kafka's
// SecurityUtils camel case ("Topic", "DescribeConfigs"), which ZooKeeper
// paths and ACL documents use. These codes and names are part of the wire
// and storage formats and must not change.

import "strings"

// ResourceType is Kafka's ResourceType.
type ResourceType int8

// Kafka's ResourceType codes.
const (
	ResourceUnknown         ResourceType = 0
	ResourceAny             ResourceType = 1
	ResourceTopic           ResourceType = 2
	ResourceGroup           ResourceType = 3
	ResourceCluster         ResourceType = 4
	ResourceTransactionalID ResourceType = 5
	ResourceDelegationToken ResourceType = 6
	ResourceUser            ResourceType = 7

	numResourceTypes = 8
)

var resourceTypeNames = [numResourceTypes][2]string{
	{"UNKNOWN", "Unknown"}, {"ANY", "Any"}, {"TOPIC", "Topic"}, {"GROUP", "Group"},
	{"CLUSTER", "Cluster"}, {"TRANSACTIONAL_ID", "TransactionalId"},
	{"DELEGATION_TOKEN", "DelegationToken"}, {"USER", "User"},
}

// ClusterName is the one name of the cluster resource, Kafka's
// Resource.CLUSTER_NAME.
const ClusterName = "kafka-cluster"

// Wildcard is the literal resource name, and the host, that match every
// name or host.
const Wildcard = "*"

// PatternType is Kafka's PatternType.
type PatternType int8

// Kafka's PatternType codes.
const (
	PatternUnknown  PatternType = 0
	PatternAny      PatternType = 1
	PatternMatch    PatternType = 2
	PatternLiteral  PatternType = 3
	PatternPrefixed PatternType = 4

	numPatternTypes = 5
)

var patternTypeNames = [numPatternTypes][2]string{
	{"UNKNOWN", "Unknown"}, {"ANY", "Any"}, {"MATCH", "Match"}, {"LITERAL", "Literal"}, {"PREFIXED", "Prefixed"},
}

// Operation is Kafka's AclOperation.
type Operation int8

// Kafka's AclOperation codes.
const (
	OpUnknown         Operation = 0
	OpAny             Operation = 1
	OpAll             Operation = 2
	OpRead            Operation = 3
	OpWrite           Operation = 4
	OpCreate          Operation = 5
	OpDelete          Operation = 6
	OpAlter           Operation = 7
	OpDescribe        Operation = 8
	OpClusterAction   Operation = 9
	OpDescribeConfigs Operation = 10
	OpAlterConfigs    Operation = 11
	OpIdempotentWrite Operation = 12
	OpCreateTokens    Operation = 13
	OpDescribeTokens  Operation = 14

	numOperations = 15
)

var operationNames = [numOperations][2]string{
	{"UNKNOWN", "Unknown"}, {"ANY", "Any"}, {"ALL", "All"}, {"READ", "Read"}, {"WRITE", "Write"},
	{"CREATE", "Create"}, {"DELETE", "Delete"}, {"ALTER", "Alter"}, {"DESCRIBE", "Describe"},
	{"CLUSTER_ACTION", "ClusterAction"}, {"DESCRIBE_CONFIGS", "DescribeConfigs"},
	{"ALTER_CONFIGS", "AlterConfigs"}, {"IDEMPOTENT_WRITE", "IdempotentWrite"},
	{"CREATE_TOKENS", "CreateTokens"}, {"DESCRIBE_TOKENS", "DescribeTokens"},
}

// Permission is Kafka's AclPermissionType.
type Permission int8

// Kafka's AclPermissionType codes.
const (
	PermissionUnknown Permission = 0
	PermissionAny     Permission = 1
	Deny              Permission = 2
	Allow             Permission = 3

	numPermissions = 4
)

var permissionNames = [numPermissions][2]string{
	{"UNKNOWN", "Unknown"}, {"ANY", "Any"}, {"DENY", "Deny"}, {"ALLOW", "Allow"},
}

func enumName(names [][2]string, i int, form int) string {
	if i < 0 || i >= len(names) {
		return names[0][form]
	}
	return names[i][form]
}

// parseEnum finds s in names in either spelling, ignoring case and
// underscores ("TRANSACTIONAL_ID", "TransactionalId", "transactional-id"
// all name the same type); -1 when no name fits.
func parseEnum(names [][2]string, s string) int {
	norm := func(s string) string {
		return strings.ToLower(strings.NewReplacer("_", "", "-", "").Replace(s))
	}
	s = norm(s)
	for i, n := range names {
		if norm(n[1]) == s {
			return i
		}
	}
	return -1
}

func (t ResourceType) String() string { return enumName(resourceTypeNames[:], int(t), 0) }

// Name is the type's SecurityUtils name ("Topic"), used in znode paths.
func (t ResourceType) Name() string { return enumName(resourceTypeNames[:], int(t), 1) }

// Known reports whether t is a concrete resource type (not Unknown, not Any).
func (t ResourceType) Known() bool { return t >= ResourceTopic && t < numResourceTypes }

// ParseResourceType reads a resource type in either spelling.
func ParseResourceType(s string) (ResourceType, bool) {
	i := parseEnum(resourceTypeNames[:], s)
	return ResourceType(max(i, 0)), i >= 0
}

func (p PatternType) String() string { return enumName(patternTypeNames[:], int(p), 0) }

// ParsePatternType reads a pattern type in either spelling.
func ParsePatternType(s string) (PatternType, bool) {
	i := parseEnum(patternTypeNames[:], s)
	return PatternType(max(i, 0)), i >= 0
}

func (o Operation) String() string { return enumName(operationNames[:], int(o), 0) }

// Name is the operation's SecurityUtils name ("DescribeConfigs"), used in
// stored ACL documents.
func (o Operation) Name() string { return enumName(operationNames[:], int(o), 1) }

// ParseOperation reads an operation in either spelling.
func ParseOperation(s string) (Operation, bool) {
	i := parseEnum(operationNames[:], s)
	return Operation(max(i, 0)), i >= 0
}

func (p Permission) String() string { return enumName(permissionNames[:], int(p), 0) }

// Name is the permission's SecurityUtils name ("Allow"), used in stored ACL
// documents.
func (p Permission) Name() string { return enumName(permissionNames[:], int(p), 1) }

// ParsePermission reads a permission in either spelling.
func ParsePermission(s string) (Permission, bool) {
	i := parseEnum(permissionNames[:], s)
	return Permission(max(i, 0)), i >= 0
}

// Operations returns the operations a resource type supports, Kafka's
// AclEntry.supportedOperations; nil for Unknown and Any.
func Operations(t ResourceType) []Operation {
	switch t {
	case ResourceTopic:
		return []Operation{OpRead, OpWrite, OpCreate, OpDescribe, OpDelete, OpAlter, OpDescribeConfigs, OpAlterConfigs}
	case ResourceGroup:
		return []Operation{OpRead, OpDescribe, OpDelete}
	case ResourceCluster:
		return []Operation{OpCreate, OpClusterAction, OpDescribeConfigs, OpAlterConfigs, OpIdempotentWrite, OpAlter, OpDescribe}
	case ResourceTransactionalID:
		return []Operation{OpDescribe, OpWrite}
	case ResourceDelegationToken:
		return []Operation{OpDescribe}
	case ResourceUser:
		return []Operation{OpCreateTokens, OpDescribeTokens}
	}
	return nil
}
