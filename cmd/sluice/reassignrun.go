package main

// Carrying out a reassignment from the client side, shared by sluice
// cluster rebalance, sluice cluster decommission and sluice topic
// reassign: reading the assignment, the throttle configs, submitting
// (AlterPartitionReassignments), following the progress
// (ListPartitionReassignments) and the preferred leader election after.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-io/sluice/cmd/sluice/reassign"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// The throttle configs, Kafka's names: the rates are dynamic broker
// configs, the replica lists ("partition:broker,...") topic configs.
const (
	leaderThrottleRate        = "leader.replication.throttled.rate"
	followerThrottleRate      = "follower.replication.throttled.rate"
	leaderThrottledReplicas   = "leader.replication.throttled.replicas"
	followerThrottledReplicas = "follower.replication.throttled.replicas"
)

// clusterAssignment reads, with Metadata, the replicas of every partition
// of topics (of every topic, internal ones too, if none is named) and the
// live brokers with their racks. A named topic that does not exist is an
// error.
func clusterAssignment(ctx context.Context, adm *kadm.Client, topics ...string) (kadm.Metadata, []reassign.Assignment, []reassign.Broker, error) {
	md, err := adm.Metadata(ctx, topics...)
	if err != nil {
		return md, nil, nil, fmt.Errorf("metadata: %w", err)
	}
	var parts []reassign.Assignment
	for _, t := range md.Topics.Sorted() {
		if t.Err != nil {
			return md, nil, nil, fmt.Errorf("topic %s: %w", t.Topic, t.Err)
		}
		for _, p := range t.Partitions.Sorted() {
			parts = append(parts, reassign.Assignment{Topic: t.Topic, Partition: p.Partition, Replicas: slices.Clone(p.Replicas)})
		}
	}
	var brokers []reassign.Broker
	for _, b := range md.Brokers {
		pb := reassign.Broker{ID: b.NodeID}
		if b.Rack != nil {
			pb.Rack = *b.Rack
		}
		brokers = append(brokers, pb)
	}
	slices.SortFunc(brokers, func(a, b reassign.Broker) int { return int(a.ID - b.ID) })
	return md, parts, brokers, nil
}

// movesSet is the set of the moves' partitions.
func movesSet(moves []reassign.Move) kadm.TopicsSet {
	s := kadm.TopicsSet{}
	for _, m := range moves {
		s.Add(m.Topic, m.Partition)
	}
	return s
}

// assignmentsSet is the set of the partitions of parts.
func assignmentsSet(parts []reassign.Assignment) kadm.TopicsSet {
	s := kadm.TopicsSet{}
	for _, p := range parts {
		s.Add(p.Topic, p.Partition)
	}
	return s
}

// ongoing lists the partitions of s with a reassignment in progress,
// sorted, as "topic-partition".
func ongoing(ctx context.Context, adm *kadm.Client, s kadm.TopicsSet) ([]string, error) {
	rs, err := adm.ListPartitionReassignments(ctx, s)
	if err != nil {
		return nil, fmt.Errorf("ListPartitionReassignments: %w", err)
	}
	var out []string
	for _, r := range rs.Sorted() {
		if len(r.AddingReplicas)+len(r.RemovingReplicas) > 0 {
			out = append(out, reassign.PartitionName(r.Topic, r.Partition))
		}
	}
	return out, nil
}

// throttledReplicas is a topic's throttled-replicas value, Kafka's
// "partition:broker" pairs, sorted as kafka-reassign-partitions.sh sorts
// them (as strings).
func throttledReplicas(pairs map[string]bool) string {
	return strings.Join(slices.Sorted(maps.Keys(pairs)), ",")
}

// throttleTargets computes, as kafka-reassign-partitions.sh does, what a
// throttle of the moves covers: the brokers of the moves' current and
// target replicas, and per topic the leader-side throttled replicas (the
// current replicas, which the new ones copy from) and the follower-side
// ones (the replicas being added).
func throttleTargets(moves []reassign.Move) (brokers []int32, leader, follower map[string]string) {
	lead, follow := map[string]map[string]bool{}, map[string]map[string]bool{}
	for _, m := range moves {
		if lead[m.Topic] == nil {
			lead[m.Topic], follow[m.Topic] = map[string]bool{}, map[string]bool{}
		}
		for _, b := range m.From {
			lead[m.Topic][fmt.Sprintf("%d:%d", m.Partition, b)] = true
		}
		for _, b := range m.Adding() {
			follow[m.Topic][fmt.Sprintf("%d:%d", m.Partition, b)] = true
		}
		for _, b := range append(slices.Clone(m.From), m.To...) {
			if !slices.Contains(brokers, b) {
				brokers = append(brokers, b)
			}
		}
	}
	slices.Sort(brokers)
	leader, follower = map[string]string{}, map[string]string{}
	for t := range lead {
		leader[t], follower[t] = throttledReplicas(lead[t]), throttledReplicas(follow[t])
	}
	return brokers, leader, follower
}

// setThrottles sets the throttle of the moves at rate bytes/s: both rates
// on every broker involved, the throttled replicas on every topic.
func setThrottles(ctx context.Context, adm *kadm.Client, moves []reassign.Move, rate int64) error {
	brokers, leader, follower := throttleTargets(moves)
	v := strconv.FormatInt(rate, 10)
	rs, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: leaderThrottleRate, Value: &v},
		{Op: kadm.SetConfig, Name: followerThrottleRate, Value: &v},
	}, brokers...)
	if err = alterErr("broker", rs, err); err != nil {
		return err
	}
	for _, t := range slices.Sorted(maps.Keys(leader)) {
		alter := []kadm.AlterConfig{{Op: kadm.SetConfig, Name: leaderThrottledReplicas, Value: kadm.StringPtr(leader[t])}}
		if follower[t] != "" {
			alter = append(alter, kadm.AlterConfig{Op: kadm.SetConfig, Name: followerThrottledReplicas, Value: kadm.StringPtr(follower[t])})
		}
		rs, err := adm.AlterTopicConfigs(ctx, alter, t)
		if err = alterErr("topic", rs, err); err != nil {
			return err
		}
	}
	return nil
}

// clearThrottles removes the throttle configs from brokers and topics,
// as kafka-reassign-partitions.sh does once a reassignment is done.
func clearThrottles(ctx context.Context, adm *kadm.Client, brokers []int32, topics []string) error {
	rs, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{
		{Op: kadm.DeleteConfig, Name: leaderThrottleRate},
		{Op: kadm.DeleteConfig, Name: followerThrottleRate},
	}, brokers...)
	if err = alterErr("broker", rs, err); err != nil {
		return err
	}
	if len(topics) == 0 {
		return nil
	}
	rs, err = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
		{Op: kadm.DeleteConfig, Name: leaderThrottledReplicas},
		{Op: kadm.DeleteConfig, Name: followerThrottledReplicas},
	}, topics...)
	return alterErr("topic", rs, err)
}

// alterErr is the request's error, or the first resource's.
func alterErr(kind string, rs kadm.AlterConfigsResponses, err error) error {
	if err != nil {
		return fmt.Errorf("IncrementalAlterConfigs: %w", err)
	}
	for _, r := range rs {
		if r.Err != nil {
			return fmt.Errorf("%s %s: %w", kind, r.Name, kafkaError(r.Err, r.ErrMessage))
		}
	}
	return nil
}

// reassignFailure is one partition the controller refused.
type reassignFailure struct {
	partition string // topic-partition
	err       error
}

// submit asks the controller for the moves (AlterPartitionReassignments)
// and returns the partitions it refused, sorted; cancel submits a
// cancellation of each instead.
func submit(ctx context.Context, adm *kadm.Client, parts []reassign.Assignment, cancel bool) ([]reassignFailure, error) {
	var req kadm.AlterPartitionAssignmentsReq
	for _, p := range parts {
		if cancel {
			req.CancelAssign(p.Topic, p.Partition)
		} else {
			req.Assign(p.Topic, p.Partition, p.Replicas)
		}
	}
	rs, err := adm.AlterPartitionAssignments(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("AlterPartitionReassignments: %w", err)
	}
	var failed []reassignFailure
	for _, r := range rs.Sorted() {
		if r.Err != nil {
			failed = append(failed, reassignFailure{reassign.PartitionName(r.Topic, r.Partition), kafkaError(r.Err, r.ErrMessage)})
		}
	}
	return failed, nil
}

// printFailures writes each failure as "topic-partition: ERROR".
func printFailures(w io.Writer, failed []reassignFailure) {
	for _, f := range failed {
		fmt.Fprintf(w, "%s: %s\n", f.partition, errorText(f.err))
	}
}

// waitMoves polls ListPartitionReassignments every interval until no
// partition of moves is reassigning, writing a progress line to out
// whenever the count left changes, then waits until Metadata shows every
// partition on its target replicas.
func waitMoves(ctx context.Context, adm *kadm.Client, moves []reassign.Move, interval time.Duration, out io.Writer) error {
	set := movesSet(moves)
	last := -1
	for {
		rctx, cancel := context.WithTimeout(ctx, adminTimeout)
		left, err := ongoing(rctx, adm, set)
		cancel()
		if err != nil {
			return err
		}
		if len(left) != last {
			last = len(left)
			fmt.Fprintf(out, "%s  %d of %d partitions reassigning%s\n", time.Now().Format(time.TimeOnly), last, len(moves), sample(left))
		}
		if last == 0 {
			break
		}
		if err := pause(ctx, interval); err != nil {
			return err
		}
	}
	for {
		rctx, cancel := context.WithTimeout(ctx, adminTimeout)
		_, parts, _, err := clusterAssignment(rctx, adm, slices.Sorted(maps.Keys(set))...)
		cancel()
		if err != nil {
			return err
		}
		if off := offTarget(parts, moves); len(off) == 0 {
			return nil
		}
		if err := pause(ctx, interval); err != nil {
			return err
		}
	}
}

// offTarget lists the moves whose partition in parts is not on its
// target replicas (in order).
func offTarget(parts []reassign.Assignment, moves []reassign.Move) []string {
	now := map[string][]int32{}
	for _, p := range parts {
		now[reassign.PartitionName(p.Topic, p.Partition)] = p.Replicas
	}
	var out []string
	for _, m := range moves {
		if name := reassign.PartitionName(m.Topic, m.Partition); !slices.Equal(now[name], m.To) {
			out = append(out, name)
		}
	}
	return out
}

// sample is ": " and the first few names, or nothing for none.
func sample(names []string) string {
	const show = 4
	switch {
	case len(names) == 0:
		return ""
	case len(names) <= show:
		return ": " + strings.Join(names, ", ")
	}
	return fmt.Sprintf(": %s, … (%d more)", strings.Join(names[:show], ", "), len(names)-show)
}

// pause waits d or until ctx ends.
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// electPreferred runs a preferred leader election of set's partitions,
// retrying for up to electRetry those whose preferred leader is not yet
// available (just caught up, its ISR change on the way), and returns how
// many changed leader, how many were already led by their preferred
// replica, and the ones that failed.
func electPreferred(ctx context.Context, adm *kadm.Client, set kadm.TopicsSet, interval time.Duration) (elected, already int, failed []reassignFailure, err error) {
	deadline := time.Now().Add(electRetry)
	for {
		rctx, cancel := context.WithTimeout(ctx, adminTimeout)
		res, err := adm.ElectLeaders(rctx, kadm.ElectPreferredReplica, set)
		cancel()
		if err != nil {
			return elected, already, failed, fmt.Errorf("ElectLeaders: %w", err)
		}
		retry := kadm.TopicsSet{}
		var waiting []reassignFailure
		for _, t := range slices.Sorted(maps.Keys(res)) {
			for _, p := range slices.Sorted(maps.Keys(res[t])) {
				r := res[t][p]
				f := reassignFailure{reassign.PartitionName(t, p), kafkaError(r.Err, r.ErrMessage)}
				switch {
				case r.Err == nil:
					elected++
				case errors.Is(r.Err, kerr.ElectionNotNeeded):
					already++
				case errors.Is(r.Err, kerr.PreferredLeaderNotAvailable):
					waiting = append(waiting, f)
					retry.Add(t, p)
				default:
					failed = append(failed, f)
				}
			}
		}
		if len(waiting) == 0 || time.Now().After(deadline) {
			return elected, already, append(failed, waiting...), nil
		}
		set = retry
		if err := pause(ctx, interval); err != nil {
			return elected, already, append(failed, waiting...), err
		}
	}
}

// electRetry bounds the retries of a preferred election whose leaders are
// not yet available.
const electRetry = 10 * time.Second
