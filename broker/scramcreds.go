package broker

// SCRAM credentials, read from the users' entity configs (the keys
// "SCRAM-SHA-256" and "SCRAM-SHA-512" of users/<user>, coordinator's
// EntityConfigs: /config/users/<user> in ZooKeeper, the metadata file on
// a single node) and cached per user, the absence of any too, so a client
// guessing names does not make the broker read ZooKeeper per attempt. A
// user's entry is dropped when its entity changes (clientEntityHooks for
// other brokers' changes, forgetSCRAM after this broker's own), and the
// whole cache when it holds more than maxSCRAMCache users.

import (
	"sync"

	"github.com/sluice-io/sluice/coordinator"
	"github.com/sluice-io/sluice/security/scram"
)

const maxSCRAMCache = 10000

type scramCache struct {
	mu    sync.Mutex
	users map[string]map[string]scram.Credential // user → mechanism name → credential; empty: none
}

func init() {
	clientEntityHooks = append(clientEntityHooks, func(b *Broker, path string) {
		if e, err := coordinator.ParseEntityPath(path); err == nil && e.HasUser && !e.HasClientID {
			b.forgetSCRAM(e.User)
		}
	})
}

// scramCredential finds user's credential for m.
func (b *Broker) scramCredential(m *scram.Mechanism, user string) (scram.Credential, bool) {
	c := &b.scram
	c.mu.Lock()
	creds, ok := c.users[user]
	c.mu.Unlock()
	if !ok {
		var err error
		creds, err = b.loadSCRAM(user)
		if err != nil {
			b.log.Warn("reading SCRAM credentials", "user", user, "err", err)
			return scram.Credential{}, false
		}
		c.mu.Lock()
		if c.users == nil || len(c.users) >= maxSCRAMCache {
			c.users = map[string]map[string]scram.Credential{}
		}
		c.users[user] = creds
		c.mu.Unlock()
	}
	cred, ok := creds[m.Name()]
	return cred, ok
}

// loadSCRAM reads user's SCRAM credentials; a malformed one is logged and
// skipped.
func (b *Broker) loadSCRAM(user string) (map[string]scram.Credential, error) {
	path := coordinator.UserEntity(user)
	cfgs, err := b.coord.EntityConfigs(path)
	if err != nil {
		return nil, err
	}
	creds := map[string]scram.Credential{}
	for _, m := range scram.Mechanisms {
		s, ok := cfgs[m.Name()]
		if !ok {
			continue
		}
		cred, err := m.ParseCredential(s)
		if err != nil {
			b.log.Warn("ignoring a malformed SCRAM credential", "entity", path, "mechanism", m.Name(), "err", err)
			continue
		}
		creds[m.Name()] = cred
	}
	return creds, nil
}

// forgetSCRAM drops user's cached credentials.
func (b *Broker) forgetSCRAM(user string) {
	b.scram.mu.Lock()
	delete(b.scram.users, user)
	b.scram.mu.Unlock()
}
