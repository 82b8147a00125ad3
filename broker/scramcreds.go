package broker

// SCRAM credentials: security/scram's Cache and Admin over the users'
// entity configs (scramStore: the coordinator's EntityConfigs), a user's
// entry dropped when its entity changes (clientEntityHooks for other
// brokers' changes; Admin itself after this broker's own).

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

// newSCRAM is the cache and the administration over this broker's
// metadata backend.
func (b *Broker) newSCRAM() (*scram.Cache, *scram.Admin) {
	st := scramStore{b.coord}
	cache := scram.NewCache(st.UserConfigs, b.log)
	return cache, scram.NewAdmin(scram.Options{Store: st, Cache: cache, Logger: b.log})
}

// forgetSCRAM drops user's cached credentials.
func (b *Broker) forgetSCRAM(user string) { b.sec.scram.Forget(user) }

// scramStore is scram.Store over the coordinator's user entities.
type scramStore struct{ coord coordinator.Coordinator }

func (s scramStore) Users() ([]string, error) {
	paths, err := s.coord.Entities("users")
	if err != nil {
		return nil, err
	}
	var users []string
	for _, p := range paths {
		e, err := coordinator.ParseEntityPath(p)
		if err != nil || !e.HasUser || e.HasClientID || e.User == coordinator.DefaultEntity {
			continue
		}
		users = append(users, e.User)
	}
	return users, nil
}

func (s scramStore) UserConfigs(user string) (map[string]string, error) {
	return s.coord.EntityConfigs(coordinator.UserEntity(user))
}

func (s scramStore) AlterUserConfigs(user string, alter func(map[string]string) (map[string]string, error)) error {
	return s.coord.AlterEntityConfigs(coordinator.UserEntity(user), alter)
}
