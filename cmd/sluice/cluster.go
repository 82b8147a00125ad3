package main

// sluice cluster: the cluster as a whole (issue 17's operator commands).
// brokers: every live broker with its address, rack, whether it is the
// controller, the replicas it hosts, the partitions it leads and the bytes
// its log directories hold. rebalance and decommission: clusterrebalance.go.

import (
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kadm"
)

const clusterUsage = `usage: sluice cluster <command> [flags]

commands:
  brokers            live brokers: address, rack, controller, replicas, leaders, disk used
  rebalance          spread replicas and leaders evenly over the live brokers (--execute)
  decommission ID    move every replica off broker ID

Run "sluice cluster <command> -h" for a command's flags.
`

func runCluster(args []string, stdout, stderr io.Writer) int {
	return runSubcommand("cluster", clusterUsage, map[string]func([]string, io.Writer, io.Writer) int{
		"brokers":      runClusterBrokers,
		"rebalance":    runClusterRebalance,
		"decommission": runClusterDecommission,
	}, args, stdout, stderr)
}

func runClusterBrokers(args []string, stdout, stderr io.Writer) int {
	c := newCommand("sluice cluster brokers", `usage: sluice cluster brokers

Prints every live broker, by id, with the address it advertises, its rack
(- if none), whether it is the controller, how many partition replicas it
hosts, how many of those it leads, and the bytes its log directories hold
(DescribeLogDirs; - if the broker did not answer).
`, stdout, stderr)
	cf := addClientFlags(c.fs)
	pos, code, done := c.parse(args)
	if done {
		return code
	}
	if len(pos) > 0 {
		return c.usageError("unexpected argument %q", pos[0])
	}
	ctx, adm, release, err := openAdmin(cf)
	if err != nil {
		return c.fail(err)
	}
	defer release()
	md, err := adm.Metadata(ctx)
	if err != nil {
		return c.fail(fmt.Errorf("metadata: %w", err))
	}
	replicas, leaders := map[int32]int{}, map[int32]int{}
	for _, t := range md.Topics {
		for _, p := range t.Partitions {
			for _, r := range p.Replicas {
				replicas[r]++
			}
			if p.Leader >= 0 {
				leaders[p.Leader]++
			}
		}
	}
	dirs, _ := adm.DescribeAllLogDirs(ctx, nil) // a broker that fails shows "-"
	t := table(stdout)
	row(t, "ID", "ADDRESS", "RACK", "CONTROLLER", "REPLICAS", "LEADERS", "DISK")
	brokers := slices.Clone(md.Brokers)
	slices.SortFunc(brokers, func(a, b kadm.BrokerDetail) int { return int(a.NodeID - b.NodeID) })
	for _, b := range brokers {
		rack, ctl, disk := "", "-", "-"
		if b.Rack != nil {
			rack = *b.Rack
		}
		if b.NodeID == md.Controller {
			ctl = "yes"
		}
		if d, ok := dirs[b.NodeID]; ok && d.Error() == nil {
			disk = strconv.FormatInt(d.Size(), 10)
		}
		row(t, strconv.Itoa(int(b.NodeID)), fmt.Sprintf("%s:%d", b.Host, b.Port), orDash(rack), ctl,
			strconv.Itoa(replicas[b.NodeID]), strconv.Itoa(leaders[b.NodeID]), disk)
	}
	t.Flush()
	return 0
}
