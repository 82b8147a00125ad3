package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-io/sluice/broker/cluster"
	"github.com/sluice-io/sluice/broker/server"
	"github.com/sluice-io/sluice/config"
	"github.com/sluice-io/sluice/config/dynamic"
	"github.com/sluice-io/sluice/coordinator"
	grouphost "github.com/sluice-io/sluice/coordinator/group/host"
	txnhost "github.com/sluice-io/sluice/coordinator/txn/host"
	"github.com/sluice-io/sluice/engine"
	"github.com/sluice-io/sluice/metrics"
	"github.com/sluice-io/sluice/replication/host"
	"github.com/sluice-io/sluice/security/acl"
	"github.com/sluice-io/sluice/security/quota"
	"github.com/sluice-io/sluice/security/scram"
	"github.com/sluice-io/sluice/security/tlsconf"
)

// Broker is a single sluice broker.
type Broker struct {
	cfg   config.Config
	log   *slog.Logger
	store *engine.Store
	coord coordinator.Coordinator
	// admin serializes changes to the set of topics and partitions
	// (create, delete, grow) and to configuration: a deletion must not
	// remove the logs of a topic of the same name created meanwhile. Taken
	// before the Store's lock and net.mu.
	admin sync.Mutex
	cfgs  *dynamic.Service // configuration beyond Config (config/dynamic; dynconfig.go)
	// replicas makes the hosted partitions and runs the followers'
	// fetchers (replication/host).
	replicas *host.Manager
	net      netState
	life     lifecycle
	coords   coordinators
	plane    controlPlane
	quotas   quotaState
	metrics  metricsState
	sec      securityState
}

// netState is the broker's listeners and its connections to others.
type netState struct {
	mu struct {
		sync.RWMutex
		ln       net.Listener // the first listener's
		closing  bool
		advertis coordinator.Broker
		// endpoints are the advertised listeners' addresses (listeners.go).
		endpoints []server.Endpoint
	}
	// srv accepts the listeners' connections and runs their loops
	// (package server); its listeners' bound addresses are set and read
	// under mu.
	srv   *server.Server
	setup config.ListenerSetup
	// interTLS is the TLS client side of this broker's connections to
	// others, when the inter-broker listener is SSL or SASL_SSL.
	interTLS  *tlsconf.Client
	listening chan struct{} // closed once Serve has bound every listener
}

// lifecycle is the broker's shutdown.
type lifecycle struct {
	closing chan struct{} // closed as Shutdown begins closing the listeners
	// stopping is set as Shutdown begins: /readyz answers not ready.
	stopping atomic.Bool
}

// coordinators are the group and transaction coordinators' hosts.
type coordinators struct {
	groups   *grouphost.Groups     // the group coordinator (groups.go)
	txns     *txnhost.Coordinators // the transaction coordinators (txns.go)
	verifier *txnhost.Verifier     // partitions' transaction verification (txnverify.go)
	pids     *txnhost.ProducerIDs  // InitProducerId's ids, from the coordinator's blocks
}

// controlPlane is the broker's side of the control plane (broker/cluster).
type controlPlane struct {
	state *cluster.ControlState // the controller's requests' state (control.go)
	dir   *cluster.Directory    // Metadata, coordinators, topic administration (directory.go)
	zk    *cluster.ZK           // ZooKeeper mode (zookeeper.go); nil on the single node
}

// quotaState are the quotas the broker enforces.
type quotaState struct {
	repl    replicationQuotas // replication throttles (throttle.go)
	clients *quota.Manager    // the users' and client ids' quotas (clientquotas.go)
	admin   *quota.Admin      // loads and administers them (security/quota's admin.go)
}

// metricsState is nil-valued without metrics.listen (metrics.go).
type metricsState struct {
	reg *metrics.Registry
	srv *metrics.Server // its HTTP listener
}

// securityState is the broker's authentication and authorization.
type securityState struct {
	acls *acl.Service // the ACL authorizer, nil without one (authorize.go, security/acl)
	// SCRAM credentials (scramcreds.go); the SASL listeners' settings and
	// the broker's own inter-broker SASL client, nil if the inter-broker
	// listener is not SASL_* (sasl.go).
	scram      *scram.Cache
	scramAdmin *scram.Admin
	saslLns    map[string]*config.SASLListener
	saslClient *saslClient
}

// New opens the broker's data directory and metadata. It does not listen
// yet: call Serve or ListenAndServe.
func New(cfg config.Config) (*Broker, error) {
	raw := cfg
	cfg = cfg.WithDefaults()
	b := &Broker{cfg: cfg, log: cfg.Logger}
	b.life.closing, b.net.listening = make(chan struct{}), make(chan struct{})
	b.plane.state = cluster.NewControlState(cfg.ControlPlane)
	if err := cfg.Network.Validate(); err != nil {
		return nil, err
	}
	if err := cfg.Cluster.Validate(); err != nil {
		return nil, err
	}
	if err := cfg.Authz.Validate(); err != nil {
		return nil, err
	}
	if cfg.Observability.MetricsListen != "" {
		b.metrics.reg = b.newMetrics()
	}
	var err error
	if b.net.setup, err = cfg.ListenerSetup(); err != nil {
		return nil, err
	}
	b.net.srv, err = server.New(b.net.setup.Listeners, b.net.setup.Protocols, server.Options{
		Network: cfg.Network, MaxRequestBytes: cfg.SocketRequestMaxBytes, TLS: cfg.TLS, Logger: b.log,
		Metrics: b.metrics.reg, SlowRequest: cfg.Observability.SlowRequest, Handled: requestHandled,
	}, sessions{b})
	if err != nil {
		return nil, err
	}
	if err := b.setupInterTLS(); err != nil { // listeners.go
		return nil, err
	}
	if err := b.setupSASL(); err != nil { // sasl.go
		return nil, err
	}
	if err := b.refreshSelfLocked(); err != nil {
		return nil, err
	}
	self := b.net.mu.advertis
	var coord coordinator.Coordinator
	if cfg.Cluster.Enabled() {
		cl, err := cluster.OpenZK(cfg, b.plane.state.Cache) // broker/cluster/zookeeper.go
		if err != nil {
			return nil, err
		}
		b.plane.zk, coord = cl, cl.Backend()
		if cfg.ControlPlane == nil {
			b.plane.state.SetPlane(cl)
		}
	} else {
		emb, err := coordinator.OpenEmbedded(cfg.DataDir, self)
		if err != nil {
			return nil, err
		}
		coord = emb
	}
	b.coord = coord
	b.plane.dir = cluster.NewDirectory(cluster.DirectoryOptions{Self: cfg.ID, Cache: b.plane.state.Cache, Topics: coord,
		SingleNode: b.plane.zk == nil, SelfEndpoint: b.selfEndpoint, AutoCreate: *cfg.AutoCreateTopics,
		NumPartitions: cfg.NumPartitions, ReplicationFactor: cfg.DefaultReplicationFactor, Closing: b.life.closing, Log: b.log,
		Layers: func() config.Layers { return b.cfgs.Layers() }, Controller: b.controllerHere})
	b.sec.scram, b.sec.scramAdmin = b.newSCRAM() // scramcreds.go
	b.coords.pids = txnhost.NewProducerIDs(coord.AllocateProducerIDs, b.log)
	b.quotas.repl.init(cfg.Cluster)     // the follower quota goes to the replicas
	b.coords.txns = b.newTxns()         // txns.go
	b.coords.verifier = b.newVerifier() // txnverify.go
	if err := b.startAuthz(); err != nil {
		b.closeCoordinator()
		return nil, err
	}
	b.quotas.clients = quota.NewManager(cfg.ClientQuotas.QuotaConfig())
	b.quotas.admin = quota.NewAdmin(coord, b.quotas.clients, b.log)
	b.loadConfigs(raw)
	store, err := engine.OpenStore(cfg.DataDir, engine.StoreOptions{
		Log:                    b.logOptions(nil),
		RetentionCheckInterval: cfg.LogRetentionCheck,
		Cleaner:                cfg.Cleaner.StoreOptions(),
		LogOptions: func(topic string) engine.Options {
			t, _ := coord.Topic(topic)
			return b.logOptions(t.Configs)
		},
	})
	if err != nil {
		b.closeCoordinator()
		return nil, err
	}
	b.store = store
	b.replicas = b.newReplicas() // replicas.go
	// Partitions come from the controller (replication/host/hosting.go), groups as the
	// partitions of __consumer_offsets do.
	b.coords.groups = b.newGroups()
	// The coordinators follow the leadership of their topics' partitions.
	b.replicas.OnLeadership(offsetsTopic, b.coords.groups.Move)
	b.replicas.OnLeadership(txnStateTopic, b.coords.txns.Move)
	coord.OnConfigChange(b.remoteConfigChange)
	b.quotas.admin.Load() // after the hook: a change from now on is applied again
	go b.replicas.RunClock()
	if emb, ok := coord.(*coordinator.Embedded); ok {
		if err := b.startSingleNode(emb); err != nil {
			store.Close()
			b.closeCoordinator()
			return nil, err
		}
	}
	if b.metrics.reg != nil {
		if err := b.startMetricsServer(); err != nil {
			b.Close()
			return nil, err
		}
	}
	return b, nil
}

// startSingleNode removes the logs of topics the metadata does not name,
// then starts the single node's own controller and waits until it has
// made this broker the leader of every partition and their groups are
// loaded, so that New returns a broker serving everything it holds.
func (b *Broker) startSingleNode(emb *coordinator.Embedded) error {
	if err := b.removeOrphanLogs(); err != nil {
		return err
	}
	self := b.self()
	if err := emb.StartController(self.Host, self.Port, b.localControl); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), singleNodeStartTimeout)
	defer cancel()
	if err := emb.WaitIdle(ctx); err != nil {
		return fmt.Errorf("broker: starting the single node's controller: %w", err)
	}
	if ts := b.topic(offsetsTopic); ts != nil {
		g := b.coords.groups.Existing()
		for i, p := range ts.Partitions {
			if p == nil {
				continue
			}
			if err := g.WaitLoaded(ctx, int32(i)); err != nil {
				return fmt.Errorf("broker: loading the groups of %s-%d: %w", offsetsTopic, i, err)
			}
		}
		if err := b.migrateOffsetsTopic(ts.Configs); err != nil {
			return err
		}
	}
	return nil
}

// singleNodeStartTimeout bounds the single node's start: its controller
// opens every log (tens of thousands take seconds).
const singleNodeStartTimeout = 10 * time.Minute

// topic returns a hosted topic (replication/host's table).
func (b *Broker) topic(name string) *host.Topic { return b.replicas.Topic(name) }

// partition returns a hosted partition, or nil.
func (b *Broker) partition(topic string, index int32) *host.Partition {
	return b.replicas.Partition(topic, index)
}

// leaderPartition returns a partition this broker leads, or the code that
// answers a request for it: NOT_LEADER_OR_FOLLOWER for a partition the
// cluster has but this broker does not lead (the client refreshes its
// metadata), UNKNOWN_TOPIC_OR_PARTITION for one nobody has.
func (b *Broker) leaderPartition(topic string, index int32) (*host.Partition, int16) {
	p := b.partition(topic, index)
	switch {
	case p != nil && p.Leads():
		return p, 0
	case p != nil || b.plane.state.Cache.HasPartition(topic, index):
		return nil, kerr.NotLeaderForPartition.Code
	}
	return nil, kerr.UnknownTopicOrPartition.Code
}

// self is this broker's advertised identity.
func (b *Broker) self() coordinator.Broker {
	b.net.mu.RLock()
	defer b.net.mu.RUnlock()
	return b.net.mu.advertis
}

// ListenAndServe listens on every configured listener and serves until
// Close.
func (b *Broker) ListenAndServe() error {
	first := b.net.srv.Listeners()[0]
	ln, err := net.Listen("tcp", first.Addr)
	if err != nil {
		return fmt.Errorf("broker: listen on %s (%s): %w", first.Addr, first.Name, err)
	}
	return b.Serve(ln)
}

// Serve accepts connections on ln, as the first listener, and on the other
// listeners, which it opens, until Close. A listener advertised with no
// address of its own advertises the address it is bound to (its port, when
// the configuration asked for port 0).
func (b *Broker) Serve(ln net.Listener) error {
	b.net.mu.Lock()
	if b.net.mu.closing {
		b.net.mu.Unlock()
		ln.Close()
		return net.ErrClosed
	}
	if err := b.net.srv.Bind(ln); err != nil {
		b.net.mu.Unlock()
		return err
	}
	b.net.mu.ln = ln
	err := b.refreshSelfLocked()
	b.net.mu.Unlock()
	if err != nil {
		return err
	}
	close(b.net.listening)
	if b.plane.zk != nil {
		b.startCluster() // registers, then competes for the controller (cluster.go)
	}
	for _, l := range b.net.srv.Listeners() {
		var adv string
		if host, port, ok := b.selfEndpoint(l.Name); ok {
			adv = net.JoinHostPort(host, strconv.Itoa(int(port)))
		}
		b.log.Info("sluice broker listening", "addr", l.Bound().String(), "listener", l.Name, "protocol", l.Protocol, "advertised", adv, "data", b.cfg.DataDir)
	}
	return b.net.srv.Serve()
}

// Addr is the listener's address, once serving.
func (b *Broker) Addr() net.Addr {
	b.net.mu.RLock()
	defer b.net.mu.RUnlock()
	if b.net.mu.ln == nil {
		return nil
	}
	return b.net.mu.ln.Addr()
}

// Close stops accepting, lets every connection finish the request it is
// handling (long-polling fetches answer at once), then flushes and closes
// the logs, leaving the clean-shutdown marker.
func (b *Broker) Close() error {
	return b.Shutdown(context.Background())
}

// Shutdown is Close with a deadline for in-flight requests; connections
// still busy when ctx ends are closed.
//
// In a cluster it first runs the controlled shutdown while still serving
// (controlledshutdown.go): the controller moves this broker's leadership
// away, then the broker stops.
func (b *Broker) Shutdown(ctx context.Context) error {
	b.life.stopping.Store(true)
	b.controlledShutdown()
	b.net.mu.Lock()
	if b.net.mu.closing {
		b.net.mu.Unlock()
		return nil
	}
	b.net.mu.closing = true
	close(b.life.closing)
	b.net.srv.Stop() // the listeners close, every connection ends after its request in hand
	b.net.mu.Unlock()
	b.coords.groups.Close() // answers parked joins and syncs, closes the lag sampler's connections
	b.coords.txns.Close()   // answers requests waiting on a transaction coordinator
	b.coords.verifier.Close()
	b.net.srv.Wait(ctx)
	b.net.srv.Close()
	if b.plane.zk != nil {
		b.plane.zk.Close() // the registration goes, another broker becomes controller
	}
	cerr := b.coord.Close() // the single node's controller stops before the logs close
	err := b.store.Close()
	b.stopMetricsServer()
	return errors.Join(err, cerr)
}

// closeCoordinator releases the metadata backend (and the ZooKeeper
// session) when New fails.
func (b *Broker) closeCoordinator() {
	if b.plane.zk != nil {
		b.plane.zk.Close()
		return
	}
	b.coord.Close()
}
