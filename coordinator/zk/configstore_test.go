package zk

import (
	"maps"
	"slices"
	"testing"

	"github.com/sluice-io/sluice/coordinator/zk/zktest"
)

// SetConfig writes the entity's znode in Kafka's payload, creating its
// parents in an empty chroot, and leaves one version-2 notification per
// change, in order; Config reads it back, and an entity never written has
// no overrides.
func TestConfigStore(t *testing.T) {
	c := connect(t, zktest.Chroot())
	if got, err := c.Config(ConfigTopics, "orders"); err != nil || got == nil || len(got) != 0 {
		t.Fatalf("config of a topic never configured: %v, %v; want an empty map", got, err)
	}
	writes := []struct {
		typ, name string
		configs   map[string]string
	}{
		{ConfigTopics, "orders", map[string]string{"retention.ms": "86400000", "cleanup.policy": "compact"}},
		{ConfigBrokers, DefaultEntity, map[string]string{"log.retention.ms": "1000"}},
		{ConfigBrokers, "2", map[string]string{"log.cleaner.threads": "2"}},
		{ConfigTopics, "orders", map[string]string{"retention.ms": "1000"}},
		{ConfigTopics, "orders", map[string]string{}},
	}
	for _, w := range writes {
		if err := c.SetConfig(w.typ, w.name, w.configs); err != nil {
			t.Fatalf("SetConfig %s/%s: %v", w.typ, w.name, err)
		}
		got, err := c.Config(w.typ, w.name)
		if err != nil || !maps.Equal(got, w.configs) {
			t.Fatalf("Config %s/%s after SetConfig %v: %v, %v", w.typ, w.name, w.configs, got, err)
		}
	}
	data, _, err := c.Get(ConfigEntityPath(ConfigTopics, "orders"))
	if err != nil || string(data) != `{"version":1,"config":{}}` {
		t.Fatalf("%s holds %s, %v", ConfigEntityPath(ConfigTopics, "orders"), data, err)
	}
	data, _, err = c.Get(ConfigEntityPath(ConfigBrokers, DefaultEntity))
	if err != nil || string(data) != `{"version":1,"config":{"log.retention.ms":"1000"}}` {
		t.Fatalf("%s holds %s, %v", ConfigEntityPath(ConfigBrokers, DefaultEntity), data, err)
	}

	names, _, err := c.conn.Children(c.abs(ConfigChangesPath))
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(names) // the 10-digit suffix sorts as the sequence
	if len(names) != len(writes) {
		t.Fatalf("notifications %v, want %d", names, len(writes))
	}
	for i, name := range names {
		if _, err := ConfigChangeSeq(name); err != nil {
			t.Fatal(err)
		}
		data, _, err := c.Get(ConfigChangesPath + "/" + name)
		if err != nil {
			t.Fatal(err)
		}
		want := `{"version":2,"entity_path":"` + writes[i].typ + "/" + writes[i].name + `"}`
		if string(data) != want {
			t.Fatalf("notification %s holds %s, want %s", name, data, want)
		}
	}

	for _, bad := range [][2]string{{"acls", "x"}, {ConfigTopics, ""}, {ConfigTopics, "a/b"}, {ConfigTopics, ".."}} {
		if err := c.SetConfig(bad[0], bad[1], nil); err == nil {
			t.Errorf("SetConfig(%q, %q) was accepted", bad[0], bad[1])
		}
		if _, err := c.Config(bad[0], bad[1]); err == nil {
			t.Errorf("Config(%q, %q) was accepted", bad[0], bad[1])
		}
	}
}
