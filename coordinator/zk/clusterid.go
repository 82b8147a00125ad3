package zk

// The cluster id, /cluster/id (doc.go): read it, or be the broker that
// writes it, as Kafka's KafkaZkClient.getOrCreateClusterId. The first
// broker of a cluster creates the znode with a new random id; brokers that
// race it lose the create (NodeExists) and read the winner's, so every
// broker of the cluster reports the same id.

import (
	"errors"
	"fmt"

	gozk "github.com/go-zookeeper/zk"

	"github.com/sluice-io/sluice/engine"
)

// ClusterID returns the cluster's id, creating /cluster/id (and /cluster)
// with a new one (Kafka's Uuid.randomUuid in URL-safe base64, 22
// characters) when the cluster has none yet.
func (c *Client) ClusterID() (string, error) {
	p := c.abs(ClusterIDPath)
	for {
		data, _, err := c.conn.Get(p)
		if err == nil {
			return DecodeClusterID(data)
		}
		if !errors.Is(err, gozk.ErrNoNode) {
			return "", fmt.Errorf("zk: read %s: %w", ClusterIDPath, err)
		}
		if err := c.createParents(ClusterPath, false); err != nil {
			return "", fmt.Errorf("zk: create %s: %w", ClusterPath, err)
		}
		id := engine.NewTopicID().String()
		_, err = c.conn.Create(p, EncodeClusterID(id), 0, openACL)
		switch {
		case err == nil:
			return id, nil
		case errors.Is(err, gozk.ErrNodeExists):
			continue // another broker won: read its id
		default:
			return "", fmt.Errorf("zk: create %s: %w", ClusterIDPath, err)
		}
	}
}
