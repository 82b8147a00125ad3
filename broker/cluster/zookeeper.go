package cluster

// ZooKeeper mode: a broker's membership of a cluster, as Kafka's
// KafkaServer starts it in ZooKeeper mode. OpenZK opens the broker's
// ZooKeeper session (zookeeper.connect, with its chroot), creates Kafka's
// persistent paths and reads (or creates) the cluster id; the metadata
// backend is coordinator/zk's (topic and broker configurations, kept
// current from /config/changes; producer id blocks; topic
// administration). Once the broker listens, Start registers
// /brokers/ids/<id> with its advertised endpoints and rack, and then
// starts its controller driver (zk.ControllerLoop), which competes for
// /controller and, when elected, runs the cluster. Partitions reach the
// broker only through the controller's LeaderAndIsr and UpdateMetadata.
//
// Session expiry: ZooKeeper has dropped the registration, and the other
// brokers' controller treats this broker as dead (its partitions offline
// or led elsewhere). The broker stops leading at once (StopLeading: it may
// not act on metadata from before), registers again (a new broker epoch)
// and waits for the controller's fresh requests; control requests
// carrying the old epoch are refused STALE_BROKER_EPOCH from then on. The
// controller driver handles its own expiry (it resigns and campaigns
// again).
//
// ZK is the ControlPlane of the broker's control requests: its epoch is
// its registration's, and a request's sender is checked against
// /controller and /controller_epoch (IsActiveController). It is the
// replicas' host.Controller too: a leader's ISR changes go to the
// controller the metadata names, by a call when this broker is the
// controller, else over the inter-broker listener; a controlled shutdown's
// request likewise.
//
// Log directory events: a follower whose log could not take the leader's
// records (replication/host/driver.go's noteFailure), or takes them again,
// tells the controller through ZooKeeper (coordinator/zk's
// NotifyLogDirEvent, Kafka's LogDirEventNotification); the controller asks
// this broker about its replicas, and LeaderAndIsr answers
// KAFKA_STORAGE_ERROR for a failed one, which the metadata then lists as
// offline. One goroutine writes the notifications; changes that come
// while one is written are folded into the next.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/config"
	"github.com/sluice-io/sluice/coordinator"
	"github.com/sluice-io/sluice/coordinator/zk"
	"github.com/sluice-io/sluice/wire/interbroker"
)

// ZK is a broker's ZooKeeper mode.
type ZK struct {
	self    int32
	zk      *zk.Client
	backend *zk.Backend
	cache   *Cache
	log     *slog.Logger

	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{} // closed when run returns
	// registered is closed at the first registration.
	registered chan struct{}
	// epoch is the broker epoch of the current registration, -1 before
	// the first.
	epoch atomic.Int64
	loop  atomic.Pointer[zk.ControllerLoop]
	// toController carries AlterPartition and ControlledShutdown to
	// another broker's controller; set by Start.
	toController atomic.Pointer[interbroker.Sender]
	// logDirWake asks for a log directory event.
	logDirWake    chan struct{}
	shutdownAsked atomic.Bool
	started       atomic.Bool // Start was called: run closes done

	mu struct {
		sync.Mutex
		// The controller last confirmed in ZooKeeper.
		ctlID, ctlEpoch int32
	}
}

// OpenZK opens the ZooKeeper session of cfg.Cluster and the metadata
// backend; cache is the broker's metadata cache, which names the
// controller its requests go to.
func OpenZK(cfg config.Config, cache *Cache) (*ZK, error) {
	cc := cfg.Cluster
	client, err := zk.Connect(context.Background(), cc.ZooKeeper, zk.Options{
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
	z := &ZK{self: cfg.ID, zk: client, backend: backend, cache: cache, log: cfg.Logger,
		done: make(chan struct{}), registered: make(chan struct{}), logDirWake: make(chan struct{}, 1)}
	if z.log == nil {
		z.log = slog.Default()
	}
	backend.OnNotice(func(ch zk.ConfigChange) {
		if l := z.loop.Load(); l != nil {
			l.ConfigChanged(ch) // the controller re-reads unclean election settings
		}
	})
	z.ctx, z.cancel = context.WithCancel(context.Background())
	z.epoch.Store(UnknownBrokerEpoch)
	z.mu.ctlID = -1
	return z, nil
}

// Backend is the metadata backend over the session.
func (z *ZK) Backend() *zk.Backend { return z.backend }

// Client is the ZooKeeper session; it is the address book of the
// registered brokers the inter-broker connections dial.
func (z *ZK) Client() *zk.Client { return z.zk }

// Registered reports whether the broker has registered once.
func (z *ZK) Registered() bool {
	select {
	case <-z.registered:
		return true
	default:
		return false
	}
}

// Loop is the controller driver, nil before the first registration.
func (z *ZK) Loop() *zk.ControllerLoop { return z.loop.Load() }

// Start is what the broker gives its membership once it listens.
type Start struct {
	Self      coordinator.Broker
	Endpoints []zk.Endpoint
	// Dial opens inter-broker connections: the controller driver's, and
	// the one to other brokers' controllers (with ControllerRequests).
	Dial               func(interbroker.Options) interbroker.Sender
	ControllerRequests interbroker.Options
	// Loop are the controller driver's options.
	Loop zk.LoopOptions
	// StopLeading makes every hosted partition a non-leader, at a
	// session expiry.
	StopLeading func()
}

// Start registers the broker, then starts its controller driver; it
// registers again after every session expiry.
func (z *ZK) Start(s Start) {
	reg := zk.BrokerRegistration{ID: s.Self.ID, Endpoints: s.Endpoints, Rack: s.Self.Rack, JMXPort: zk.NoJMXPort}
	send := s.Dial(s.ControllerRequests)
	z.toController.Store(&send)
	z.started.Store(true)
	go z.writeLogDirEvents()
	go z.run(reg, s)
}

func (z *ZK) run(reg zk.BrokerRegistration, s Start) {
	defer close(z.done)
	first := true
	for z.ctx.Err() == nil {
		expired := z.zk.Expired()
		reg.Timestamp = time.Now().UnixMilli()
		epoch, err := z.zk.Register(z.ctx, reg)
		if err != nil {
			if z.ctx.Err() != nil {
				return
			}
			z.log.Warn("registering in ZooKeeper failed; retrying", "err", err)
			select {
			case <-time.After(time.Second):
			case <-z.ctx.Done():
				return
			}
			continue
		}
		z.epoch.Store(epoch)
		z.log.Info("registered in ZooKeeper", "broker", reg.ID, "epoch", epoch)
		if first {
			first = false
			close(z.registered)
			lo := s.Loop
			if lo.Logger == nil {
				lo.Logger = z.log
			}
			z.loop.Store(zk.StartControllerLoop(z.ctx, z.zk, reg.ID, s.Dial(interbroker.Options{}), lo))
		}
		select {
		case <-expired:
			z.log.Warn("ZooKeeper session expired: no longer leading any partition; registering again", "broker", reg.ID, "old_epoch", epoch)
			s.StopLeading()
		case <-z.ctx.Done():
			return
		case <-z.zk.Closed():
			return
		}
	}
}

// Close stops the controller driver (a controller gives up /controller)
// and ends the session, which removes the registration at once.
func (z *ZK) Close() {
	z.cancel()
	if l := z.loop.Load(); l != nil {
		l.Close()
	}
	z.zk.Close()
	if z.started.Load() {
		<-z.done
	}
	if s := z.toController.Load(); s != nil {
		(*s).Close()
	}
	z.backend.Close()
}

// BrokerEpoch implements ControlPlane and host.Controller.
func (z *ZK) BrokerEpoch() int64 { return z.epoch.Load() }

// IsActiveController implements ControlPlane: the sender must be the
// controller ZooKeeper names, at the epoch ZooKeeper has. A controller
// writes its epoch before it sends anything, so ZooKeeper read after the
// request arrived has it: an epoch above the one read means the server
// this session reads from lags the ensemble, and it is read again after a
// sync. Only when ZooKeeper cannot be read is a request accepted
// unconfirmed, if its epoch is above the last confirmed, as the
// ControlPlane contract asks.
func (z *ZK) IsActiveController(id, epoch int32) bool {
	z.mu.Lock()
	known := z.mu.ctlID == id && z.mu.ctlEpoch == epoch
	last := z.mu.ctlEpoch
	z.mu.Unlock()
	if known {
		return true
	}
	zid, zepoch, ok, err := z.zk.ActiveController()
	if err == nil && epoch > zepoch {
		// Newer than the server this session reads from: sync it with the
		// ensemble's leader and read again.
		zid, zepoch, ok, err = z.zk.SyncedActiveController()
	}
	switch {
	case err != nil:
		z.log.Warn("checking the controller of a control request", "err", err)
		return epoch > last
	case ok && zid == id && zepoch == epoch:
		z.mu.Lock()
		if epoch >= z.mu.ctlEpoch {
			z.mu.ctlID, z.mu.ctlEpoch = id, epoch
		}
		z.mu.Unlock()
		return true
	}
	return false
}

// errNoController: the metadata names no controller, or this broker's
// controller driver has not started.
var errNoController = errors.New("broker: no controller to ask")

// toControllerOf sends req to controller: this broker's own driver by
// local, another's over the inter-broker listener.
func toControllerOf[Req kmsg.Request, Resp kmsg.Response](z *ZK, ctx context.Context, controller int32, req Req, local func(*zk.ControllerLoop, context.Context, Req) (Resp, error)) (Resp, error) {
	var none Resp
	switch {
	case controller < 0:
		return none, errNoController
	case controller == z.self:
		loop := z.loop.Load()
		if loop == nil {
			return none, errNoController
		}
		return local(loop, ctx, req)
	}
	send := z.toController.Load()
	if send == nil {
		return none, errNoController
	}
	raw, err := (*send).Send(ctx, controller, req)
	if err != nil {
		return none, err
	}
	return raw.(Resp), nil
}

// AlterPartition implements host.Controller: a leader's ISR change to the
// controller the metadata names.
func (z *ZK) AlterPartition(ctx context.Context, req *kmsg.AlterPartitionRequest) (*kmsg.AlterPartitionResponse, error) {
	return toControllerOf(z, ctx, z.cache.Load().ControllerID, req, (*zk.ControllerLoop).AlterPartition)
}

// SendControlledShutdown carries this broker's ControlledShutdown to the
// controller (ShutdownOptions.Send).
func (z *ZK) SendControlledShutdown(ctx context.Context, controller int32, req *kmsg.ControlledShutdownRequest) (*kmsg.ControlledShutdownResponse, error) {
	return toControllerOf(z, ctx, controller, req, (*zk.ControllerLoop).ControlledShutdown)
}

// ShutdownOnce reports whether this is the first call: a controlled
// shutdown is asked for once.
func (z *ZK) ShutdownOnce() bool { return z.shutdownAsked.CompareAndSwap(false, true) }

// logDirEventRetry is the pause before a notification that could not be
// written is written again.
const logDirEventRetry = time.Second

// writeLogDirEvents writes the notifications LogDirChanged asks for.
func (z *ZK) writeLogDirEvents() {
	for {
		select {
		case <-z.logDirWake:
		case <-z.ctx.Done():
			return
		}
		for {
			err := z.zk.NotifyLogDirEvent(z.self)
			if err == nil {
				break
			}
			z.log.Warn("telling the controller of a log directory event failed; retrying", "err", err)
			select {
			case <-time.After(logDirEventRetry):
			case <-z.ctx.Done():
				return
			}
		}
	}
}

// LogDirChanged asks for a log directory event notification
// (host.Options.LogDirChanged); it does not block.
func (z *ZK) LogDirChanged() {
	select {
	case z.logDirWake <- struct{}{}:
	default:
	}
}
