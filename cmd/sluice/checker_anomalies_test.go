package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The checker finds each anomaly it names, and only it, in histories
// broken on purpose from a valid one, and finds none in the valid one.
func TestCheckerFindsEachAnomaly(t *testing.T) {
	// The valid history: producer p wrote sequences 0 to 5 to partitions 0
	// and 1 in turn, all acknowledged at their offsets, read by the group
	// (sequence 2 twice: a redelivery) and at the end; sequence 6 failed
	// retriably and 7 was never answered, neither is in the log.
	type rec struct {
		seq       int64
		partition int32
		offset    int64
	}
	valid := []rec{{0, 0, 0}, {1, 1, 0}, {2, 0, 1}, {3, 1, 1}, {4, 0, 2}, {5, 1, 2}}
	build := func(mutate func(h *history, final []read) []read) report {
		h := newHistory()
		var final []read
		for _, r := range valid {
			v := workValue("p", r.seq)
			h.send(v)
			h.result(&kgo.Record{Value: []byte(v), Partition: r.partition, Offset: r.offset}, nil)
			h.groupRead(&kgo.Record{Value: []byte(v), Partition: r.partition, Offset: r.offset})
			final = append(final, read{position{r.partition, r.offset}, v})
		}
		h.groupRead(&kgo.Record{Value: []byte(workValue("p", 2)), Partition: 0, Offset: 1})
		h.send(workValue("p", 6))
		h.result(&kgo.Record{Value: []byte(workValue("p", 6)), Partition: 0}, kerr.NotLeaderForPartition)
		h.send(workValue("p", 7))
		if mutate != nil {
			final = mutate(h, final)
		}
		slices.SortStableFunc(final, func(a, b read) int { return int(a.partition - b.partition) })
		return analyze(h, final)
	}
	rep := build(nil)
	if a := rep.anomalies(); len(a) > 0 {
		t.Fatalf("the valid history: %v", a)
	}
	if rep.acked != 6 || rep.failed != 1 || rep.indeterminate != 1 || rep.read != 6 || rep.groupReads != 7 {
		t.Fatalf("the valid history's report: %s", rep)
	}

	// A record that failed retriably, or was never answered, may be in
	// the log: no anomaly.
	rep = build(func(h *history, final []read) []read {
		return append(final, read{position{0, 3}, workValue("p", 6)}, read{position{1, 3}, workValue("p", 7)})
	})
	if a := rep.anomalies(); len(a) > 0 || rep.failedRead != 2 {
		t.Fatalf("the valid history with its unacknowledged records in the log: %v; %s", a, rep)
	}

	drop := func(final []read, v string) []read {
		return slices.DeleteFunc(final, func(r read) bool { return r.value == v })
	}
	for _, tc := range []struct {
		name   string
		want   string // the one anomaly expected, as anomalies words it
		mutate func(h *history, final []read) []read
	}{
		{"an acknowledged record missing at the end", "acknowledged records lost", func(h *history, final []read) []read {
			return drop(final, workValue("p", 5))
		}},
		{"a record written twice", "values at more than one offset", func(h *history, final []read) []read {
			return append(final, read{position{0, 3}, workValue("p", 6)}, read{position{0, 4}, workValue("p", 6)})
		}},
		{"an offset the group read another value at", "offsets with more than one value", func(h *history, final []read) []read {
			h.mu.group = append(h.mu.group, read{position{1, 3}, workValue("p", 6)})
			return append(final, read{position{1, 3}, workValue("p", 7)})
		}},
		{"an acknowledgement of an offset past the log end", "acknowledgements naming another position", func(h *history, final []read) []read {
			h.mu.acked[workValue("p", 4)] = position{0, 9}
			return final
		}},
		{"two records of one partition swapped", "order violations", func(h *history, final []read) []read {
			for i := range final {
				switch final[i].value {
				case workValue("p", 0):
					final[i].value = workValue("p", 2)
				case workValue("p", 2):
					final[i].value = workValue("p", 0)
				}
			}
			for i := range h.mu.group {
				if h.mu.group[i].value == workValue("p", 0) || h.mu.group[i].value == workValue("p", 2) {
					h.mu.group[i].offset = 1 - h.mu.group[i].offset
				}
			}
			h.mu.acked[workValue("p", 0)], h.mu.acked[workValue("p", 2)] = position{0, 1}, position{0, 0}
			return final
		}},
		{"a record the group never delivered", "the consumer group never delivered", func(h *history, final []read) []read {
			h.mu.group = slices.DeleteFunc(h.mu.group, func(r read) bool { return r.value == workValue("p", 3) })
			return final
		}},
		{"a record nobody sent", "never sent", func(h *history, final []read) []read {
			return append(final, read{position{1, 3}, "stranger"})
		}},
		{"a non-retriable error", "non-retriable producer errors", func(h *history, final []read) []read {
			h.send(workValue("p", 8))
			h.result(&kgo.Record{Value: []byte(workValue("p", 8))}, kerr.InvalidRecord)
			return final
		}},
		{"the producer's data-loss detection", "non-retriable producer errors", func(h *history, final []read) []read {
			h.dataLoss("t", 1)
			return final
		}},
	} {
		got := build(tc.mutate).anomalies()
		if len(got) != 1 || !strings.Contains(got[0], tc.want) {
			t.Errorf("%s: anomalies %v, want only %q", tc.name, got, tc.want)
		}
	}
}

// Errors a client retries are told from those it cannot.
func TestCheckerRetriable(t *testing.T) {
	for err, want := range map[error]bool{
		kerr.NotLeaderForPartition:        true,
		kerr.NotEnoughReplicas:            true,
		kerr.RequestTimedOut:              true,
		kgo.ErrRecordRetries:              true,
		kgo.ErrRecordTimeout:              true,
		kerr.InvalidRecord:                false,
		kerr.OutOfOrderSequenceNumber:     false,
		kerr.UnknownServerError:           false,
		kerr.CorruptMessage:               true, // Kafka calls it retriable; franz-go does not retry it
		kerr.InvalidProducerEpoch:         false,
		kerr.TopicAuthorizationFailed:     false,
		kerr.NotEnoughReplicasAfterAppend: true,
	} {
		if got := retriable(err); got != want {
			t.Errorf("retriable(%v) = %v, want %v", err, got, want)
		}
	}
}
