package broker

// ZooKeeper mode: the broker's part in a cluster, as Kafka's KafkaServer
// starts it in ZooKeeper mode. At New the broker opens its ZooKeeper
// session (zookeeper.connect, with its chroot), creates Kafka's persistent
// paths and reads (or creates) the cluster id; its metadata backend is
// coordinator/zk's (topic and broker configurations, kept current from
// /config/changes; producer id blocks; topic administration). Once it
// listens (Serve), it registers /brokers/ids/<id> with its advertised
// endpoint and rack, and then starts its controller driver
// (zk.ControllerLoop), which competes for /controller and, when elected,
// runs the cluster. Partitions reach the broker only through the
// controller's LeaderAndIsr and UpdateMetadata (replication/host/hosting.go,
// broker/cluster).
//
// Session expiry: ZooKeeper has dropped the registration, and the other
// brokers' controller treats this broker as dead (its partitions offline
// or led elsewhere). The broker stops leading at once (it may not act on
// metadata from before), registers again (a new broker epoch) and waits
// for the controller's fresh requests; control requests carrying the old
// epoch are refused STALE_BROKER_EPOCH from then on. The controller
// driver handles its own expiry (it resigns and campaigns again).
//
// The broker is the ControlPlane of its control requests here: its epoch
// is its registration's, and a request's sender is checked against
// /controller and /controller_epoch (IsActiveController).

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-io/sluice/broker/cluster"
	"github.com/sluice-io/sluice/config"
	"github.com/sluice-io/sluice/coordinator"
	"github.com/sluice-io/sluice/coordinator/zk"
	"github.com/sluice-io/sluice/wire/interbroker"
)

// cluster is a broker's ZooKeeper mode.
type zkCluster struct {
	b       *Broker
	zk      *zk.Client
	backend *zk.Backend
	log     *slog.Logger

	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{} // closed when run returns
	// registered is closed at the first registration.
	registered chan struct{}
	// epoch is the broker epoch of the current registration, -1 before
	// the first.
	epoch   atomic.Int64
	loop    atomic.Pointer[zk.ControllerLoop]
	isrSend interbroker.Sender // AlterPartition and ControlledShutdown to the controller
	// logDirWake asks for a log directory event (logdirevents.go).
	logDirWake chan struct{}
	// shutdownAsked: the controlled shutdown ran (controlledshutdown.go).
	shutdownAsked atomic.Bool
	started       atomic.Bool // start was called: run closes done

	mu struct {
		sync.Mutex
		// The controller last confirmed in ZooKeeper.
		ctlID, ctlEpoch int32
	}
}

// openCluster opens the ZooKeeper session and the metadata backend.
func openCluster(cfg config.Config) (*zkCluster, error) {
	cc := cfg.Cluster
	ctx := context.Background()
	client, err := zk.Connect(ctx, cc.ZooKeeper, zk.Options{
		SessionTimeout: cc.SessionTimeout, ConnectionTimeout: cc.ConnectionTimeout, Logger: cfg.Logger,
	})
	if err != nil {
		return nil, fmt.Errorf("broker: %w", err)
	}
	if err := client.EnsurePersistentPaths(); err != nil {
		client.Close()
		return nil, fmt.Errorf("broker: %w", err)
	}
	backend, err := zk.OpenBackend(client, cfg.ID, cfg.Logger)
	if err != nil {
		client.Close()
		return nil, fmt.Errorf("broker: %w", err)
	}
	c := &zkCluster{zk: client, backend: backend, log: cfg.Logger, done: make(chan struct{}), registered: make(chan struct{})}
	backend.OnNotice(func(ch zk.ConfigChange) {
		if l := c.loop.Load(); l != nil {
			l.ConfigChanged(ch) // the controller re-reads unclean election settings
		}
	})
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.epoch.Store(cluster.UnknownBrokerEpoch)
	c.mu.ctlID = -1
	return c, nil
}

// start registers the broker as self, once it listens, and starts its
// controller driver; it re-registers after every session expiry.
func (c *zkCluster) start(self coordinator.Broker, endpoints []zk.Endpoint) {
	reg := zk.BrokerRegistration{
		ID:        self.ID,
		Endpoints: endpoints,
		Rack:      self.Rack,
		JMXPort:   zk.NoJMXPort,
	}
	c.started.Store(true)
	c.startLogDirEvents()
	go c.run(reg)
}

func (c *zkCluster) run(reg zk.BrokerRegistration) {
	defer close(c.done)
	first := true
	for c.ctx.Err() == nil {
		expired := c.zk.Expired()
		reg.Timestamp = time.Now().UnixMilli()
		epoch, err := c.zk.Register(c.ctx, reg)
		if err != nil {
			if c.ctx.Err() != nil {
				return
			}
			c.log.Warn("registering in ZooKeeper failed; retrying", "err", err)
			select {
			case <-time.After(time.Second):
			case <-c.ctx.Done():
				return
			}
			continue
		}
		c.epoch.Store(epoch)
		c.log.Info("registered in ZooKeeper", "broker", reg.ID, "epoch", epoch)
		if first {
			first = false
			close(c.registered)
			sender := c.b.openInterBroker(c.zk, interbroker.Options{})
			c.loop.Store(zk.StartControllerLoop(c.ctx, c.zk, reg.ID, sender, c.b.electionLoopOptions(zk.LoopOptions{Logger: c.log})))
		}
		select {
		case <-expired:
			c.log.Warn("ZooKeeper session expired: no longer leading any partition; registering again", "broker", reg.ID, "old_epoch", epoch)
			c.b.stopLeading()
		case <-c.ctx.Done():
			return
		case <-c.zk.Closed():
			return
		}
	}
}

// close stops the controller driver (a controller gives up /controller)
// and ends the session, which removes the registration at once.
func (c *zkCluster) close() {
	c.cancel()
	if l := c.loop.Load(); l != nil {
		l.Close()
	}
	c.zk.Close()
	if c.started.Load() {
		<-c.done
	}
	if c.isrSend != nil {
		c.isrSend.Close()
	}
	c.backend.Close()
}

// BrokerEpoch implements ControlPlane.
func (c *zkCluster) BrokerEpoch() int64 { return c.epoch.Load() }

// IsActiveController implements ControlPlane: the sender must be the
// controller ZooKeeper names, at the epoch ZooKeeper has. A controller
// writes its epoch before it sends anything, so ZooKeeper read after the
// request arrived has it: an epoch above the one read means the server
// this session reads from lags the ensemble, and it is read again after a
// sync. Only when ZooKeeper cannot be read is a request accepted
// unconfirmed, if its epoch is above the last confirmed, as the
// ControlPlane contract asks.
func (c *zkCluster) IsActiveController(id, epoch int32) bool {
	c.mu.Lock()
	known := c.mu.ctlID == id && c.mu.ctlEpoch == epoch
	last := c.mu.ctlEpoch
	c.mu.Unlock()
	if known {
		return true
	}
	zid, zepoch, ok, err := c.zk.ActiveController()
	if err == nil && epoch > zepoch {
		// Newer than the server this session reads from: sync it with the
		// ensemble's leader and read again.
		zid, zepoch, ok, err = c.zk.SyncedActiveController()
	}
	switch {
	case err != nil:
		c.log.Warn("checking the controller of a control request", "err", err)
		return epoch > last
	case ok && zid == id && zepoch == epoch:
		c.mu.Lock()
		if epoch >= c.mu.ctlEpoch {
			c.mu.ctlID, c.mu.ctlEpoch = id, epoch
		}
		c.mu.Unlock()
		return true
	}
	return false
}

// stopLeading makes every hosted partition a non-leader, and unloads the
// groups, until the controller's next LeaderAndIsr: after a session expiry
// this broker may have been replaced as leader already.
func (b *Broker) stopLeading() {
	b.ctl.Locked(b.stopLeadingLocked)
}

// stopLeadingLocked is stopLeading under the control lock.
func (b *Broker) stopLeadingLocked() {
	tab := b.ctl.Roles.Edit()
	for tp, r := range tab.Roles {
		if r.IsLeader {
			r.IsLeader = false
			tab.Roles[tp] = r
			if err := b.replicas.Unhost(tp, r.LeaderEpoch, false); err != nil {
				b.log.Warn("stopping a partition", "topic", tp.Topic, "partition", tp.Partition, "err", err)
			}
		}
	}
	b.ctl.Roles.Publish(tab)
}

// electionLoopOptions are o with the controller driver's election options: the
// rebalance's settings, and each topic's effective unclean election
// setting from the broker's layers (the static default, then the dynamic
// ones, then the topic's override, as DescribeConfigs reports it); and, with
// metrics, the elections counted (metrics.go).
func (b *Broker) electionLoopOptions(o zk.LoopOptions) zk.LoopOptions {
	c := b.cfg.Cluster.Election
	o.AutoLeaderRebalance = c.AutoLeaderRebalance
	o.ImbalanceCheckInterval = c.ImbalanceCheckInterval
	o.ImbalancePercentage = c.ImbalancePercentage
	o.Unclean = func(topicConfigs map[string]string) bool {
		return b.cfgs.layers().UncleanLeaderElection(topicConfigs)
	}
	if m := b.metrics; m != nil {
		o.Elected = func(e zk.LeaderElection) { m.Elected(e.Took, e.Unclean) }
	}
	return o
}
