package zk

// Config entities, /config/<type>/<name>, and the change notifications
// brokers watch, /config/changes/config_change_<seq> (doc.go shows the
// payloads).

import (
	"bytes"
	"strings"
)

// ---- /config/<type>/<name> and /config/changes

type configJSON struct {
	Version int               `json:"version"`
	Config  map[string]string `json:"config"`
}

// EncodeConfig returns a config entity's payload (version 1): the
// entity's overrides, by Kafka key. Kafka writes a java.util.Properties,
// whose key order depends on its insertion history; sluice writes keys in
// sorted order.
func EncodeConfig(configs map[string]string) []byte {
	if configs == nil {
		configs = map[string]string{}
	}
	return marshal(configJSON{Version: 1, Config: configs})
}

// DecodeConfig decodes the config of entity name of entityType. No data, or
// no "config" object, is no overrides, as Kafka reads it; values must be
// strings.
func DecodeConfig(entityType, name string, data []byte) (map[string]string, error) {
	path := ConfigEntityPath(entityType, name)
	configs := map[string]string{}
	if len(bytes.TrimSpace(data)) == 0 {
		return configs, nil
	}
	var v struct {
		Config map[string]*string `json:"config"`
	}
	if err := unmarshal(path, data, &v); err != nil {
		return nil, err
	}
	for k, val := range v.Config {
		if val == nil {
			return nil, bad(path, "config %q is null", k)
		}
		configs[k] = *val
	}
	return configs, nil
}

// ConfigChange is what a /config/changes notification names: the entity
// whose config changed. Brokers re-read that entity's config znode.
type ConfigChange struct {
	EntityType string // one of ConfigTypes
	EntityName string // as in its config path (users and clients URL-encoded)
}

type configChangeJSON struct {
	Version    int    `json:"version"`
	EntityPath string `json:"entity_path"`
}

// EncodeConfigChange returns a change notification's payload (version 2),
// for a sequential znode created at ConfigChangeCreatePath.
func EncodeConfigChange(c ConfigChange) []byte {
	return marshal(configChangeJSON{Version: 2, EntityPath: c.EntityType + "/" + c.EntityName})
}

// DecodeConfigChange decodes the notification znode named name (a child of
// /config/changes), versions 1 ({"version":1,"entity_type":"topics",
// "entity_name":"t"}, topics and clients only) and 2. Kafka ignores
// notifications that are not JSON (pre-0.9 brokers wrote a bare topic
// name); they are an ErrBadZnode here, which callers skip the same way.
func DecodeConfigChange(name string, data []byte) (ConfigChange, error) {
	path := ConfigChangesPath + "/" + name
	var v struct {
		Version    *int    `json:"version"`
		EntityType *string `json:"entity_type"`
		EntityName *string `json:"entity_name"`
		EntityPath *string `json:"entity_path"`
	}
	if err := unmarshal(path, data, &v); err != nil {
		return ConfigChange{}, err
	}
	if v.Version == nil {
		return ConfigChange{}, bad(path, `"version" missing`)
	}
	var c ConfigChange
	switch *v.Version {
	case 1:
		if v.EntityType == nil || (*v.EntityType != ConfigTopics && *v.EntityType != ConfigClients) {
			return ConfigChange{}, bad(path, `version 1 needs "entity_type" topics or clients`)
		}
		if v.EntityName == nil {
			return ConfigChange{}, bad(path, `version 1 needs "entity_name"`)
		}
		c = ConfigChange{*v.EntityType, *v.EntityName}
	case 2:
		if v.EntityPath == nil {
			return ConfigChange{}, bad(path, `version 2 needs "entity_path"`)
		}
		typ, entity, ok := strings.Cut(*v.EntityPath, "/")
		known := false
		for _, t := range ConfigTypes {
			known = known || t == typ
		}
		if !ok || !known {
			return ConfigChange{}, bad(path, "entity_path %q does not start with a config type", *v.EntityPath)
		}
		c = ConfigChange{typ, entity}
	default:
		return ConfigChange{}, bad(path, "unsupported version %d", *v.Version)
	}
	if c.EntityName == "" {
		return ConfigChange{}, bad(path, "no entity name")
	}
	return c, nil
}
