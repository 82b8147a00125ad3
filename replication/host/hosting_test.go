package host

import (
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/sluice-io/sluice/engine"
)

// failingLogs is a Store whose CreateLogs fails while fail is set.
type failingLogs struct {
	*engine.Store
	fail bool
}

func (f *failingLogs) CreateLogs(id engine.TopicID, tps ...engine.Partition) ([]*engine.Log, error) {
	if f.fail {
		return nil, errors.New("disk full")
	}
	return f.Store.CreateLogs(id, tps...)
}

type change struct {
	partition int32
	lead      bool
	epoch     int32
}

// hostingManager is broker 0's manager over a Store in a temporary
// directory, with the changes of topic t's leadership recorded.
func hostingManager(t *testing.T) (*Manager, *failingLogs, *[]change) {
	t.Helper()
	store, err := engine.OpenStore(t.TempDir(), engine.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	logs := &failingLogs{Store: store}
	var admin sync.Mutex
	var m *Manager
	m = New(Options{Self: 0, LagTimeMax: 30 * time.Second, Logger: slog.New(slog.DiscardHandler),
		Logs: logs, Admin: &admin, LiveBrokers: func() []int32 { return []int32{0, 1} },
		TopicConfigs: func(string) map[string]string { return map[string]string{"k": "v"} },
		MakePartition: func(topic string, index int32, l *engine.Log, _ map[string]string) *Partition {
			return m.NewPartition(topic, index, l, 1, nil)
		}})
	var changes []change
	m.OnLeadership("t", func(p int32, lead bool, epoch int32) { changes = append(changes, change{p, lead, epoch}) })
	return m, logs, &changes
}

// TestHostLeadFollowAndReplace: a LeaderAndIsr's partitions are opened,
// lead or follow as their role says, and are reported to the topic's
// leadership listener at their epoch; the same name at another topic id
// deletes the older topic's logs first; a partition whose log cannot be
// created is reported failed and not hosted.
func TestHostLeadFollowAndReplace(t *testing.T) {
	m, logs, changes := hostingManager(t)
	id1, id2 := engine.TopicID{1}, engine.TopicID{2}
	failed := m.Host("t", []Hosted{
		{Partition: 0, TopicID: id1, Leads: true, Leader: 0, Leadership: Leadership{Epoch: 3, ISR: []int32{0, 1}, Replicas: []int32{0, 1}}},
		{Partition: 1, TopicID: id1, Leader: 1, Leadership: Leadership{Epoch: 4, ISR: []int32{1, 0}, Replicas: []int32{1, 0}}},
	})
	if len(failed) != 0 {
		t.Fatalf("failed: %v", failed)
	}
	ts := m.Topic("t")
	if ts == nil || ts.ID != id1 || ts.Configs["k"] != "v" || !ts.Partitions[0].Leads() || ts.Partitions[1].Leads() {
		t.Fatalf("hosted: %+v", ts)
	}
	if want := []change{{0, true, 3}, {1, false, 4}}; len(*changes) != 2 || (*changes)[0] != want[0] || (*changes)[1] != want[1] {
		t.Fatalf("leadership changes: %v", *changes)
	}

	m.Host("t", []Hosted{{Partition: 0, TopicID: id2, Leads: true, Leadership: Leadership{Epoch: 1, ISR: []int32{0}, Replicas: []int32{0}}}})
	if ts := m.Topic("t"); ts.ID != id2 || len(ts.Partitions) != 1 {
		t.Fatalf("after a new topic id: %+v", ts)
	}
	if _, onDisk, ok := logs.Log(engine.Partition{Topic: "t", Partition: 0}); !ok || onDisk != id2 {
		t.Fatalf("log of partition 0 records %v (%v)", onDisk, ok)
	}
	if _, _, ok := logs.Log(engine.Partition{Topic: "t", Partition: 1}); ok {
		t.Fatal("the older topic's partition 1 was not deleted")
	}

	logs.fail = true
	failed = m.Host("t", []Hosted{{Partition: 3, TopicID: id2, Leads: true, Leadership: Leadership{Epoch: 1, ISR: []int32{0}, Replicas: []int32{0}}}})
	if failed[3] == nil || m.Partition("t", 3) != nil {
		t.Fatalf("a log that cannot be created: failed %v, hosted %v", failed, m.Partition("t", 3))
	}
}

// TestUnhost: StopReplica stops a partition and tells its listener it is
// not led; with deletion the partition leaves the table and its log goes.
func TestUnhost(t *testing.T) {
	m, logs, changes := hostingManager(t)
	m.Host("t", []Hosted{{Partition: 0, TopicID: engine.TopicID{1}, Leads: true, Leadership: Leadership{Epoch: 2, ISR: []int32{0}, Replicas: []int32{0}}}})
	tp := engine.Partition{Topic: "t", Partition: 0}
	if err := m.Unhost(tp, 2, false); err != nil {
		t.Fatal(err)
	}
	if p := m.Partition("t", 0); p == nil || p.Leads() || (*changes)[len(*changes)-1] != (change{0, false, 2}) {
		t.Fatalf("stopped: %v, changes %v", p, *changes)
	}
	if _, _, ok := logs.Log(tp); !ok {
		t.Fatal("a stop without deletion deleted the log")
	}
	if err := m.Unhost(tp, 2, true); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := logs.Log(tp); ok || m.Partition("t", 0) != nil {
		t.Fatal("a deletion left the log or the partition")
	}
}
