package zk

import (
	"maps"
	"slices"
	"sync"
	"testing"

	"github.com/sluice-io/sluice/coordinator"
	"github.com/sluice-io/sluice/coordinator/zk/zktest"
)

// User and client-id entities land where Kafka keeps them, with sanitized
// names, nested user/client-id entities under the user's znode; each
// change is announced with its entity_path; Entities lists what has
// configs; concurrent alterations of one entity all take effect.
func TestClientEntityConfigs(t *testing.T) {
	c := connect(t, zktest.Chroot())
	alice := coordinator.UserEntity("alice@corp")
	nested := coordinator.UserClientEntity("alice@corp", "app 1")
	set := func(path string, kv ...string) {
		t.Helper()
		err := c.AlterEntityConfig(path, func(cur map[string]string) (map[string]string, error) {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i+1] == "" {
					delete(cur, kv[i])
				} else {
					cur[kv[i]] = kv[i+1]
				}
			}
			return cur, nil
		})
		if err != nil {
			t.Fatalf("AlterEntityConfig %s: %v", path, err)
		}
	}
	set(nested, "producer_byte_rate", "1024")
	set(alice, "SCRAM-SHA-512", "salt=x,stored_key=y,server_key=z,iterations=4096")
	set(alice, "producer_byte_rate", "2048")
	set(coordinator.ClientEntity(coordinator.DefaultEntity), "consumer_byte_rate", "10")

	data, _, err := c.Get("/config/users/alice%40corp/clients/app%201")
	if err != nil || string(data) != `{"version":1,"config":{"producer_byte_rate":"1024"}}` {
		t.Fatalf("nested entity znode: %s, %v", data, err)
	}
	got, err := c.EntityConfig(alice)
	want := map[string]string{"SCRAM-SHA-512": "salt=x,stored_key=y,server_key=z,iterations=4096", "producer_byte_rate": "2048"}
	if err != nil || !maps.Equal(got, want) {
		t.Fatalf("EntityConfig %s: %v, %v; want %v", alice, got, err, want)
	}
	users, err := c.Entities(ConfigUsers)
	if err != nil || !slices.Equal(users, []string{alice, nested}) {
		t.Fatalf("Entities(users): %v, %v", users, err)
	}
	clients, err := c.Entities(ConfigClients)
	if err != nil || !slices.Equal(clients, []string{"clients/<default>"}) {
		t.Fatalf("Entities(clients): %v, %v", clients, err)
	}

	names, _, err := c.conn.Children(c.abs(ConfigChangesPath))
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	var paths []string
	for _, name := range names {
		data, _, err := c.Get(ConfigChangesPath + "/" + name)
		if err != nil {
			t.Fatal(err)
		}
		ch, err := DecodeConfigChange(name, data)
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, ch.EntityType+"/"+ch.EntityName)
	}
	if w := []string{nested, alice, alice, "clients/<default>"}; !slices.Equal(paths, w) {
		t.Fatalf("notifications name %v, want %v", paths, w)
	}

	// Removing the only keys leaves the entity without configs.
	set(nested, "producer_byte_rate", "")
	if users, _ := c.Entities(ConfigUsers); !slices.Equal(users, []string{alice}) {
		t.Fatalf("Entities(users) after emptying %s: %v", nested, users)
	}

	// Concurrent read-modify-writes of one entity each keep the others'.
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := c.AlterEntityConfig(coordinator.UserEntity("bob"), func(cur map[string]string) (map[string]string, error) {
				cur["k"+string(rune('0'+i))] = "v"
				return cur, nil
			})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if got, _ := c.EntityConfig(coordinator.UserEntity("bob")); len(got) != 8 {
		t.Fatalf("after 8 concurrent alterations: %v", got)
	}

	for _, bad := range []string{"users", "users/", "topics/x", "users/a/clients", "clients/a/b"} {
		if _, err := c.EntityConfig(bad); err == nil {
			t.Errorf("EntityConfig(%q) was accepted", bad)
		}
	}
}
