package main

import (
	"fmt"
	"testing"

	"github.com/sluice-io/sluice/cmd/sluice/reassign"
)

// The throttle of a move covers what kafka-reassign-partitions.sh's
// covers: every broker of the current and target replicas; on the leader
// side the current replicas, on the follower side the added ones, as
// sorted "partition:broker" strings per topic.
func TestThrottleTargets(t *testing.T) {
	brokers, leader, follower := throttleTargets([]reassign.Move{
		{Topic: "a", Partition: 10, From: []int32{1, 2}, To: []int32{3, 2}},
		{Topic: "a", Partition: 2, From: []int32{2, 1}, To: []int32{1, 4}},
		{Topic: "b", Partition: 0, From: []int32{5}, To: []int32{5}},
	})
	if got := fmt.Sprint(brokers, leader, follower); got != "[1 2 3 4 5] map[a:10:1,10:2,2:1,2:2 b:0:5] map[a:10:3,2:4 b:]" {
		t.Fatalf("got %s", got)
	}
}
