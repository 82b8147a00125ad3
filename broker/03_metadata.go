package broker

// Metadata (key 3), versions 0-12.
//
// Behavior:
//   - Answered from the controller's metadata (broker/cluster/directory.go): the
//     live brokers (the single node: itself, also the controller) and the
//     requested topics: all of them for a null list (an empty list in v0),
//     none for an empty list (v1+).
//   - A requested topic that does not exist is created with num.partitions
//     when auto.create.topics.enable is on and the request allows it (v4+
//     field; always for v0-v3), as Kafka does; otherwise
//     UNKNOWN_TOPIC_OR_PARTITION. An invalid name gets INVALID_TOPIC_EXCEPTION.
//   - v10+: topics are also requested by ID; an unknown ID gets
//     UNKNOWN_TOPIC_ID.
//   - Each partition with its leader, leader epoch, replicas and ISR (the
//     single node leads every partition at leader epoch 0, alone).
//   - v8+: each topic's authorized operations when asked
//     (IncludeTopicAuthorizedOperations), and in v8-10 the cluster's
//     (IncludeClusterAuthorizedOperations); authorizedops.go.
//   - With an authorizer, as Kafka: listing all topics shows only those
//     the principal may Describe; a named topic it may not Describe is
//     TOPIC_AUTHORIZATION_FAILED (whether it exists or not), and
//     auto-creating one needs Create on the cluster or the topic
//     (TOPIC_AUTHORIZATION_FAILED otherwise).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/broker/cluster"
	"github.com/sluice-io/sluice/security/acl"
	"github.com/sluice-io/sluice/wire"
)

func init() { register(3, 0, 12, handleMetadata) }

func handleMetadata(c *conn, h wire.Header, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.MetadataRequest)
	resp := c.b.plane.dir.Metadata(req, c.directoryClient()) // broker/cluster/directory.go
	if req.Version >= 8 && req.IncludeTopicAuthorizedOperations {
		for i := range resp.Topics {
			if t := &resp.Topics[i]; t.ErrorCode != kerr.TopicAuthorizationFailed.Code && t.Topic != nil {
				t.AuthorizedOperations = c.authorizedOps(acl.ResourceTopic, *t.Topic)
			}
		}
	}
	if req.Version >= 8 && req.Version <= 10 && req.IncludeClusterAuthorizedOperations {
		resp.AuthorizedOperations = c.authorizedOps(acl.ResourceCluster, acl.ClusterName)
	}
	return resp, nil
}

// directoryClient is the client of c as the directory sees it: its
// listener and what it may describe and create.
func (c *conn) directoryClient() cluster.Client {
	return cluster.Client{
		Listener: c.Listener().Name,
		Describe: func(topic string) bool { return c.authorized(acl.OpDescribe, acl.ResourceTopic, topic) },
		Create: func(topic string) bool {
			return c.authorizedCluster(acl.OpCreate) || c.authorized(acl.OpCreate, acl.ResourceTopic, topic)
		},
	}
}
