package broker

import (
	"math"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Authorized operations as Kafka without an authorizer reports them, asked
// for and not: librdkafka's 0081-admin DescribeTopics, DescribeCluster and
// DescribeConsumerGroups expect 8 topic, 7 cluster and 3 group operations
// when asking, and none when not.
func TestAuthorizedOperations(t *testing.T) {
	tb := startBroker(t, t.TempDir(), groupTimeouts)
	cl := tb.client(t)
	ctx := ctxTimeout(t, 10*time.Second)
	if _, err := tb.admin(t).CreateTopic(ctx, 2, 1, nil, "ops"); err != nil {
		t.Fatal(err)
	}
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Group, commit.Generation = "ops-group", -1
	ct := kmsg.NewOffsetCommitRequestTopic()
	ct.Topic = "ops"
	cp := kmsg.NewOffsetCommitRequestTopicPartition()
	cp.Offset = 0
	ct.Partitions = append(ct.Partitions, cp)
	commit.Topics = append(commit.Topics, ct)
	if _, err := commit.RequestWith(ctx, cl); err != nil {
		t.Fatal(err)
	}

	const notRequested = math.MinInt32
	for _, asked := range []bool{false, true} {
		wantTopic, wantCluster, wantGroup := int32(notRequested), int32(notRequested), int32(notRequested)
		if asked {
			// Kafka 3.9: READ WRITE CREATE DELETE ALTER DESCRIBE
			// DESCRIBE_CONFIGS ALTER_CONFIGS; CREATE CLUSTER_ACTION
			// DESCRIBE_CONFIGS ALTER_CONFIGS IDEMPOTENT_WRITE ALTER DESCRIBE;
			// READ DESCRIBE DELETE.
			wantTopic, wantCluster, wantGroup = 3576, 8096, 328
		}
		// Metadata at a pinned version: kgo's client would send its own.
		raw := dialRaw(t, tb.addr)
		for _, v := range []int16{8, 10, 12} {
			md := kmsg.NewPtrMetadataRequest()
			rt := kmsg.NewMetadataRequestTopic()
			name := "ops"
			rt.Topic = &name
			md.Topics = append(md.Topics, rt)
			md.IncludeTopicAuthorizedOperations, md.IncludeClusterAuthorizedOperations = asked, asked
			resp := raw.roundTrip(md, v).(*kmsg.MetadataResponse)
			if len(resp.Topics) != 1 || resp.Topics[0].AuthorizedOperations != wantTopic {
				t.Errorf("Metadata v%d asked=%v: topic operations %+v, want %d", v, asked, resp.Topics, wantTopic)
			}
			wantMDCluster := wantCluster
			if v > 10 {
				wantMDCluster = notRequested // moved to DescribeCluster (KIP-700)
			}
			if resp.AuthorizedOperations != wantMDCluster {
				t.Errorf("Metadata v%d asked=%v: cluster operations %d, want %d", v, asked, resp.AuthorizedOperations, wantMDCluster)
			}
		}

		dc := kmsg.NewPtrDescribeClusterRequest()
		dc.IncludeClusterAuthorizedOperations = asked
		dresp, err := dc.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if dresp.ClusterAuthorizedOperations != wantCluster {
			t.Errorf("DescribeCluster asked=%v: %d, want %d", asked, dresp.ClusterAuthorizedOperations, wantCluster)
		}

		dg := kmsg.NewPtrDescribeGroupsRequest()
		dg.Groups = []string{"ops-group", "no-such-group"}
		dg.IncludeAuthorizedOperations = asked
		gresp, err := dg.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if len(gresp.Groups) != 2 {
			t.Fatalf("DescribeGroups: %d groups", len(gresp.Groups))
		}
		for _, g := range gresp.Groups {
			if g.AuthorizedOperations != wantGroup {
				t.Errorf("DescribeGroups asked=%v: group %s operations %d, want %d", asked, g.Group, g.AuthorizedOperations, wantGroup)
			}
		}
	}
}
