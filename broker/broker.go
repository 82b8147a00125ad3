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
	// before the Store's lock and mu.
	admin sync.Mutex
	pids  *txnhost.ProducerIDs // InitProducerId's ids, from the coordinator's blocks
	cfgs  *dynamic.Service     // configuration beyond Config (config/dynamic; dynconfig.go)
	// replicas makes the hosted partitions and runs the followers'
	// fetchers (replication/host).
	replicas *host.Manager

	mu struct {
		sync.RWMutex
		ln       net.Listener // the first listener's
		closing  bool
		advertis coordinator.Broker
		// endpoints are the advertised listeners' addresses (listeners.go).
		endpoints []advertisedEndpoint
	}
	// srv accepts the listeners' connections and runs their loops
	// (package server); its listeners' bound addresses are set and read
	// under mu.
	srv    *server.Server
	lsetup config.ListenerSetup
	// interTLS is the TLS client side of this broker's connections to
	// others, when the inter-broker listener is SSL or SASL_SSL.
	interTLS  *tlsconf.Client
	listening chan struct{} // closed once Serve has bound every listener
	closing   chan struct{}
	groups    *grouphost.Groups     // the group coordinator (groups.go)
	txns      *txnhost.Coordinators // the transaction coordinators (txns.go)
	verifier  *txnhost.Verifier     // partitions' transaction verification (txnverify.go)
	ctl       *cluster.ControlState // the controller's requests' state (broker/cluster/control.go)
	dir       *cluster.Directory    // Metadata, coordinators, topic administration (broker/cluster/directory.go)
	cluster   *cluster.ZK           // ZooKeeper mode (broker/cluster/zookeeper.go); nil on the single node
	repl      replicationQuotas     // replication throttles (throttle.go)
	acls      *acl.Service          // the ACL authorizer, nil without one (authorize.go, security/acl)
	// SCRAM credentials (scramcreds.go); the SASL listeners' settings and
	// the broker's own inter-broker SASL client, nil if the inter-broker
	// listener is not SASL_* (sasl.go).
	scram      *scram.Cache
	scramAdmin *scram.Admin
	saslLns    map[string]*config.SASLListener
	saslClient *saslClient
	// clientQuotas are the users' and client ids' quotas (clientquotas.go).
	clientQuotas *quota.Manager
	// quotaAdmin loads and administers them (security/quota's admin.go).
	quotaAdmin *quota.Admin

	// metrics is nil without metrics.listen (metrics.go); metricsSrv
	// its HTTP listener.
	metrics    *metrics.Registry
	metricsSrv *metrics.Server
	// stopping is set as Shutdown begins: /readyz answers not ready.
	stopping atomic.Bool
}

// New opens the broker's data directory and metadata. It does not listen
// yet: call Serve or ListenAndServe.
func New(cfg config.Config) (*Broker, error) {
	raw := cfg
	cfg = cfg.WithDefaults()
	b := &Broker{cfg: cfg, log: cfg.Logger, closing: make(chan struct{}), listening: make(chan struct{}), ctl: cluster.NewControlState(cfg.ControlPlane)}
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
		b.metrics = b.newMetrics()
	}
	var err error
	if b.lsetup, err = cfg.ListenerSetup(); err != nil {
		return nil, err
	}
	b.srv, err = server.New(b.lsetup.Listeners, b.lsetup.Protocols, server.Options{
		Network: cfg.Network, MaxRequestBytes: cfg.SocketRequestMaxBytes, TLS: cfg.TLS, Logger: b.log,
		Metrics: b.metrics, SlowRequest: cfg.Observability.SlowRequest, Handled: requestHandled,
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
	self := b.mu.advertis
	var coord coordinator.Coordinator
	if cfg.Cluster.Enabled() {
		cl, err := cluster.OpenZK(cfg, b.ctl.Cache) // broker/cluster/zookeeper.go
		if err != nil {
			return nil, err
		}
		b.cluster, coord = cl, cl.Backend()
		if cfg.ControlPlane == nil {
			b.ctl.SetPlane(cl)
		}
	} else {
		emb, err := coordinator.OpenEmbedded(cfg.DataDir, self)
		if err != nil {
			return nil, err
		}
		coord = emb
	}
	b.coord = coord
	b.dir = cluster.NewDirectory(cluster.DirectoryOptions{Self: cfg.ID, Cache: b.ctl.Cache, Topics: coord,
		SingleNode: b.cluster == nil, SelfEndpoint: b.selfEndpoint, AutoCreate: *cfg.AutoCreateTopics,
		NumPartitions: cfg.NumPartitions, ReplicationFactor: cfg.DefaultReplicationFactor, Closing: b.closing, Log: b.log,
		Layers: func() config.Layers { return b.cfgs.Layers() }, Controller: b.controllerHere})
	b.scram, b.scramAdmin = b.newSCRAM() // scramcreds.go
	b.pids = txnhost.NewProducerIDs(coord.AllocateProducerIDs, b.log)
	b.repl.init(cfg.Cluster)     // the follower quota goes to the replicas
	b.txns = b.newTxns()         // txns.go
	b.verifier = b.newVerifier() // txnverify.go
	if err := b.startAuthz(); err != nil {
		b.closeCoordinator()
		return nil, err
	}
	b.clientQuotas = quota.NewManager(cfg.ClientQuotas.QuotaConfig())
	b.quotaAdmin = quota.NewAdmin(coord, b.clientQuotas, b.log)
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
	b.groups = b.newGroups()
	// The coordinators follow the leadership of their topics' partitions.
	b.replicas.OnLeadership(offsetsTopic, b.groups.Move)
	b.replicas.OnLeadership(txnStateTopic, b.txns.Move)
	coord.OnConfigChange(b.remoteConfigChange)
	b.quotaAdmin.Load() // after the hook: a change from now on is applied again
	go b.replicas.RunClock()
	if emb, ok := coord.(*coordinator.Embedded); ok {
		if err := b.startSingleNode(emb); err != nil {
			store.Close()
			b.closeCoordinator()
			return nil, err
		}
	}
	if b.metrics != nil {
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
		g := b.groups.Existing()
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
	case p != nil || b.ctl.Cache.HasPartition(topic, index):
		return nil, kerr.NotLeaderForPartition.Code
	}
	return nil, kerr.UnknownTopicOrPartition.Code
}

// self is this broker's advertised identity.
func (b *Broker) self() coordinator.Broker {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.mu.advertis
}

// ListenAndServe listens on every configured listener and serves until
// Close.
func (b *Broker) ListenAndServe() error {
	first := b.srv.Listeners()[0]
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
	b.mu.Lock()
	if b.mu.closing {
		b.mu.Unlock()
		ln.Close()
		return net.ErrClosed
	}
	if err := b.srv.Bind(ln); err != nil {
		b.mu.Unlock()
		return err
	}
	b.mu.ln = ln
	err := b.refreshSelfLocked()
	b.mu.Unlock()
	if err != nil {
		return err
	}
	close(b.listening)
	if b.cluster != nil {
		b.startCluster() // registers, then competes for the controller (cluster.go)
	}
	for _, l := range b.srv.Listeners() {
		var adv string
		if host, port, ok := b.selfEndpoint(l.Name); ok {
			adv = net.JoinHostPort(host, strconv.Itoa(int(port)))
		}
		b.log.Info("sluice broker listening", "addr", l.Bound().String(), "listener", l.Name, "protocol", l.Protocol, "advertised", adv, "data", b.cfg.DataDir)
	}
	return b.srv.Serve()
}

// Addr is the listener's address, once serving.
func (b *Broker) Addr() net.Addr {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.mu.ln == nil {
		return nil
	}
	return b.mu.ln.Addr()
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
	b.stopping.Store(true)
	b.controlledShutdown()
	b.mu.Lock()
	if b.mu.closing {
		b.mu.Unlock()
		return nil
	}
	b.mu.closing = true
	close(b.closing)
	b.srv.Stop() // the listeners close, every connection ends after its request in hand
	b.mu.Unlock()
	b.groups.Close() // answers parked joins and syncs, closes the lag sampler's connections
	b.txns.Close()   // answers requests waiting on a transaction coordinator
	b.verifier.Close()
	b.srv.Wait(ctx)
	b.srv.Close()
	if b.cluster != nil {
		b.cluster.Close() // the registration goes, another broker becomes controller
	}
	cerr := b.coord.Close() // the single node's controller stops before the logs close
	err := b.store.Close()
	b.stopMetricsServer()
	return errors.Join(err, cerr)
}

// closeCoordinator releases the metadata backend (and the ZooKeeper
// session) when New fails.
func (b *Broker) closeCoordinator() {
	if b.cluster != nil {
		b.cluster.Close()
		return
	}
	b.coord.Close()
}
