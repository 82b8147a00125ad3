package broker

import (
	"context"
	"testing"
	"time"

	"github.com/sluice-io/sluice/config"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A group consumes, commits half of a partition's records and leaves: the
// scrape shows it Empty with no members, one rebalance at least, its
// committed offset, and a lag of the other half.
func TestMetricsGroupsAndLag(t *testing.T) {
	tb := startBroker(t, t.TempDir(), func(cfg *config.Config) { cfg.Observability.MetricsListen = "127.0.0.1:0" })
	maddr := tb.MetricsAddr().String()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(tb.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	const n = 200
	produceLagged(t, ctx, cl, n)
	cons, err := kgo.NewClient(kgo.SeedBrokers(tb.addr), kgo.ConsumerGroup("half"), kgo.ConsumeTopics("lagged"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	if err != nil {
		t.Fatal(err)
	}
	got := 0
	for got < n/2 {
		fs := cons.PollRecords(ctx, n/2-got)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d", got, n/2)
		}
		got += fs.NumRecords()
	}
	var commitErr error
	cons.CommitOffsetsSync(ctx, map[string]map[int32]kgo.EpochOffset{"lagged": {0: {Epoch: -1, Offset: n / 2}}},
		func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
			if err == nil {
				err = kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode)
			}
			commitErr = err
		})
	if commitErr != nil {
		t.Fatal(commitErr)
	}
	cons.Close() // leaves the group: Empty

	mfs := scrape(t, maddr)
	for _, w := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"kafka_coordinator_group_groupmetadatamanager_numgroups", nil, 1},
		{"kafka_coordinator_group_groupmetadatamanager_numgroupsempty", nil, 1},
		{"kafka_coordinator_group_groupmetadatamanager_numgroupsstable", nil, 0},
		{"sluice_group_members", []string{"group=half"}, 0},
		{"kafka_consumergroup_current_offset", []string{"consumergroup=half", "partition=0", "topic=lagged"}, n / 2},
		{"kafka_consumergroup_lag", []string{"consumergroup=half", "partition=0", "topic=lagged"}, n / 2},
		{"kafka_consumergroup_lag_sum", []string{"consumergroup=half", "topic=lagged"}, n / 2},
	} {
		if v, ok := metricValue(mfs, w.name, w.labels...); !ok || v != w.want {
			t.Errorf("%s%v = %v (present %v), want %v", w.name, w.labels, v, ok, w.want)
		}
	}
	if v, ok := metricValue(mfs, "sluice_group_rebalances_total"); !ok || v < 1 {
		t.Errorf("sluice_group_rebalances_total = %v (present %v), want at least 1", v, ok)
	}
}
