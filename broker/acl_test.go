package broker

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/sluice-io/sluice/security/acl"
)

// aclSpec is one ACL to create.
type aclSpec struct {
	rt      acl.ResourceType
	name    string
	pattern acl.PatternType
	op      acl.Operation
	perm    acl.Permission
}

func createACLs(t *testing.T, cl *kgo.Client, specs ...aclSpec) {
	t.Helper()
	req := kmsg.NewPtrCreateACLsRequest()
	for _, s := range specs {
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType, c.ResourceName = kmsg.ACLResourceType(s.rt), s.name
		c.ResourcePatternType = kmsg.ACLResourcePatternType(s.pattern)
		c.Principal, c.Host = "User:ANONYMOUS", "*"
		c.Operation, c.PermissionType = kmsg.ACLOperation(s.op), kmsg.ACLPermissionType(s.perm)
		req.Creations = append(req.Creations, c)
	}
	resp, err := req.RequestWith(ctxTimeout(t, 10*time.Second), cl)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range resp.Results {
		if r.ErrorCode != 0 {
			t.Fatalf("CreateAcls %d: %v", i, kerr.ErrorForCode(r.ErrorCode))
		}
	}
}

func authzOn(super bool) func(*Config) {
	return func(c *Config) {
		c.Authz.ClassName = "kafka.security.authorizer.AclAuthorizer"
		if super {
			c.Authz.SuperUsers = []Principal{Anonymous}
		}
	}
}

func metadataTopics(t *testing.T, cl *kgo.Client, names ...string) map[string]int16 {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	if names != nil {
		for _, n := range names {
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(n)
			req.Topics = append(req.Topics, rt)
		}
		req.AllowAutoTopicCreation = true
	}
	resp, err := req.RequestWith(ctxTimeout(t, 10*time.Second), cl)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int16{}
	for _, tp := range resp.Topics {
		out[*tp.Topic] = tp.ErrorCode
	}
	return out
}

// TestACLsSingleNode: as a super user, topics, records and ACLs are made;
// after a restart without super users, the ACLs (stored in the data
// directory) decide: Read on one topic and one group reads that topic and
// nothing else, DENY beats ALLOW, prefixed patterns apply, Metadata hides
// what may not be described, no Create means no topic (nor auto-created
// one), and forged control requests are refused.
func TestACLsSingleNode(t *testing.T) {
	dir := t.TempDir()
	tb := serveBroker(t, dir, authzOn(true))
	adm := tb.admin(t)
	ctx := ctxTimeout(t, 30*time.Second)
	for _, name := range []string{"t1", "t2", "logs-a", "hidden"} {
		if _, err := adm.CreateTopic(ctx, 1, 1, nil, name); err != nil {
			t.Fatalf("super user creating %s: %v", name, err)
		}
	}
	cl := tb.ownClient(t)
	for _, topic := range []string{"t1", "t2"} {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("v-" + topic)}).FirstErr(); err != nil {
			t.Fatalf("produce %s: %v", topic, err)
		}
	}
	createACLs(t, cl,
		aclSpec{acl.ResourceTopic, "t1", acl.PatternLiteral, acl.OpRead, acl.Allow},
		aclSpec{acl.ResourceGroup, "g1", acl.PatternLiteral, acl.OpRead, acl.Allow},
		aclSpec{acl.ResourceTopic, "t2", acl.PatternLiteral, acl.OpAll, acl.Allow},
		aclSpec{acl.ResourceTopic, "t2", acl.PatternLiteral, acl.OpRead, acl.Deny},
		aclSpec{acl.ResourceTopic, "logs-", acl.PatternPrefixed, acl.OpDescribe, acl.Allow},
		aclSpec{acl.ResourceCluster, acl.ClusterName, acl.PatternLiteral, acl.OpDescribe, acl.Allow},
	)
	cl.Close()
	tb.stop(t)

	tb = startBroker(t, dir, authzOn(false))
	cl = tb.client(t)

	// The ACLs survived the restart.
	d := kmsg.NewPtrDescribeACLsRequest()
	d.ResourceType, d.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
	d.Operation, d.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	dr, err := d.RequestWith(ctx, cl)
	if err != nil || dr.ErrorCode != 0 {
		t.Fatalf("DescribeAcls: %v %v", err, dr)
	}
	n := 0
	for _, r := range dr.Resources {
		n += len(r.ACLs)
	}
	if n != 6 {
		t.Fatalf("after restart: %d ACLs, want 6: %+v", n, dr.Resources)
	}

	// Metadata lists only the describable topics; a named hidden one fails.
	all := metadataTopics(t, cl)
	if _, ok := all["hidden"]; ok || len(all) != 3 {
		t.Errorf("Metadata of all topics: %v, want t1, t2, logs-a", all)
	}
	if got := metadataTopics(t, cl, "hidden")["hidden"]; got != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("Metadata of hidden: %v", kerr.ErrorForCode(got))
	}
	// No Create: no auto-created topic, no created topic.
	if got := metadataTopics(t, cl, "logs-new")["logs-new"]; got != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("Metadata auto-creating logs-new: %v", kerr.ErrorForCode(got))
	}
	if _, ok := tb.coord.Topic("logs-new"); ok {
		t.Error("logs-new was auto-created without Create")
	}
	ct := kmsg.NewPtrCreateTopicsRequest()
	ctt := kmsg.NewCreateTopicsRequestTopic()
	ctt.Topic, ctt.NumPartitions, ctt.ReplicationFactor = "new", 1, 1
	ct.Topics, ct.TimeoutMillis = append(ct.Topics, ctt), 5000
	ctr, err := ct.RequestWith(ctx, cl)
	if err != nil || ctr.Topics[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("CreateTopics without Create: %v %v", err, ctr)
	}

	// Read on t1 and g1: consumes t1 in group g1.
	g1 := tb.client(t, kgo.ConsumeTopics("t1"), kgo.ConsumerGroup("g1"), kgo.FetchMaxWait(100*time.Millisecond))
	fs := g1.PollFetches(ctx)
	if err := fs.Err(); err != nil || fs.NumRecords() != 1 {
		t.Fatalf("consuming t1 in g1: %v, %d records", err, fs.NumRecords())
	}
	if err := g1.CommitUncommittedOffsets(ctx); err != nil {
		t.Errorf("committing in g1: %v", err)
	}
	// ... and nothing else: not write t1, not read t2 (DENY wins), not group g2.
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "t1", Value: []byte("x")}).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("produce t1: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	old := tb.client(t, kgo.MaxVersions(kversion.V3_0_0())) // Fetch v12: by topic name
	fetchCode := func(topic string) int16 {
		f := kmsg.NewPtrFetchRequest()
		f.ReplicaID, f.MaxBytes, f.Version = -1, 1<<20, 12
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic = topic
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.PartitionMaxBytes = 1 << 20
		ft.Partitions = append(ft.Partitions, fp)
		f.Topics = append(f.Topics, ft)
		fr, err := f.RequestWith(ctx, old)
		if err != nil {
			t.Fatal(err)
		}
		return fr.Topics[0].Partitions[0].ErrorCode
	}
	if got := fetchCode("t2"); got != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("fetch t2 (ALLOW All, DENY Read): %v", kerr.ErrorForCode(got))
	}
	if got := fetchCode("t1"); got != 0 {
		t.Errorf("fetch t1: %v", kerr.ErrorForCode(got))
	}
	jg := kmsg.NewPtrJoinGroupRequest()
	jg.Group, jg.ProtocolType, jg.SessionTimeoutMillis, jg.RebalanceTimeoutMillis = "g2", "consumer", 10000, 10000
	jg.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range"}}
	// The client learns it from FindCoordinator, which refuses g2 already.
	if jr, err := jg.RequestWith(ctx, cl); !errors.Is(err, kerr.GroupAuthorizationFailed) && (err != nil || jr.ErrorCode != kerr.GroupAuthorizationFailed.Code) {
		t.Errorf("JoinGroup g2: %v %v", err, jr)
	}

	// Forged control requests: CLUSTER_AUTHORIZATION_FAILED.
	lai := kmsg.NewPtrLeaderAndISRRequest()
	lai.ControllerID, lai.ControllerEpoch = 99, 99
	if r, err := lai.RequestWith(ctx, cl); err != nil || r.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Errorf("LeaderAndIsr: %v %+v", err, r)
	}
	um := kmsg.NewPtrUpdateMetadataRequest()
	um.ControllerID, um.ControllerEpoch = 99, 99
	if r, err := um.RequestWith(ctx, cl); err != nil || r.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Errorf("UpdateMetadata: %v %+v", err, r)
	}
	// Describe on the cluster but not Alter: CreateAcls refused.
	ca := kmsg.NewPtrCreateACLsRequest()
	c := kmsg.NewCreateACLsRequestCreation()
	c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceTypeTopic, "x", kmsg.ACLResourcePatternTypeLiteral
	c.Principal, c.Host, c.Operation, c.PermissionType = "User:ANONYMOUS", "*", kmsg.ACLOperationAll, kmsg.ACLPermissionTypeAllow
	ca.Creations = append(ca.Creations, c)
	if r, err := ca.RequestWith(ctx, cl); err != nil || r.Results[0].ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Errorf("CreateAcls without Alter: %v %+v", err, r)
	}
}

// TestACLAPIsWithoutAuthorizer: SECURITY_DISABLED, as Kafka answers.
func TestACLAPIsWithoutAuthorizer(t *testing.T) {
	tb := startBroker(t, t.TempDir(), nil)
	d := kmsg.NewPtrDescribeACLsRequest()
	d.ResourceType, d.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
	d.Operation, d.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	r, err := d.RequestWith(ctxTimeout(t, 10*time.Second), tb.client(t))
	if err != nil || r.ErrorCode != kerr.SecurityDisabled.Code {
		t.Fatalf("DescribeAcls: %v %+v", err, r)
	}
}

func TestAuthorizerClassRefused(t *testing.T) {
	_, err := New(Config{DataDir: t.TempDir(), Authz: AuthzConfig{ClassName: "com.example.MyAuthorizer"}})
	if err == nil || !strings.Contains(err.Error(), "com.example.MyAuthorizer") {
		t.Fatalf("New with an unknown authorizer: %v", err)
	}
	var c Config
	if _, err := c.Apply(map[string]string{"authorizer.class.name": "kafka.security.auth.SimpleAclAuthorizer",
		"super.users": "User:admin;User:broker", "allow.everyone.if.no.acl.found": "true"}); err != nil {
		t.Fatal(err)
	}
	if !c.Authz.enabled() || len(c.Authz.SuperUsers) != 2 || !c.Authz.AllowEveryoneIfNoACL {
		t.Fatalf("applied: %+v", c.Authz)
	}
}
