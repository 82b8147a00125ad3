package zk

// The client config entities, users and client ids, as Kafka keeps them:
//
//	/config/users/<user>                      SCRAM credentials and quotas
//	/config/users/<user>/clients/<client-id>  a user's quotas for one client id
//	/config/clients/<client-id>               quotas
//
// each holding {"version":1,"config":{...}} (config.go), names sanitized
// (coordinator.Sanitize; <default> as it is). A change is written to the
// entity's znode, conditionally on the version read, then announced with a
// version-2 notification under /config/changes whose entity_path is the
// path below /config ("users/alice/clients/c1"), as Kafka's
// AdminZkClient.changeUserOrUserClientIdConfig does. A user's znode that
// only parents client-id entities holds no data.

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	gozk "github.com/go-zookeeper/zk"

	"github.com/sluice-io/sluice/coordinator"
)

// EntityConfig returns the configs of the client entity at path (an
// entity path, coordinator.ParseEntityPath); none is an empty map.
func (c *Client) EntityConfig(path string) (map[string]string, error) {
	m, _, err := c.entityConfig(path)
	return m, err
}

func (c *Client) entityConfig(path string) (map[string]string, int32, error) {
	if _, err := coordinator.ParseEntityPath(path); err != nil {
		return nil, -1, err
	}
	p := ConfigPath + "/" + path
	data, stat, err := c.conn.Get(c.abs(p))
	if errors.Is(err, gozk.ErrNoNode) {
		return map[string]string{}, -1, nil
	} else if err != nil {
		return nil, -1, fmt.Errorf("zk: read %s: %w", p, err)
	}
	typ, name, _ := strings.Cut(path, "/")
	m, err := DecodeConfig(typ, name, data)
	return m, stat.Version, err
}

// AlterEntityConfig replaces the configs of the entity at path with what
// alter returns from the current ones, then announces the change. A
// concurrent writer (the znode's version moved, or it was created
// meanwhile) makes it read and call alter again.
func (c *Client) AlterEntityConfig(path string, alter func(map[string]string) (map[string]string, error)) error {
	p := ConfigPath + "/" + path
	for {
		cur, version, err := c.entityConfig(path)
		if err != nil {
			return err
		}
		next, err := alter(maps.Clone(cur))
		if err != nil {
			return err
		}
		data := EncodeConfig(next)
		if version < 0 {
			if err := c.createParents(p[:strings.LastIndexByte(p, '/')], false); err != nil {
				return fmt.Errorf("zk: create the parents of %s: %w", p, err)
			}
			_, err = c.conn.Create(c.abs(p), data, 0, openACL)
		} else {
			_, err = c.conn.Set(c.abs(p), data, version)
		}
		switch {
		case errors.Is(err, gozk.ErrNodeExists), errors.Is(err, gozk.ErrBadVersion), errors.Is(err, gozk.ErrNoNode):
			continue
		case err != nil:
			return fmt.Errorf("zk: write %s: %w", p, err)
		}
		break
	}
	if err := c.createParents(ConfigChangesPath, false); err != nil {
		return fmt.Errorf("zk: create %s: %w", ConfigChangesPath, err)
	}
	typ, rest, _ := strings.Cut(path, "/")
	note := EncodeConfigChange(ConfigChange{EntityType: typ, EntityName: rest})
	if _, err := c.conn.Create(c.abs(ConfigChangeCreatePath), note, gozk.FlagSequence, openACL); err != nil {
		return fmt.Errorf("zk: create %s<seq>: %w", ConfigChangeCreatePath, err)
	}
	return nil
}

// Entities lists the entity paths under entityType ("users" or
// "clients") whose znode holds configs, sorted.
func (c *Client) Entities(entityType string) ([]string, error) {
	if entityType != ConfigUsers && entityType != ConfigClients {
		return nil, fmt.Errorf("zk: entity type %q is not users or clients", entityType)
	}
	var out []string
	add := func(path string) error {
		m, err := c.EntityConfig(path)
		if err != nil {
			return err
		}
		if len(m) > 0 {
			out = append(out, path)
		}
		return nil
	}
	names, err := c.children(ConfigTypePath(entityType))
	if err != nil {
		return nil, err
	}
	for _, name := range names {
		if err := add(entityType + "/" + name); err != nil {
			return nil, err
		}
		if entityType != ConfigUsers {
			continue
		}
		ids, err := c.children(ConfigTypePath(entityType) + "/" + name + "/clients")
		if err != nil {
			return nil, err
		}
		for _, id := range ids {
			if err := add(entityType + "/" + name + "/clients/" + id); err != nil {
				return nil, err
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

// children lists a znode's children; a missing znode has none.
func (c *Client) children(p string) ([]string, error) {
	names, _, err := c.conn.Children(c.abs(p))
	if errors.Is(err, gozk.ErrNoNode) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("zk: list %s: %w", p, err)
	}
	return names, nil
}
