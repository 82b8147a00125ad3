package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-io/sluice/coordinator"
	"github.com/sluice-io/sluice/coordinator/zk"
	"github.com/sluice-io/sluice/engine"
	"github.com/sluice-io/sluice/security/quota"
)

// Broker is a single sluice broker.
type Broker struct {
	cfg   Config
	log   *slog.Logger
	store *engine.Store
	coord coordinator.Coordinator
	// admin serializes changes to the set of topics and partitions
	// (create, delete, grow) and to configuration: a deletion must not
	// remove the logs of a topic of the same name created meanwhile. Taken
	// before the Store's lock and mu.
	admin sync.Mutex
	pids  producerIDs // InitProducerId's ids, from the coordinator's blocks
	cfgs  configState // configuration beyond Config (dynconfig.go)
	live  liveBrokers // the live brokers last stepped into the replicas (replica.go)

	mu struct {
		sync.RWMutex
		topics   map[string]*topicState
		byID     map[engine.TopicID]*topicState
		conns    map[*conn]struct{}
		ln       net.Listener
		closing  bool
		advertis coordinator.Broker
	}
	closing chan struct{}
	connWG  sync.WaitGroup
	groups  groupsState       // the group coordinator (groups.go)
	txns    txnCoordinators   // the transaction coordinators (txncoord.go)
	lag     lagSampler        // consumer lag, sampled when asked (grouplag.go)
	pool    *requestPool      // request memory (reqpool.go)
	quotas  *connQuotas       // connection bounds (connquota.go)
	ctl     *controlState     // the controller's requests' state (controlplane.go)
	cluster *cluster          // ZooKeeper mode (cluster.go); nil on the single node
	repl    replicationQuotas // replication throttles (throttle.go)
	// clientQuotas are the users' and client ids' quotas (clientquotas.go).
	clientQuotas *quota.Manager

	// metrics is nil without metrics.listen (metrics.go); its HTTP
	// listener and server (metricshttp.go).
	metrics    *brokerMetrics
	metricsLn  net.Listener
	metricsSrv *http.Server
	// timeRequests: the connection loop times requests (requestlog.go).
	timeRequests bool
	// stopping is set as Shutdown begins: /readyz answers not ready.
	stopping atomic.Bool
}

// New opens the broker's data directory and metadata. It does not listen
// yet: call Serve or ListenAndServe.
func New(cfg Config) (*Broker, error) {
	raw := cfg
	cfg = cfg.withDefaults()
	b := &Broker{cfg: cfg, log: cfg.Logger, closing: make(chan struct{}), ctl: newControlState(cfg.ControlPlane)}
	if err := cfg.Network.validate(); err != nil {
		return nil, err
	}
	if err := cfg.Cluster.validate(); err != nil {
		return nil, err
	}
	pool, err := newRequestPool(cfg.Network.QueuedMaxRequestBytes, cfg.SocketRequestMaxBytes)
	if err != nil {
		return nil, err
	}
	b.pool = pool
	if cfg.Observability.MetricsListen != "" {
		b.metrics = newBrokerMetrics(b)
	}
	b.timeRequests = b.observesRequests()
	if b.quotas, err = newConnQuotas(cfg.Network); err != nil {
		return nil, err
	}
	b.mu.topics = map[string]*topicState{}
	b.mu.byID = map[engine.TopicID]*topicState{}
	b.mu.conns = map[*conn]struct{}{}
	self, err := b.selfAddress(cfg.Listen)
	if err != nil {
		return nil, err
	}
	b.mu.advertis = self
	var coord coordinator.Coordinator
	if cfg.Cluster.enabled() {
		cl, err := openCluster(cfg) // cluster.go
		if err != nil {
			return nil, err
		}
		cl.b, b.cluster, coord = b, cl, cl.backend
		cl.fetchers = newFetchers(b, cfg.Cluster.Fetch.withDefaults(), cl.zk)
		cl.isrSend = zk.NewNetSender(cl.zk, cfg.ID, zk.NetSenderOptions{RequestTimeout: replicaFetchSendTimeout,
			ClientID: "broker-" + strconv.Itoa(int(cfg.ID)) + "-alter-partition"})
		if cfg.ControlPlane == nil {
			b.ctl.plane = cl
		}
	} else {
		emb, err := coordinator.OpenEmbedded(cfg.DataDir, self)
		if err != nil {
			return nil, err
		}
		coord = emb
	}
	b.coord = coord
	b.pids.coord = coord
	b.repl.init(cfg.Cluster)
	b.clientQuotas = quota.NewManager(cfg.ClientQuotas.quotaConfig())
	b.loadConfigs(raw)
	store, err := engine.OpenStore(cfg.DataDir, engine.StoreOptions{
		Log:                    b.logOptions(nil),
		RetentionCheckInterval: cfg.LogRetentionCheck,
		Cleaner:                cfg.Cleaner.storeOptions(),
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
	// Partitions come from the controller (hosting.go), groups as the
	// partitions of __consumer_offsets do.
	b.startClusterGroups()
	coord.OnConfigChange(b.remoteConfigChange)
	b.loadClientQuotas()                               // after the hook: a change from now on is applied again
	go b.tickReplicas(cfg.Cluster.replicaLagTimeMax()) // replica.go
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
		g := b.existingGroups()
		for i, p := range ts.partitions {
			if p == nil {
				continue
			}
			if err := g.WaitLoaded(ctx, int32(i)); err != nil {
				return fmt.Errorf("broker: loading the groups of %s-%d: %w", offsetsTopic, i, err)
			}
		}
		if err := b.migrateOffsetsTopic(ts.meta.Configs, b.cfg.Groups.withDefaults()); err != nil {
			return err
		}
	}
	return nil
}

// singleNodeStartTimeout bounds the single node's start: its controller
// opens every log (tens of thousands take seconds).
const singleNodeStartTimeout = 10 * time.Minute

// selfAddress is the broker's advertised address: Advertise, or the
// listener's address.
func (b *Broker) selfAddress(listen string) (coordinator.Broker, error) {
	addr := b.cfg.Advertise
	if addr == "" {
		addr = listen
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return coordinator.Broker{}, fmt.Errorf("broker: address %q: %w", addr, err)
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "localhost"
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return coordinator.Broker{}, fmt.Errorf("broker: address %q: bad port", addr)
	}
	br := coordinator.Broker{ID: b.cfg.ID, Host: host, Port: int32(p)}
	if r := b.cfg.Cluster.Rack; r != "" {
		br.Rack = &r
	}
	return br, nil
}

// topic returns a topic's state.
func (b *Broker) topic(name string) *topicState {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.mu.topics[name]
}

// topicNames lists the topics this broker hosts partitions of, sorted.
func (b *Broker) topicNames() []string {
	b.mu.RLock()
	defer b.mu.RUnlock()
	names := make([]string, 0, len(b.mu.topics))
	for name := range b.mu.topics {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

func (b *Broker) topicByID(id engine.TopicID) *topicState {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.mu.byID[id]
}

// partition returns a hosted partition, or nil.
func (b *Broker) partition(topic string, index int32) *partition {
	ts := b.topic(topic)
	if ts == nil || index < 0 || int(index) >= len(ts.partitions) {
		return nil
	}
	return ts.partitions[index]
}

// leaderPartition returns a partition this broker leads, or the code that
// answers a request for it: NOT_LEADER_OR_FOLLOWER for a partition the
// cluster has but this broker does not lead (the client refreshes its
// metadata), UNKNOWN_TOPIC_OR_PARTITION for one nobody has.
func (b *Broker) leaderPartition(topic string, index int32) (*partition, int16) {
	p := b.partition(topic, index)
	switch {
	case p != nil && p.leader.Load():
		return p, 0
	case p != nil || b.ctl.cache.hasPartition(topic, index):
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

// ListenAndServe listens on the configured address and serves until Close.
func (b *Broker) ListenAndServe() error {
	ln, err := net.Listen("tcp", b.cfg.Listen)
	if err != nil {
		return fmt.Errorf("broker: listen: %w", err)
	}
	return b.Serve(ln)
}

// Serve accepts connections on ln until Close. If no address was
// advertised, the listener's actual address (its port, when the
// configuration asked for port 0) is advertised.
func (b *Broker) Serve(ln net.Listener) error {
	b.mu.Lock()
	if b.mu.closing {
		b.mu.Unlock()
		ln.Close()
		return net.ErrClosed
	}
	b.mu.ln = ln
	if b.cfg.Advertise == "" {
		if self, err := b.selfAddress(ln.Addr().String()); err == nil {
			b.mu.advertis = self
		}
	}
	b.mu.Unlock()
	if b.cluster != nil {
		b.cluster.start(b.self()) // registers, then competes for the controller
	}
	b.log.Info("sluice broker listening", "addr", ln.Addr().String(), "advertised", net.JoinHostPort(b.self().Host, strconv.Itoa(int(b.self().Port))), "data", b.cfg.DataDir)
	for {
		nc, err := ln.Accept()
		if err != nil {
			select {
			case <-b.closing:
				return nil
			default:
			}
			// Out of file descriptors is transient, as a timeout is: wait
			// and accept again (as Kafka's acceptor does) rather than stop
			// accepting for good.
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			return fmt.Errorf("broker: accept: %w", err)
		}
		// At max.connections this waits, accepting nothing more.
		ip := remoteIP(nc)
		if err := b.quotas.inc(ip, b.closing); err != nil {
			if errors.Is(err, errTooManyFromIP) {
				b.log.Info("rejected connection", "remote", nc.RemoteAddr().String(), "err", err)
			}
			nc.Close()
			continue
		}
		c := newConn(b, nc)
		b.mu.Lock()
		if b.mu.closing {
			b.mu.Unlock()
			nc.Close()
			b.quotas.dec(ip)
			continue
		}
		b.mu.conns[c] = struct{}{}
		b.connWG.Add(1)
		b.mu.Unlock()
		go func() {
			defer b.connWG.Done()
			c.serve()
			b.mu.Lock()
			delete(b.mu.conns, c)
			b.mu.Unlock()
			b.quotas.dec(ip)
		}()
	}
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
	if b.mu.ln != nil {
		b.mu.ln.Close()
	}
	for c := range b.mu.conns {
		c.stopReading()
	}
	b.mu.Unlock()
	b.closeGroups() // answers parked joins and syncs
	b.closeTxns()   // answers requests waiting on a transaction coordinator
	done := make(chan struct{})
	go func() { b.connWG.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		b.mu.Lock()
		for c := range b.mu.conns {
			c.nc.Close()
		}
		b.mu.Unlock()
		<-done
	}
	b.pool.close()
	b.closeLag()
	if b.cluster != nil {
		b.cluster.close() // the registration goes, another broker becomes controller
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
		b.cluster.cancel()
		b.cluster.zk.Close()
		b.cluster.backend.Close()
		return
	}
	b.coord.Close()
}
