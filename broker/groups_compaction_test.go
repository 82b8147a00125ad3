package broker

import (
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/config"
	"github.com/sluice-io/sluice/coordinator/group"
)

// compactedOffsets configures a broker whose __consumer_offsets has one
// small-segmented partition that forceClean cleans: tombstones go at the
// pass after the one that first keeps them (delete.retention.ms=0), and any
// dirty data makes the log cleanable.
func compactedOffsets(c *config.Config) {
	groupTimeouts(c)
	noBackgroundCleaner(c)
	c.Groups.OffsetsPartitions = 1
	c.Groups.OffsetsSegmentBytes = 4096
	zero, ratio := time.Duration(0), 0.0
	c.Cleaner.DeleteRetention, c.Cleaner.MinCleanableRatio = &zero, &ratio
}

// offsetsRecords counts the records and the tombstones of
// __consumer_offsets, read as the group coordinator loads them.
func (tb *testBroker) offsetsRecords(t testing.TB) (records, tombstones int) {
	t.Helper()
	ts := tb.topic(offsetsTopic)
	s := tb.coords.groups.Store()
	for i := range ts.Partitions {
		err := s.Read(int32(i), func(r group.Record) error {
			records++
			if r.Value == nil {
				tombstones++
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return records, tombstones
}

func commitGroup(t testing.TB, adm *kadm.Client, g, topic string, partitions int32, at int64) {
	t.Helper()
	var os kadm.Offsets
	for p := range partitions {
		os.Add(kadm.Offset{Topic: topic, Partition: p, At: at + int64(p), LeaderEpoch: -1, Metadata: g})
	}
	r, err := adm.CommitOffsets(ctxTimeout(t, 10*time.Second), g, os)
	if err == nil {
		err = r.Error()
	}
	if err != nil {
		t.Fatalf("commit %s at %d: %v", g, at, err)
	}
}

// fetchGroup is a group's committed offsets, partition -> offset/metadata.
func fetchGroup(t testing.TB, adm *kadm.Client, g, topic string) map[int32]string {
	t.Helper()
	offs, err := adm.FetchOffsets(ctxTimeout(t, 10*time.Second), g)
	if err != nil {
		t.Fatalf("fetch %s: %v", g, err)
	}
	out := map[int32]string{}
	for p, o := range offs[topic] {
		if o.Err != nil {
			t.Fatalf("fetch %s %s-%d: %v", g, topic, p, o.Err)
		}
		if o.At >= 0 {
			out[p] = fmt.Sprintf("%d/%s", o.At, o.Metadata)
		}
	}
	return out
}

// TestOffsetsSurviveCompaction (issue 9): many commits for a few groups,
// __consumer_offsets cleaned, then the broker restarted: every group's
// latest offsets load intact, and a deleted group stays deleted, its
// tombstones gone after the next pass.
func TestOffsetsSurviveCompaction(t *testing.T) {
	dir := t.TempDir()
	tb := startBroker(t, dir, compactedOffsets)
	tb.createTopic(t, "t", 4)
	adm := tb.admin(t)
	groups := []string{"g0", "g1", "g2", "g3", "gone"}
	const rounds = 150
	for r := range rounds {
		for _, g := range groups {
			commitGroup(t, adm, g, "t", 4, int64(r*10))
		}
	}
	want := map[string]map[int32]string{}
	for _, g := range groups[:4] {
		want[g] = fetchGroup(t, adm, g, "t")
		if len(want[g]) != 4 || want[g][3] != fmt.Sprintf("%d/%s", (rounds-1)*10+3, g) {
			t.Fatalf("%s before cleaning: %v", g, want[g])
		}
	}
	if r, err := adm.DeleteGroups(ctxTimeout(t, 10*time.Second), "gone"); err != nil || r.Error() != nil {
		t.Fatalf("delete group: %v %v", err, r.Error())
	}
	cfg := describedTopic(t, adm, offsetsTopic)
	wantConfig(t, offsetsTopic, cfg["cleanup.policy"], "compact", kmsg.ConfigSourceDynamicTopicConfig)
	wantConfig(t, offsetsTopic, cfg["segment.bytes"], "4096", kmsg.ConfigSourceDynamicTopicConfig)
	wantConfig(t, offsetsTopic, cfg["compression.type"], "producer", kmsg.ConfigSourceDynamicTopicConfig)
	wantConfig(t, offsetsTopic, cfg["retention.ms"], "604800000", kmsg.ConfigSourceDefaultConfig)

	// Commits after the delete put its tombstones below the active segment,
	// which the cleaner does not touch.
	more := func(from int) {
		for r := from; r < from+20; r++ {
			for _, g := range groups[:4] {
				commitGroup(t, adm, g, "t", 4, int64(r*10))
			}
		}
		for _, g := range groups[:4] {
			want[g] = fetchGroup(t, adm, g, "t")
		}
	}
	more(rounds)
	before, tombs := tb.offsetsRecords(t)
	if before < rounds*len(groups)*4 || tombs == 0 {
		t.Fatalf("__consumer_offsets holds %d records, %d tombstones, before cleaning", before, tombs)
	}
	tb.forceClean(t, offsetsTopic)
	if _, tombs := tb.offsetsRecords(t); tombs == 0 {
		t.Errorf("the first pass dropped the tombstones: it must keep them until their delete horizon")
	}
	// More commits make the log dirty again; the second pass drops the
	// tombstones (their delete horizon, stamped by the first, has passed).
	more(rounds + 20)
	tb.forceClean(t, offsetsTopic)
	after, tombs := tb.offsetsRecords(t)
	t.Logf("__consumer_offsets: %d records before cleaning, %d after", before, after)
	if after >= before/4 || tombs != 0 {
		t.Errorf("__consumer_offsets holds %d records (%d tombstones) after cleaning, %d before", after, tombs, before)
	}
	if st := tb.store.CleanerStats(); st.RecordsRemoved == 0 {
		t.Errorf("cleaner stats: %+v", st)
	}
	tb.stop(t)

	tb = startBroker(t, dir, compactedOffsets)
	adm = tb.admin(t)
	for _, g := range groups[:4] {
		if got := fetchGroup(t, adm, g, "t"); !maps.Equal(got, want[g]) {
			t.Errorf("%s after cleaning and a restart: %v, want %v", g, got, want[g])
		}
	}
	if got := fetchGroup(t, adm, "gone", "t"); len(got) != 0 {
		t.Errorf("deleted group's offsets after cleaning and a restart: %v", got)
	}
	ls, err := adm.ListGroups(ctxTimeout(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := ls["gone"]; ok || len(ls) != 4 {
		t.Errorf("groups after the restart: %v", ls.Groups())
	}
}

// TestOffsetsTopicMigration: a __consumer_offsets created before
// compaction (retention.ms=-1, retention.bytes=-1) is switched to
// cleanup.policy=compact at start, its offsets kept.
func TestOffsetsTopicMigration(t *testing.T) {
	dir := t.TempDir()
	tb := startBroker(t, dir, groupTimeouts)
	tb.createTopic(t, "t", 2)
	adm := tb.admin(t)
	commitGroup(t, adm, "g", "t", 2, 5)
	// Put the interim configs back, as an older broker created them.
	interim := map[string]string{"segment.bytes": "104857600", "retention.ms": "-1", "retention.bytes": "-1", "min.insync.replicas": "1"}
	tb.Broker.admin.Lock()
	if code, msg := tb.cfgs.SetTopicConfigsLocked(offsetsTopic, maps.Clone(interim), false); code != 0 {
		t.Fatalf("set interim configs: %d %s", code, msg)
	}
	tb.Broker.admin.Unlock()
	tb.stop(t)

	tb = startBroker(t, dir, groupTimeouts)
	got, _ := tb.cfgs.TopicConfigs(offsetsTopic)
	want := map[string]string{"cleanup.policy": "compact", "compression.type": "producer", "segment.bytes": "104857600", "min.insync.replicas": "1"}
	if !maps.Equal(got, want) {
		t.Errorf("configs after the migration: %v, want %v", got, want)
	}
	if tb.partition(offsetsTopic, 0).Log.Options().Compaction.Policy.String() != "compact" || !tb.partition(offsetsTopic, 0).Compacted.Load() {
		t.Errorf("the log is not compacted after the migration")
	}
	if got := fetchGroup(t, tb.admin(t), "g", "t"); got[1] != "6/g" {
		t.Errorf("offsets after the migration: %v", got)
	}
	// A topic that already compacts is left alone at the next start.
	tb.stop(t)
	tb = startBroker(t, dir, groupTimeouts)
	if got, _ := tb.cfgs.TopicConfigs(offsetsTopic); !maps.Equal(got, want) {
		t.Errorf("configs at the next start: %v", got)
	}
}
