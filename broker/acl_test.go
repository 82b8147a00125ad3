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

	"github.com/sluice-io/sluice/config"
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

func authzOn(super bool) func(*config.Config) {
	return func(c *config.Config) {
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
	_, err := New(config.Config{DataDir: t.TempDir(), Authz: config.AuthzConfig{ClassName: "com.example.MyAuthorizer"}})
	if err == nil || !strings.Contains(err.Error(), "com.example.MyAuthorizer") {
		t.Fatalf("New with an unknown authorizer: %v", err)
	}
	var c config.Config
	if _, err := c.Apply(map[string]string{"authorizer.class.name": "kafka.security.auth.SimpleAclAuthorizer",
		"super.users": "User:admin;User:broker", "allow.everyone.if.no.acl.found": "true"}); err != nil {
		t.Fatal(err)
	}
	if !c.Authz.Enabled() || len(c.Authz.SuperUsers) != 2 || !c.Authz.AllowEveryoneIfNoACL {
		t.Fatalf("applied: %+v", c.Authz)
	}
}

// TestACLsRequestChecks: the checks of the configs APIs, the transaction
// APIs, DeleteRecords, DeleteGroups, the cluster operations, and the
// authorized-operation bit fields, with ACLs made as a super user and
// enforced after a restart without one.
func TestACLsRequestChecks(t *testing.T) {
	dir := t.TempDir()
	tb := serveBroker(t, dir, authzOn(true))
	adm := tb.admin(t)
	ctx := ctxTimeout(t, 30*time.Second)
	for _, name := range []string{"cfg-ok", "cfg-no", "del-ok", "del-no"} {
		if _, err := adm.CreateTopic(ctx, 1, 1, nil, name); err != nil {
			t.Fatalf("creating %s: %v", name, err)
		}
	}
	cl := tb.ownClient(t)
	for _, topic := range []string{"del-ok", "del-no"} {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatalf("produce %s: %v", topic, err)
		}
	}
	createACLs(t, cl,
		aclSpec{acl.ResourceTopic, "cfg-ok", acl.PatternLiteral, acl.OpDescribe, acl.Allow},
		aclSpec{acl.ResourceTopic, "cfg-ok", acl.PatternLiteral, acl.OpAlterConfigs, acl.Allow},
		aclSpec{acl.ResourceTopic, "del-ok", acl.PatternLiteral, acl.OpDelete, acl.Allow},
		aclSpec{acl.ResourceTopic, "del-no", acl.PatternLiteral, acl.OpRead, acl.Allow},
		aclSpec{acl.ResourceGroup, "g-del", acl.PatternLiteral, acl.OpDelete, acl.Allow},
		aclSpec{acl.ResourceTransactionalID, "tx-ok", acl.PatternLiteral, acl.OpWrite, acl.Allow},
	)
	cl.Close()
	tb.stop(t)
	tb = serveBroker(t, dir, authzOn(false))
	rc := dialRaw(t, tb.addr)
	defer rc.nc.Close()

	// Configs: AlterConfigs implies DescribeConfigs; the broker's configs
	// need them on the cluster.
	dc := kmsg.NewPtrDescribeConfigsRequest()
	for _, r := range []struct {
		kind kmsg.ConfigResourceType
		name string
	}{{kmsg.ConfigResourceTypeTopic, "cfg-ok"}, {kmsg.ConfigResourceTypeTopic, "cfg-no"}, {kmsg.ConfigResourceTypeBroker, "0"}} {
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = r.kind, r.name
		dc.Resources = append(dc.Resources, rr)
	}
	dcr := rc.roundTrip(dc, 4).(*kmsg.DescribeConfigsResponse)
	for i, want := range []int16{0, kerr.TopicAuthorizationFailed.Code, kerr.ClusterAuthorizationFailed.Code} {
		if got := dcr.Resources[i].ErrorCode; got != want {
			t.Errorf("DescribeConfigs %s: %v, want %v", dcr.Resources[i].ResourceName, kerr.ErrorForCode(got), kerr.ErrorForCode(want))
		}
	}
	if len(dcr.Resources[0].Configs) == 0 {
		t.Error("DescribeConfigs cfg-ok: no configs")
	}
	ia := kmsg.NewPtrIncrementalAlterConfigsRequest()
	for _, name := range []string{"cfg-ok", "cfg-no"} {
		rr := kmsg.NewIncrementalAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, name
		cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		cfg.Name, cfg.Value = "retention.ms", kmsg.StringPtr("3600000")
		rr.Configs = append(rr.Configs, cfg)
		ia.Resources = append(ia.Resources, rr)
	}
	iar := rc.roundTrip(ia, 1).(*kmsg.IncrementalAlterConfigsResponse)
	if iar.Resources[0].ErrorCode != 0 || iar.Resources[1].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("IncrementalAlterConfigs: cfg-ok %v, cfg-no %v", kerr.ErrorForCode(iar.Resources[0].ErrorCode), kerr.ErrorForCode(iar.Resources[1].ErrorCode))
	}
	ac := kmsg.NewPtrAlterConfigsRequest()
	acr := kmsg.NewAlterConfigsRequestResource()
	acr.ResourceType, acr.ResourceName = kmsg.ConfigResourceTypeBroker, "0"
	ac.Resources = append(ac.Resources, acr)
	if got := rc.roundTrip(ac, 2).(*kmsg.AlterConfigsResponse).Resources[0].ErrorCode; got != kerr.ClusterAuthorizationFailed.Code {
		t.Errorf("AlterConfigs of the broker: %v", kerr.ErrorForCode(got))
	}

	// DeleteRecords needs Delete on the topic.
	dr := kmsg.NewPtrDeleteRecordsRequest()
	dr.TimeoutMillis = 5000
	for _, name := range []string{"del-ok", "del-no"} {
		rt := kmsg.NewDeleteRecordsRequestTopic()
		rt.Topic = name
		rp := kmsg.NewDeleteRecordsRequestTopicPartition()
		rp.Offset = -1
		rt.Partitions = append(rt.Partitions, rp)
		dr.Topics = append(dr.Topics, rt)
	}
	drr := rc.roundTrip(dr, 2).(*kmsg.DeleteRecordsResponse)
	if p := drr.Topics[0].Partitions[0]; p.ErrorCode != 0 || p.LowWatermark != 1 {
		t.Errorf("DeleteRecords del-ok: %v, low watermark %d", kerr.ErrorForCode(p.ErrorCode), p.LowWatermark)
	}
	if p := drr.Topics[1].Partitions[0]; p.ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("DeleteRecords del-no: %v", kerr.ErrorForCode(p.ErrorCode))
	}

	// DeleteGroups needs Delete on each group.
	dg := kmsg.NewPtrDeleteGroupsRequest()
	dg.Groups = []string{"g-del", "g-no"}
	codes := map[string]int16{}
	for _, g := range rc.roundTrip(dg, 2).(*kmsg.DeleteGroupsResponse).Groups {
		codes[g.Group] = g.ErrorCode
	}
	if codes["g-del"] == kerr.GroupAuthorizationFailed.Code || codes["g-no"] != kerr.GroupAuthorizationFailed.Code || len(codes) != 2 {
		t.Errorf("DeleteGroups: %v", codes)
	}

	// Transactions: Write on the transactional id, then on the topics and
	// Read on the group.
	ap := kmsg.NewPtrAddPartitionsToTxnRequest()
	ap.TransactionalID, ap.ProducerID, ap.ProducerEpoch = "tx-no", 1, 0
	apt := kmsg.NewAddPartitionsToTxnRequestTopic()
	apt.Topic, apt.Partitions = "cfg-ok", []int32{0}
	ap.Topics = append(ap.Topics, apt)
	if got := rc.roundTrip(ap, 3).(*kmsg.AddPartitionsToTxnResponse).Topics[0].Partitions[0].ErrorCode; got != kerr.TransactionalIDAuthorizationFailed.Code {
		t.Errorf("AddPartitionsToTxn tx-no: %v", kerr.ErrorForCode(got))
	}
	ap.TransactionalID = "tx-ok" // no Write on cfg-ok
	if got := rc.roundTrip(ap, 3).(*kmsg.AddPartitionsToTxnResponse).Topics[0].Partitions[0].ErrorCode; got != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("AddPartitionsToTxn tx-ok to cfg-ok: %v", kerr.ErrorForCode(got))
	}
	if got := rc.roundTrip(ap, 4).(*kmsg.AddPartitionsToTxnResponse).ErrorCode; got != kerr.ClusterAuthorizationFailed.Code {
		t.Errorf("AddPartitionsToTxn v4 from a client: %v", kerr.ErrorForCode(got))
	}
	ao := kmsg.NewPtrAddOffsetsToTxnRequest()
	ao.TransactionalID, ao.ProducerID, ao.Group = "tx-ok", 1, "g-no"
	if got := rc.roundTrip(ao, 3).(*kmsg.AddOffsetsToTxnResponse).ErrorCode; got != kerr.GroupAuthorizationFailed.Code {
		t.Errorf("AddOffsetsToTxn to g-no: %v", kerr.ErrorForCode(got))
	}
	et := kmsg.NewPtrEndTxnRequest()
	et.TransactionalID, et.ProducerID = "tx-no", 1
	if got := rc.roundTrip(et, 3).(*kmsg.EndTxnResponse).ErrorCode; got != kerr.TransactionalIDAuthorizationFailed.Code {
		t.Errorf("EndTxn tx-no: %v", kerr.ErrorForCode(got))
	}
	toc := kmsg.NewPtrTxnOffsetCommitRequest()
	toc.TransactionalID, toc.Group, toc.ProducerID = "tx-no", "g-del", 1
	tot := kmsg.NewTxnOffsetCommitRequestTopic()
	tot.Topic = "del-no"
	tot.Partitions = append(tot.Partitions, kmsg.NewTxnOffsetCommitRequestTopicPartition())
	toc.Topics = append(toc.Topics, tot)
	if got := rc.roundTrip(toc, 3).(*kmsg.TxnOffsetCommitResponse).Topics[0].Partitions[0].ErrorCode; got != kerr.TransactionalIDAuthorizationFailed.Code {
		t.Errorf("TxnOffsetCommit tx-no: %v", kerr.ErrorForCode(got))
	}

	// Cluster operations.
	el := kmsg.NewPtrElectLeadersRequest()
	elt := kmsg.NewElectLeadersRequestTopic()
	elt.Topic, elt.Partitions = "cfg-ok", []int32{0}
	el.Topics, el.TimeoutMillis = append(el.Topics, elt), 5000
	if got := rc.roundTrip(el, 2).(*kmsg.ElectLeadersResponse); got.ErrorCode != kerr.ClusterAuthorizationFailed.Code ||
		got.Topics[0].Partitions[0].ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Errorf("ElectLeaders: %+v", got)
	}
	if got := rc.roundTrip(kmsg.NewPtrDescribeLogDirsRequest(), 4).(*kmsg.DescribeLogDirsResponse); got.ErrorCode != kerr.ClusterAuthorizationFailed.Code || len(got.Dirs) != 0 {
		t.Errorf("DescribeLogDirs: %+v", got)
	}
	if got := rc.roundTrip(kmsg.NewPtrListPartitionReassignmentsRequest(), 0).(*kmsg.ListPartitionReassignmentsResponse); got.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Errorf("ListPartitionReassignments: %v", kerr.ErrorForCode(got.ErrorCode))
	}

	// Authorized operations: the ACLs' operations and those they imply.
	md := kmsg.NewPtrMetadataRequest()
	md.IncludeTopicAuthorizedOperations = true
	for _, name := range []string{"cfg-ok", "del-ok"} {
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr(name)
		md.Topics = append(md.Topics, mt)
	}
	want := map[string]int32{
		"cfg-ok": 1<<acl.OpDescribe | 1<<acl.OpDescribeConfigs | 1<<acl.OpAlterConfigs,
		"del-ok": 1<<acl.OpDelete | 1<<acl.OpDescribe,
	}
	for _, mt := range rc.roundTrip(md, 10).(*kmsg.MetadataResponse).Topics {
		if mt.AuthorizedOperations != want[*mt.Topic] {
			t.Errorf("authorized operations of %s: %b, want %b", *mt.Topic, mt.AuthorizedOperations, want[*mt.Topic])
		}
	}
}

// TestACLsAllowEveryoneIfNoACL: with allow.everyone.if.no.acl.found, a
// resource without ACLs is open to everyone (topics are created, written),
// and one ACL on a resource closes it to every other principal.
func TestACLsAllowEveryoneIfNoACL(t *testing.T) {
	tb := serveBroker(t, t.TempDir(), func(c *config.Config) {
		authzOn(false)(c)
		c.Authz.AllowEveryoneIfNoACL = true
	})
	adm := tb.admin(t)
	ctx := ctxTimeout(t, 30*time.Second)
	for _, name := range []string{"open", "closed"} {
		if r, err := adm.CreateTopic(ctx, 1, 1, nil, name); err != nil || r.Err != nil {
			t.Fatalf("creating %s without ACLs: %v %v", name, err, r.Err)
		}
	}
	cl := tb.ownClient(t)
	req := kmsg.NewPtrCreateACLsRequest()
	x := kmsg.NewCreateACLsRequestCreation()
	x.ResourceType, x.ResourceName, x.ResourcePatternType = kmsg.ACLResourceTypeTopic, "closed", kmsg.ACLResourcePatternTypeLiteral
	x.Principal, x.Host, x.Operation, x.PermissionType = "User:alice", "*", kmsg.ACLOperationWrite, kmsg.ACLPermissionTypeAllow
	req.Creations = append(req.Creations, x)
	if r, err := req.RequestWith(ctx, cl); err != nil || r.Results[0].ErrorCode != 0 {
		t.Fatalf("CreateAcls: %v %+v", err, r)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "open", Value: []byte("v")}).FirstErr(); err != nil {
		t.Errorf("produce to open: %v", err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "closed", Value: []byte("v")}).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("produce to closed: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
}
