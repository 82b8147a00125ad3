package scram

// A Cache holds the SCRAM credentials a broker reads from its users'
// entity configs (the keys "SCRAM-SHA-256" and "SCRAM-SHA-512" of
// users/<user>: /config/users/<user> in ZooKeeper, the metadata file on a
// single node), per user, the absence of any too, so that a client
// guessing names does not make the broker read its metadata per attempt.
// A user's entry is dropped when its entity changes (Forget), and the
// whole cache when it holds more than maxCachedUsers users. Its mutex is a
// leaf, not held across a load.

import (
	"log/slog"
	"sync"
)

const maxCachedUsers = 10000

// Cache is a broker's SCRAM credentials by user.
type Cache struct {
	// load reads a user's entity configs, by key.
	load func(user string) (map[string]string, error)
	log  *slog.Logger

	mu    sync.Mutex
	users map[string]map[string]Credential // user → mechanism name → credential; empty: none
}

// NewCache returns an empty cache over load, which reads a user's entity
// configs.
func NewCache(load func(user string) (map[string]string, error), log *slog.Logger) *Cache {
	return &Cache{load: load, log: log}
}

// Credential finds user's credential for m. A failed read is logged and
// answers none (not cached: the next attempt reads again).
func (c *Cache) Credential(m *Mechanism, user string) (Credential, bool) {
	c.mu.Lock()
	creds, ok := c.users[user]
	c.mu.Unlock()
	if !ok {
		var err error
		creds, err = c.read(user)
		if err != nil {
			c.log.Warn("reading SCRAM credentials", "user", user, "err", err)
			return Credential{}, false
		}
		c.mu.Lock()
		if c.users == nil || len(c.users) >= maxCachedUsers {
			c.users = map[string]map[string]Credential{}
		}
		c.users[user] = creds
		c.mu.Unlock()
	}
	cred, ok := creds[m.Name()]
	return cred, ok
}

// read loads user's credentials; a malformed one is logged and skipped.
func (c *Cache) read(user string) (map[string]Credential, error) {
	cfgs, err := c.load(user)
	if err != nil {
		return nil, err
	}
	creds := map[string]Credential{}
	for _, m := range Mechanisms {
		s, ok := cfgs[m.Name()]
		if !ok {
			continue
		}
		cred, err := m.ParseCredential(s)
		if err != nil {
			c.log.Warn("ignoring a malformed SCRAM credential", "user", user, "mechanism", m.Name(), "err", err)
			continue
		}
		creds[m.Name()] = cred
	}
	return creds, nil
}

// Forget drops user's cached credentials.
func (c *Cache) Forget(user string) {
	c.mu.Lock()
	delete(c.users, user)
	c.mu.Unlock()
}
