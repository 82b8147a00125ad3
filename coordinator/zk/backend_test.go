package zk

import (
	"testing"
	"time"

	"github.com/sluice-io/sluice/config"
	"github.com/sluice-io/sluice/coordinator/zk/zktest"
)

// The backend hands every topic's and broker's config change notice to
// OnNotice's fn, of topics it does not cache too (the controller's
// unclean election setting follows them), after OnConfigChange's fn,
// which sees only the cached ones.
func TestBackendNoticesEveryTopic(t *testing.T) {
	c := connect(t, zktest.Chroot())
	if err := c.EnsurePersistentPaths(); err != nil {
		t.Fatal(err)
	}
	b, err := OpenBackend(c, 1, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	changes := make(chan string, 16)
	notices := make(chan ConfigChange, 16)
	b.OnConfigChange(func(entityType, name string) { changes <- entityType + "/" + name })
	b.OnNotice(func(ch ConfigChange) { notices <- ch })
	if err := b.LoadTopic("cached"); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"cached", "elsewhere"} {
		if err := c.SetConfig(ConfigTopics, name, map[string]string{config.UncleanLeaderElectionKey: "true"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.SetConfig(ConfigBrokers, DefaultEntity, map[string]string{config.UncleanLeaderElectionKey: "true"}); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(waitDeadline)
	var got []ConfigChange
	for len(got) < 3 {
		select {
		case ch := <-notices:
			got = append(got, ch)
		case <-deadline:
			t.Fatalf("notices %+v, want 3", got)
		}
	}
	want := []ConfigChange{{ConfigTopics, "cached"}, {ConfigTopics, "elsewhere"}, {ConfigBrokers, DefaultEntity}}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("notices %+v, want %+v", got, want)
		}
	}
	if len(changes) != 2 || <-changes != "topics/cached" || <-changes != "brokers/"+DefaultEntity {
		t.Errorf("OnConfigChange saw other than the cached topic and the default")
	}
}
