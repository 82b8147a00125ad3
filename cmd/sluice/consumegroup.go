package main

// sluice consume --group: the console consumer as a member of a consumer
// group. kgo runs the membership (join, sync, heartbeats, rebalances); this
// file sets it up so that exactly the printed records are committed.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// balancers are the partition assignors --balancer names, by the names
// Kafka's clients give them.
var balancers = map[string]func() kgo.GroupBalancer{
	"range":              kgo.RangeBalancer,
	"roundrobin":         kgo.RoundRobinBalancer,
	"sticky":             kgo.StickyBalancer,
	"cooperative-sticky": kgo.CooperativeStickyBalancer,
}

// groupFlags are consume's flags for consuming as a group member.
type groupFlags struct {
	group          string
	balancer       string
	instanceID     string
	commitInterval time.Duration
	sessionTimeout time.Duration
	heartbeat      time.Duration
}

// groupOnly are the flags that need --group.
var groupOnly = []string{"balancer", "instance-id", "commit-interval", "session-timeout", "heartbeat-interval"}

func addGroupFlags(fs *flag.FlagSet) *groupFlags {
	g := &groupFlags{}
	fs.StringVar(&g.group, "group", "", "consume as a member of this consumer `group`, committing the offsets of the records printed")
	fs.StringVar(&g.balancer, "balancer", "cooperative-sticky", "with --group: the partition assignor, range, roundrobin, sticky or cooperative-sticky")
	fs.StringVar(&g.instanceID, "instance-id", "", "with --group: a static member's `id` (group.instance.id): restarted within the session timeout, it keeps its partitions without a rebalance")
	// Kafka's client defaults: auto.commit.interval.ms, session.timeout.ms,
	// heartbeat.interval.ms.
	fs.DurationVar(&g.commitInterval, "commit-interval", 5*time.Second, "with --group: how often to commit the offsets of the records printed")
	fs.DurationVar(&g.sessionTimeout, "session-timeout", 45*time.Second, "with --group: how long the group waits for a heartbeat before it removes the member")
	fs.DurationVar(&g.heartbeat, "heartbeat-interval", 3*time.Second, "with --group: the time between heartbeats, and so how soon the member notices a rebalance")
	return g
}

// check reports a misuse of the group flags.
func (g *groupFlags) check(fs *flag.FlagSet) error {
	if g.group == "" {
		if isSet(fs, "group") {
			return errors.New("--group: the group id must not be empty")
		}
		for _, name := range groupOnly {
			if isSet(fs, name) {
				return fmt.Errorf("--%s needs --group", name)
			}
		}
		return nil
	}
	if _, ok := balancers[g.balancer]; !ok {
		return fmt.Errorf("--balancer %q: want range, roundrobin, sticky or cooperative-sticky", g.balancer)
	}
	if g.commitInterval <= 0 || g.sessionTimeout <= 0 || g.heartbeat <= 0 {
		return errors.New("--commit-interval, --session-timeout and --heartbeat-interval must be positive")
	}
	return nil
}

// consume runs cons as a member of the group on topic and returns the exit
// code. A partition without a committed offset starts at its beginning or
// end. stop ends the capture of SIGINT and SIGTERM, so that a second signal
// during the final commit and leave ends the process at once.
func (g *groupFlags) consume(ctx context.Context, stop context.CancelFunc, cf *clientFlags, topic string, beginning bool, cons *consumer) int {
	c := cons.cmd
	if err := checkTopic(ctx, cf, topic); err != nil {
		return c.fail(err)
	}
	reset := kgo.NewOffset().AtEnd()
	if beginning {
		reset = kgo.NewOffset().AtStart()
	}
	opts := []kgo.Opt{
		kgo.ConsumerGroup(g.group),
		kgo.ConsumeTopics(topic),
		kgo.Balancers(balancers[g.balancer]()),
		kgo.ConsumeResetOffset(reset),
		// Only marked records are committed, and a record is marked once
		// printed. Polls block rebalances until the records they
		// returned are marked (consumer.run), so a partition moves to
		// another member only after its printed records are committed:
		// within the group, no record is printed twice or skipped.
		kgo.AutoCommitMarks(),
		kgo.AutoCommitInterval(g.commitInterval),
		kgo.BlockRebalanceOnPoll(),
		kgo.SessionTimeout(g.sessionTimeout),
		kgo.HeartbeatInterval(g.heartbeat),
		kgo.WithHooks(newDialWarner(c.name, c.stderr)),
		cons.isolation,
	}
	if g.instanceID != "" {
		opts = append(opts, kgo.InstanceID(g.instanceID))
	}
	cl, err := cf.client(ctx, opts...)
	if err != nil {
		return c.fail(err)
	}
	cons.cl, cons.group = cl, g.group
	code := cons.run(ctx)
	stop()

	commitCtx, cancel := context.WithTimeout(context.Background(), adminTimeout)
	defer cancel()
	if err := cl.CommitMarkedOffsets(commitCtx); err != nil && code == 0 {
		code = c.fail(fmt.Errorf("group %s: committing offsets: %w", g.group, err))
	}
	// Leaves the group (a static member stays until its session times
	// out, as Kafka's clients do) and waits for the leave.
	cl.CloseAllowingRebalance()
	return code
}

// checkTopic returns an error unless the brokers know topic: a group
// member of a topic that does not exist would wait for it silently.
func checkTopic(ctx context.Context, cf *clientFlags, topic string) error {
	ctx, cancel := context.WithTimeout(ctx, adminTimeout)
	defer cancel()
	adm, err := admin(ctx, cf)
	if err != nil {
		return err
	}
	defer adm.Close()
	topics, err := adm.ListTopics(ctx, topic)
	if err == nil {
		err = topics.Error()
	}
	if err != nil {
		return fmt.Errorf("topic %s: %w", topic, err)
	}
	return nil
}
