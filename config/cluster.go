package config

import (
	"fmt"
	"strconv"
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

// Apply sets the field a cluster key names; ok is false for other keys.
func (c *ClusterConfig) Apply(k, v string) (ok bool, err error) {
	ms := func() (time.Duration, error) {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil || n <= 0 {
			return 0, fmt.Errorf("broker: config %s=%q: not a positive number", k, v)
		}
		return time.Duration(n) * time.Millisecond, nil
	}
	switch k {
	case "zookeeper.connect":
		c.ZooKeeper = v
	case "zookeeper.session.timeout.ms":
		c.SessionTimeout, err = ms()
	case "zookeeper.connection.timeout.ms":
		c.ConnectionTimeout, err = ms()
	case "broker.rack":
		c.Rack = v
	case "replica.lag.time.max.ms":
		c.ReplicaLagTimeMax, err = ms()
	case "controlled.shutdown.enable":
		var on bool
		on, err = strconv.ParseBool(v)
		if err != nil {
			err = fmt.Errorf("broker: config %s=%q: not true or false", k, v)
		}
		c.ControlledShutdown = &on
	case "controlled.shutdown.max.retries":
		var n int64
		if n, err = strconv.ParseInt(v, 10, 32); err != nil || n < 0 {
			err = fmt.Errorf("broker: config %s=%q: not a number of at least 0", k, v)
		}
		c.ShutdownRetries = int(n)
		if n == 0 {
			c.ShutdownRetries = -1 // no retry; the zero value means the default
		}
	case "controlled.shutdown.retry.backoff.ms":
		c.ShutdownRetryBackoff, err = ms()
	case "replication.quota.window.num", "replication.quota.window.size.seconds":
		n, perr := strconv.ParseInt(v, 10, 32)
		if perr != nil || n < 1 {
			return true, fmt.Errorf("broker: config %s=%q: not a number of at least 1", k, v)
		}
		if k == "replication.quota.window.num" {
			c.QuotaWindowNum = int(n)
		} else {
			c.QuotaWindowSize = time.Duration(n) * time.Second
		}
	default:
		if ok, err := c.Election.Apply(k, v); ok {
			return ok, err
		}
		return c.Fetch.Apply(k, v)
	}
	return true, err
}

// Validate checks what Kafka checks across the cluster keys.
func (c ClusterConfig) Validate() error {
	if w, lag := c.Fetch.WithDefaults().WaitMax, c.LagTimeMax(); w > lag {
		return fmt.Errorf("broker: config replica.fetch.wait.max.ms (%d) must be at most replica.lag.time.max.ms (%d)", w.Milliseconds(), lag.Milliseconds())
	}
	return nil
}

// static adds the cluster keys the configuration sets to m, by Kafka name
// (layers.go's StaticBrokerConfigs): ZooKeeper, the rack, the ISR lag,
// the controlled shutdown and the followers' fetching.
func (c ClusterConfig) static(m map[string]string) {
	if c.ZooKeeper != "" {
		m["zookeeper.connect"] = c.ZooKeeper
	}
	if c.Rack != "" {
		m["broker.rack"] = c.Rack
	}
	PutNonZero(m, "zookeeper.session.timeout.ms", c.SessionTimeout.Milliseconds())
	PutNonZero(m, "zookeeper.connection.timeout.ms", c.ConnectionTimeout.Milliseconds())
	PutNonZero(m, "replica.lag.time.max.ms", c.ReplicaLagTimeMax.Milliseconds())
	if c.ControlledShutdown != nil {
		m["controlled.shutdown.enable"] = strconv.FormatBool(*c.ControlledShutdown)
	}
	if c.ShutdownRetries != 0 {
		m["controlled.shutdown.max.retries"] = strconv.Itoa(max(c.ShutdownRetries, 0)) // -1 is 0 retries
	}
	PutNonZero(m, "controlled.shutdown.retry.backoff.ms", c.ShutdownRetryBackoff.Milliseconds())
	f := c.Fetch
	PutNonZero(m, "replica.fetch.max.bytes", int64(f.MaxBytes))
	PutNonZero(m, "replica.fetch.response.max.bytes", int64(f.ResponseMaxBytes))
	PutNonZero(m, "replica.fetch.min.bytes", int64(f.MinBytes))
	PutNonZero(m, "replica.fetch.wait.max.ms", f.WaitMax.Milliseconds())
	if f.Backoff != 0 {
		m["replica.fetch.backoff.ms"] = strconv.FormatInt(f.Backoff.Milliseconds(), 10) // 1 ms is what 0 asked for
	}
	PutNonZero(m, "num.replica.fetchers", int64(f.Fetchers))
}
