package broker

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/sluice-io/sluice/config"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// SASL users under the ACL authorizer: the super user (PLAIN admin) sets
// up topics and grants alice (SCRAM-SHA-512) Read on one topic and one
// group; alice then consumes that topic in that group, is refused the
// other topic, another group, producing and creating topics, and sees only
// her topic in Metadata; a user with no ACL at all is refused everything.
func TestSASLUsersUnderACLs(t *testing.T) {
	tb := startSASLBroker(t, func(c *config.Config) {
		c.Authz.ClassName = "kafka.security.authorizer.AclAuthorizer"
		c.Authz.SuperUsers = []Principal{{Type: principalUser, Name: "admin"}}
	})
	addr := tb.listenerAddr(t, "SASL_PLAINTEXT")
	setSCRAM(t, tb, "bob", "bob-secret")
	ctx := ctxTimeout(t, 60*time.Second)
	client := func(mech, user, pass string, opts ...kgo.Opt) *kgo.Client {
		t.Helper()
		m := scramMech(mech, user, pass)
		if mech == "PLAIN" {
			m = plain.Auth{User: user, Pass: pass}.AsMechanism()
		}
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.SASL(m), kgo.ProducerLinger(0)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	admin := client("PLAIN", "admin", "admin-secret")
	adm := kadm.NewClient(admin)
	for _, name := range []string{"orders", "payments"} {
		if _, err := adm.CreateTopic(ctx, 1, 1, nil, name); err != nil {
			t.Fatalf("admin creating %s: %v", name, err)
		}
		for i := range 3 {
			if err := admin.ProduceSync(ctx, &kgo.Record{Topic: name, Value: []byte{byte('0' + i)}}).FirstErr(); err != nil {
				t.Fatalf("admin producing to %s: %v", name, err)
			}
		}
	}
	b := kadm.NewACLs().Allow("User:alice").AllowHosts("*").Topics("orders").Groups("g1").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral)
	if res, err := adm.CreateACLs(ctx, b); err != nil || res[0].Err != nil {
		t.Fatalf("CreateAcls: %v %v", res, err)
	}

	// Alice reads orders in g1.
	alice := client("SCRAM-SHA-512", "alice", "alice-secret", kgo.ConsumeTopics("orders"), kgo.ConsumerGroup("g1"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var got []string
	for len(got) < 3 {
		fs := alice.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatalf("alice consuming orders in g1: %v", err)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if !slices.Equal(got, []string{"0", "1", "2"}) {
		t.Fatalf("alice read %v", got)
	}
	if err := alice.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("alice committing in g1: %v", err)
	}

	// And nothing else.
	aliceCl := client("SCRAM-SHA-512", "alice", "alice-secret")
	aliceAdm := kadm.NewClient(aliceCl)
	md, err := aliceAdm.Metadata(ctx)
	if err != nil || !slices.Equal(md.Topics.Names(), []string{"orders"}) {
		t.Fatalf("alice's Metadata lists %v (%v), want only orders", md.Topics.Names(), err)
	}
	lreq := kmsg.NewPtrListOffsetsRequest()
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = "payments"
	lp := kmsg.NewListOffsetsRequestTopicPartition()
	lp.Timestamp = -1
	lt.Partitions = append(lt.Partitions, lp)
	lreq.Topics = append(lreq.Topics, lt)
	lresp, err := lreq.RequestWith(ctx, aliceCl)
	// franz-go asks Metadata for the leader first, which refuses the topic.
	if !errors.Is(err, kerr.TopicAuthorizationFailed) && (err != nil || lresp.Topics[0].Partitions[0].ErrorCode != kerr.TopicAuthorizationFailed.Code) {
		t.Fatalf("alice listing payments' offsets: %+v, %v; want TOPIC_AUTHORIZATION_FAILED", lresp, err)
	}
	other := client("SCRAM-SHA-512", "alice", "alice-secret", kgo.ConsumeTopics("orders"), kgo.ConsumerGroup("g2"))
	if err := other.PollFetches(ctx).Err(); !errors.Is(err, kerr.GroupAuthorizationFailed) {
		t.Fatalf("alice joining g2: %v, want GROUP_AUTHORIZATION_FAILED", err)
	}
	aliceProd := client("SCRAM-SHA-512", "alice", "alice-secret", kgo.DisableIdempotentWrite())
	if err := aliceProd.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("x")}).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("alice producing to orders: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	if _, err := aliceAdm.CreateTopic(ctx, 1, 1, nil, "alices-own"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("alice creating a topic: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}

	// Bob authenticates but may do nothing.
	bobAdm := kadm.NewClient(client("SCRAM-SHA-256", "bob", "bob-secret"))
	if md, err := bobAdm.Metadata(ctx); err != nil || len(md.Topics) != 0 {
		t.Fatalf("bob's Metadata: %v (%v), want no topics", md.Topics.Names(), err)
	}
	if _, err := bobAdm.DescribeACLs(ctx, kadm.NewACLs().AnyResource().Allow().ResourcePatternType(kadm.ACLPatternAny)); err == nil {
		t.Fatal("bob described the ACLs without Describe on the cluster")
	}
}
