package zk

// Reading and writing config entities, /config/<type>/<name>, from any
// broker, as Kafka's AdminZkClient.changeEntityConfig: the entity's znode
// is written (created with its parents when missing), then a change
// notification, /config/changes/config_change_<seq>, is created so that
// every broker (they all watch /config/changes, configwatch.go) re-reads
// that entity. A broker that misses the notification still reads the
// entity's current config when it starts, so the order (config first) is
// what makes the pair safe without a multi-op: a notification never names
// a config not yet written.
//
// Checks of the configs themselves (known keys, valid values) and of the
// entity (Kafka's changeTopicConfig refuses an unknown topic) are the
// caller's: this file stores what it is given.

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	gozk "github.com/go-zookeeper/zk"
)

// checkEntity refuses an entity that is not a znode of its own under one of
// the config types.
func checkEntity(entityType, name string) error {
	if !slices.Contains(ConfigTypes, entityType) {
		return fmt.Errorf("zk: unknown config entity type %q", entityType)
	}
	if name == "" || name == "." || name == ".." || strings.Contains(name, "/") {
		return fmt.Errorf("zk: bad config entity name %q", name)
	}
	return nil
}

// Config returns the config overrides of an entity: a topic's
// (ConfigTopics), a broker's (ConfigBrokers, the broker id in decimal, or
// DefaultEntity for the cluster-wide defaults). An entity without a znode
// has none: an empty map, not an error.
func (c *Client) Config(entityType, name string) (map[string]string, error) {
	if err := checkEntity(entityType, name); err != nil {
		return nil, err
	}
	p := ConfigEntityPath(entityType, name)
	data, _, err := c.conn.Get(c.abs(p))
	if errors.Is(err, gozk.ErrNoNode) {
		return map[string]string{}, nil
	} else if err != nil {
		return nil, fmt.Errorf("zk: read %s: %w", p, err)
	}
	return DecodeConfig(entityType, name, data)
}

// SetConfig replaces an entity's config overrides with configs (an empty
// map removes them all) and announces the change with a notification,
// which every broker's WatchConfigChanges delivers.
func (c *Client) SetConfig(entityType, name string, configs map[string]string) error {
	if err := checkEntity(entityType, name); err != nil {
		return err
	}
	if err := c.writeConfig(entityType, name, EncodeConfig(configs)); err != nil {
		return err
	}
	// KafkaZkClient.createConfigChangeNotification: the parent is made
	// sure of, then a persistent sequential child.
	if err := c.createParents(ConfigChangesPath, false); err != nil {
		return fmt.Errorf("zk: create %s: %w", ConfigChangesPath, err)
	}
	note := EncodeConfigChange(ConfigChange{EntityType: entityType, EntityName: name})
	if _, err := c.conn.Create(c.abs(ConfigChangeCreatePath), note, gozk.FlagSequence, openACL); err != nil {
		return fmt.Errorf("zk: create %s<seq>: %w", ConfigChangeCreatePath, err)
	}
	return nil
}

// writeConfig sets the entity's znode to data whatever its version, or
// creates it (KafkaZkClient.setOrCreateEntityConfigs); a create that loses
// to another writer's sets it again.
func (c *Client) writeConfig(entityType, name string, data []byte) error {
	p := ConfigEntityPath(entityType, name)
	for {
		_, err := c.conn.Set(c.abs(p), data, -1)
		if err == nil {
			return nil
		}
		if !errors.Is(err, gozk.ErrNoNode) {
			return fmt.Errorf("zk: write %s: %w", p, err)
		}
		if err := c.createParents(ConfigTypePath(entityType), false); err != nil {
			return fmt.Errorf("zk: create %s: %w", ConfigTypePath(entityType), err)
		}
		_, err = c.conn.Create(c.abs(p), data, 0, openACL)
		if err == nil {
			return nil
		}
		if !errors.Is(err, gozk.ErrNodeExists) {
			return fmt.Errorf("zk: create %s: %w", p, err)
		}
	}
}
