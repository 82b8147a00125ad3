package broker

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/config"
	"github.com/sluice-io/sluice/coordinator/zk"
	"github.com/sluice-io/sluice/security/acl"
)

// connectZK opens a ZooKeeper session on the cluster's chroot.
func connectZK(t *testing.T, c *testCluster) *zk.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	zc, err := zk.Connect(ctx, c.zkAddr+c.chroot, zk.Options{SessionTimeout: 4 * time.Second, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(zc.Close)
	return zc
}

type discardZKLog struct{}

func (discardZKLog) Printf(string, ...any) {}

// aclRoundTrip sends an ACL request to one broker and checks every result.
func aclRoundTrip(t *testing.T, tb *testBroker, req kmsg.Request) kmsg.Response {
	t.Helper()
	rc := dialRaw(t, tb.addr)
	defer rc.nc.Close()
	resp := rc.roundTrip(req, 3)
	var codes []int16
	switch r := resp.(type) {
	case *kmsg.CreateACLsResponse:
		for _, x := range r.Results {
			codes = append(codes, x.ErrorCode)
		}
	case *kmsg.DeleteACLsResponse:
		for _, x := range r.Results {
			codes = append(codes, x.ErrorCode)
		}
	case *kmsg.DescribeACLsResponse:
		codes = append(codes, r.ErrorCode)
	}
	for i, c := range codes {
		if c != 0 {
			t.Fatalf("%s result %d: %v", kmsg.NameForKey(req.Key()), i, kerr.ErrorForCode(c))
		}
	}
	return resp
}

// describedACLs counts the ACLs a broker's DescribeAcls lists.
func describedACLs(t *testing.T, tb *testBroker) int {
	t.Helper()
	d := kmsg.NewPtrDescribeACLsRequest()
	d.ResourceType, d.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
	d.Operation, d.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	n := 0
	for _, r := range aclRoundTrip(t, tb, d).(*kmsg.DescribeACLsResponse).Resources {
		n += len(r.ACLs)
	}
	return n
}

// TestACLsCluster: ACLs created through broker 0 are stored in ZooKeeper
// as Kafka stores them and enforced by broker 1; broker 1 restarted loads
// them; a deletion through broker 1 reaches broker 0. The brokers allow
// everyone on resources without ACLs, so that their own (ANONYMOUS)
// connections need no ACL; ACLs for User:alice close "guarded" and the
// "pre-" topics to ANONYMOUS.
func TestACLsCluster(t *testing.T) {
	c := startCluster(t, 2, func(cfg *config.Config) {
		cfg.Authz.ClassName = "kafka.security.authorizer.AclAuthorizer"
		cfg.Authz.AllowEveryoneIfNoACL = true
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, name := range []string{"guarded", "pre-a", "open"} {
		c.createTopic(ctx, name, 1, 2)
	}
	b0 := c.broker(0)
	cr := kmsg.NewPtrCreateACLsRequest()
	for _, s := range []struct {
		name    string
		pattern kmsg.ACLResourcePatternType
	}{{"guarded", kmsg.ACLResourcePatternTypeLiteral}, {"pre-", kmsg.ACLResourcePatternTypePrefixed}} {
		x := kmsg.NewCreateACLsRequestCreation()
		x.ResourceType, x.ResourceName, x.ResourcePatternType = kmsg.ACLResourceTypeTopic, s.name, s.pattern
		x.Principal, x.Host, x.Operation, x.PermissionType = "User:alice", "*", kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow
		cr.Creations = append(cr.Creations, x)
	}
	aclRoundTrip(t, b0, cr)

	zc := connectZK(t, c)
	for _, z := range []struct{ path, data string }{
		{"/kafka-acl/Topic/guarded", `{"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow","operation":"Read","host":"*"}]}`},
		{"/kafka-acl-extended/prefixed/Topic/pre-", `{"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow","operation":"Read","host":"*"}]}`},
	} {
		data, _, err := zc.Get(z.path)
		if err != nil || string(data) != z.data {
			t.Fatalf("%s holds %s (%v), want %s", z.path, data, err, z.data)
		}
	}

	hidden := func(md *kmsg.MetadataResponse) bool {
		return topicOf(md, "guarded") == nil && topicOf(md, "pre-a") == nil && topicOf(md, "open") != nil
	}
	c.waitAgree("guarded and pre-a hidden from ANONYMOUS", hidden)

	// Broker 1 restarted loads the ACLs from their znodes: with the
	// change notifications gone (as after 15 minutes), it has them as
	// soon as it is started.
	c.stopBroker(1)
	raw, _, err := gozk.Connect([]string{c.zkAddr}, 4*time.Second, gozk.WithLogger(discardZKLog{}))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	for _, parent := range []string{zk.ACLChangesPath, zk.ExtendedACLChangesPath} {
		names, _, err := raw.Children(c.chroot + parent)
		if err != nil || len(names) != 1 {
			t.Fatalf("%s: notifications %v (%v), want 1", parent, names, err)
		}
		if err := raw.Delete(c.chroot+parent+"/"+names[0], -1); err != nil {
			t.Fatal(err)
		}
	}
	b1 := c.start(1)
	if n := describedACLs(t, b1); n != 2 {
		t.Fatalf("broker 1 after its restart describes %d ACLs, want 2", n)
	}
	c.waitAgree("broker 1 back, guarded and pre-a hidden", hidden)

	// Deleted through broker 1: broker 0 opens the topic again.
	dr := kmsg.NewPtrDeleteACLsRequest()
	f := kmsg.NewDeleteACLsRequestFilter()
	f.ResourceType, f.ResourceName, f.ResourcePatternType = kmsg.ACLResourceTypeTopic, kmsg.StringPtr("guarded"), kmsg.ACLResourcePatternTypeLiteral
	f.Operation, f.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	dr.Filters = append(dr.Filters, f)
	if got := aclRoundTrip(t, b1, dr).(*kmsg.DeleteACLsResponse).Results[0].MatchingACLs; len(got) != 1 {
		t.Fatalf("DeleteAcls through broker 1 matched %d ACLs, want 1", len(got))
	}
	c.waitAgree("guarded open again, pre-a still hidden", func(md *kmsg.MetadataResponse) bool {
		return topicOf(md, "guarded") != nil && topicOf(md, "pre-a") == nil
	})
	p := zk.ACLResourcePath(acl.Resource{Type: acl.ResourceTopic, Name: "guarded", Pattern: acl.PatternLiteral})
	if _, _, err := zc.Get(p); !errors.Is(err, gozk.ErrNoNode) {
		t.Errorf("%s after the deletion of its ACLs: %v, want no znode", p, err)
	}
}
