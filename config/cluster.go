package config

import (
	"fmt"
	"time"
)

// ClusterConfig is what ZooKeeper mode needs: where ZooKeeper is, the
// session's times and this broker's rack. With ZooKeeper empty the broker
// is the embedded single node and touches nothing of ZooKeeper.
type ClusterConfig struct {
	// ZooKeeper is zookeeper.connect, "host:port[,host:port...][/chroot]".
	ZooKeeper string
	// SessionTimeout is zookeeper.session.timeout.ms (default 18 s, Kafka's):
	// a broker silent this long loses its registration and, if it was the
	// controller, the controller role.
	SessionTimeout time.Duration
	// ConnectionTimeout is zookeeper.connection.timeout.ms: how long the
	// broker waits for a session at start (default the session timeout).
	ConnectionTimeout time.Duration
	// Rack is broker.rack: replicas of a partition are spread over racks.
	Rack string
	// ReplicaLagTimeMax is replica.lag.time.max.ms (default 30 s): a
	// follower that has not caught up with its leader for this long leaves
	// the ISR.
	ReplicaLagTimeMax time.Duration
	// Fetch is how this broker's followers fetch (replica.fetch.*,
	// num.replica.fetchers).
	Fetch FetcherConfig
	// Election is how this broker's controller elects leaders
	// (unclean.leader.election.enable, auto.leader.rebalance.enable,
	// leader.imbalance.*: election.go).
	Election ElectionConfig
	// ControlledShutdown is controlled.shutdown.enable (default true: a
	// stopping broker first asks the controller to move its leadership,
	// controlledshutdown.go); ShutdownRetries controlled.shutdown.max.retries
	// (3) and ShutdownRetryBackoff controlled.shutdown.retry.backoff.ms (5 s).
	ControlledShutdown   *bool
	ShutdownRetries      int
	ShutdownRetryBackoff time.Duration
	// QuotaWindowNum is replication.quota.window.num (11) and
	// QuotaWindowSize replication.quota.window.size.seconds (1 s): the
	// replication throttles measure their rates over this many samples of
	// this length (throttle.go).
	QuotaWindowNum  int
	QuotaWindowSize time.Duration
}

// QuotaWindows are the replication quotas' samples and their length, with
// Kafka's defaults.
func (c ClusterConfig) QuotaWindows() (int, time.Duration) {
	n, size := c.QuotaWindowNum, c.QuotaWindowSize
	if n <= 0 {
		n = 11
	}
	if size <= 0 {
		size = time.Second
	}
	return n, size
}

// ShutdownConfig is the controlled shutdown's settings with defaults.
type ShutdownConfig struct {
	Enabled    bool
	MaxRetries int
	Backoff    time.Duration
}

func (c ClusterConfig) Shutdown() ShutdownConfig {
	s := ShutdownConfig{Enabled: true, MaxRetries: 3, Backoff: 5 * time.Second}
	if c.ControlledShutdown != nil {
		s.Enabled = *c.ControlledShutdown
	}
	if c.ShutdownRetries != 0 {
		s.MaxRetries = max(c.ShutdownRetries, 0) // -1: no retry
	}
	if c.ShutdownRetryBackoff > 0 {
		s.Backoff = c.ShutdownRetryBackoff
	}
	return s
}

// LagTimeMax is replica.lag.time.max.ms, with its default.
func (c ClusterConfig) LagTimeMax() time.Duration {
	if c.ReplicaLagTimeMax <= 0 {
		return 30 * time.Second
	}
	return c.ReplicaLagTimeMax
}

// Enabled reports whether the broker runs in ZooKeeper mode.
func (c ClusterConfig) Enabled() bool { return c.ZooKeeper != "" }

// Validate checks what Kafka checks across the cluster keys.
func (c ClusterConfig) Validate() error {
	if w, lag := c.Fetch.WithDefaults().WaitMax, c.LagTimeMax(); w > lag {
		return fmt.Errorf("broker: config replica.fetch.wait.max.ms (%d) must be at most replica.lag.time.max.ms (%d)", w.Milliseconds(), lag.Milliseconds())
	}
	return nil
}
