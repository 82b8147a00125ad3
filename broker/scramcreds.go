package broker

// SCRAM credentials: security/scram's Cache over the users' entity configs
// (coordinator's EntityConfigs), a user's entry dropped when its entity
// changes (clientEntityHooks for other brokers' changes, forgetSCRAM after
// this broker's own).

import (
	"github.com/sluice-io/sluice/coordinator"
	"github.com/sluice-io/sluice/security/scram"
)

func init() {
	clientEntityHooks = append(clientEntityHooks, func(b *Broker, path string) {
		if e, err := coordinator.ParseEntityPath(path); err == nil && e.HasUser && !e.HasClientID {
			b.forgetSCRAM(e.User)
		}
	})
}

// newSCRAMCache is the cache over this broker's metadata backend.
func (b *Broker) newSCRAMCache() *scram.Cache {
	return scram.NewCache(func(user string) (map[string]string, error) {
		return b.coord.EntityConfigs(coordinator.UserEntity(user))
	}, b.log)
}

// forgetSCRAM drops user's cached credentials.
func (b *Broker) forgetSCRAM(user string) { b.scram.Forget(user) }
