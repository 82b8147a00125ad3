package zk

// Topic administration from any broker, as Kafka's AdminZkClient: a topic
// is created by writing its config (/config/topics/<t>) and its replica
// assignment with a new topic id (/brokers/topics/<t>), and deleted by
// marking it (/admin/delete_topics/<t>); the controller, watching those
// znodes, does the rest (partition states, requests to brokers, the
// deletion of the replicas and znodes). These writes are not fenced on the
// controller epoch: any broker makes them.

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"

	gozk "github.com/go-zookeeper/zk"

	"github.com/sluice-io/sluice/coordinator/controller"
	"github.com/sluice-io/sluice/engine"
)

// CreateTopic places a new topic's replicas over the live brokers
// (controller.PlaceTopic, its start drawn from rng) and writes its config
// and assignment, as AdminZkClient.createTopicWithAssignment. It returns
// the assignment written. Refused: the counts or assignment PlaceTopic
// refuses (its errors), a topic that exists or is being deleted
// (ErrTopicExists), a name colliding with an existing topic's
// (ErrTopicCollision).
func (c *Client) CreateTopic(name string, req controller.TopicRequest, d controller.Defaults, configs map[string]string, rng *rand.Rand) (TopicAssignment, error) {
	brokers, err := c.placementBrokers()
	if err != nil {
		return TopicAssignment{}, err
	}
	replicas, err := controller.PlaceTopic(req, d, brokers, rng)
	if err != nil {
		return TopicAssignment{}, err
	}
	a := TopicAssignment{ID: engine.NewTopicID(), Replicas: replicas}
	return a, c.WriteTopic(name, a, configs)
}

// placementBrokers lists the live brokers as placement takes them.
func (c *Client) placementBrokers() ([]controller.Broker, error) {
	regs, err := c.Brokers()
	if err != nil {
		return nil, err
	}
	brokers := make([]controller.Broker, 0, len(regs))
	for _, r := range regs {
		brokers = append(brokers, controller.Broker{ID: r.ID, Rack: r.Rack})
	}
	return brokers, nil
}

// AddPartitions grows a topic to count partitions, as
// AdminZkClient.addPartitions: the new partitions' replicas are
// assignments when given (one list per new partition) or placed over the
// live brokers (controller.PlaceNewPartitions), and the topic znode is
// rewritten with them, conditional on the version read (Kafka writes it
// unconditionally; a concurrent change is read again here). It returns
// the topic's whole assignment. ErrUnknownTopic if the topic does not
// exist, ErrTopicDeleting if it is being deleted; PlaceNewPartitions' errors for counts and assignments it refuses.
func (c *Client) AddPartitions(name string, count int32, assignments [][]int32) (TopicAssignment, error) {
	for {
		data, stat, err := c.Get(TopicPath(name))
		if errors.Is(err, gozk.ErrNoNode) {
			return TopicAssignment{}, kafkaFail(ErrUnknownTopic, "The topic '%s' does not exist.", name)
		}
		if err != nil {
			return TopicAssignment{}, fmt.Errorf("zk: read %s: %w", TopicPath(name), err)
		}
		a, err := DecodeTopic(name, data)
		if err != nil {
			return TopicAssignment{}, err
		}
		marked, _, err := c.conn.Exists(c.abs(DeleteTopicPath(name)))
		if err != nil {
			return TopicAssignment{}, fmt.Errorf("zk: read %s: %w", DeleteTopicPath(name), err)
		}
		if marked {
			return TopicAssignment{}, kafkaFail(ErrTopicDeleting, "The topic '%s' is queued for deletion.", name)
		}
		brokers, err := c.placementBrokers()
		if err != nil {
			return TopicAssignment{}, err
		}
		added, err := controller.PlaceNewPartitions(a.Replicas, count, assignments, brokers)
		if err != nil {
			return TopicAssignment{}, err
		}
		a.Replicas = append(a.Replicas, added...)
		_, err = c.conn.Set(c.abs(TopicPath(name)), EncodeTopic(a), stat.Version)
		if errors.Is(err, gozk.ErrBadVersion) {
			continue
		}
		if err != nil {
			return TopicAssignment{}, fmt.Errorf("zk: write %s: %w", TopicPath(name), err)
		}
		return a, nil
	}
}

// WriteTopic writes a new topic's config and assignment (AdminZkClient's
// writeTopicConfig then writeTopicPartitionAssignment, here in one
// multi-op), after Kafka's checks of validateTopicCreate.
func (c *Client) WriteTopic(name string, a TopicAssignment, configs map[string]string) error {
	if err := c.checkTopicCreate(name); err != nil {
		return err
	}
	topicOp := &gozk.CreateRequest{Path: c.abs(TopicPath(name)), Data: EncodeTopic(a), Acl: openACL}
	cfgPath := c.abs(ConfigEntityPath(ConfigTopics, name))
	cfg := EncodeConfig(configs)
	res, err := c.conn.Multi(&gozk.CreateRequest{Path: cfgPath, Data: cfg, Acl: openACL}, topicOp)
	if err != nil && len(res) == 2 && errors.Is(res[0].Error, gozk.ErrNodeExists) {
		// A config left behind (Kafka overwrites it too).
		res, err = c.conn.Multi(&gozk.SetDataRequest{Path: cfgPath, Data: cfg, Version: -1}, topicOp)
	}
	if err != nil && len(res) == 2 && errors.Is(res[1].Error, gozk.ErrNodeExists) {
		return kafkaFail(ErrTopicExists, "Topic '%s' already exists.", name)
	}
	if err != nil {
		return fmt.Errorf("zk: create topic %s: %w", name, err)
	}
	return nil
}

// checkTopicCreate is AdminZkClient.validateTopicCreate's checks of
// ZooKeeper: the topic exists, is marked for deletion, or collides.
func (c *Client) checkTopicCreate(name string) error {
	names, _, err := c.conn.Children(c.abs(TopicsPath))
	if err != nil {
		return fmt.Errorf("zk: list %s: %w", TopicsPath, err)
	}
	collide := func(s string) string { return strings.ReplaceAll(s, ".", "_") }
	for _, t := range names {
		switch {
		case t == name:
			return kafkaFail(ErrTopicExists, "Topic '%s' already exists.", name)
		case collide(t) == collide(name):
			return kafkaFail(ErrTopicCollision, "Topic '%s' collides with existing topics: %s", name, t)
		}
	}
	marked, _, err := c.conn.Exists(c.abs(DeleteTopicPath(name)))
	if err != nil {
		return fmt.Errorf("zk: read %s: %w", DeleteTopicPath(name), err)
	}
	if marked {
		return kafkaFail(ErrTopicExists, "Topic '%s' is marked for deletion.", name)
	}
	return nil
}

// DeleteTopic marks a topic for deletion, as AdminZkClient.deleteTopic:
// ErrUnknownTopic if it does not exist; a topic already marked is not an
// error (Kafka's ZkAdminManager swallows TopicAlreadyMarkedForDeletion).
func (c *Client) DeleteTopic(name string) error {
	exists, _, err := c.conn.Exists(c.abs(TopicPath(name)))
	if err != nil {
		return fmt.Errorf("zk: read %s: %w", TopicPath(name), err)
	}
	if !exists {
		return kafkaFail(ErrUnknownTopic, "This server does not host this topic-partition.")
	}
	_, err = c.conn.Create(c.abs(DeleteTopicPath(name)), nil, 0, openACL)
	if err != nil && !errors.Is(err, gozk.ErrNodeExists) {
		return fmt.Errorf("zk: create %s: %w", DeleteTopicPath(name), err)
	}
	return nil
}
