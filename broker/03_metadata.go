package broker

// Metadata (key 3), versions 0-12.
//
// Behavior:
//   - Answered from the controller's metadata (clustermetadata.go): the
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

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/wire"
)

func init() { register(3, 0, 12, handleMetadata) }

func handleMetadata(c *conn, h wire.Header, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.MetadataRequest)
	resp := c.b.clusterMetadata(req, c.ln.name) // clustermetadata.go
	if req.Version >= 8 && req.IncludeTopicAuthorizedOperations {
		for i := range resp.Topics {
			resp.Topics[i].AuthorizedOperations = topicOperations
		}
	}
	if req.Version >= 8 && req.Version <= 10 && req.IncludeClusterAuthorizedOperations {
		resp.AuthorizedOperations = clusterOperations
	}
	return resp, nil
}
