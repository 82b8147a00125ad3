package host

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/config"
	"github.com/sluice-io/sluice/engine"
	"github.com/sluice-io/sluice/metrics"
	"github.com/sluice-io/sluice/replication"
	"github.com/sluice-io/sluice/wire/interbroker"
)

// Options are a broker's collaborators and settings, shared by the
// partitions it hosts. The zero Dial and Controller are the single node's:
// it follows nothing and changes no ISR.
type Options struct {
	// Self is this broker's id.
	Self int32
	// LagTimeMax is replica.lag.time.max.ms: a follower that has not
	// caught up within it leaves the ISR.
	LagTimeMax time.Duration
	Logger     *slog.Logger
	// Metrics counts ISR changes and replicated bytes; nil without metrics.
	Metrics *metrics.Registry
	// Closing closes as the broker shuts down: fetchers stop, retries end.
	Closing <-chan struct{}

	// Fetch sizes and times the followers' fetches (replica.fetch.*,
	// num.replica.fetchers).
	Fetch config.FetcherConfig
	// Dial opens a connection to other brokers for a fetcher (the
	// inter-broker transport, whose ClientID and ReuseResponses the
	// options set); nil on the single node.
	Dial func(interbroker.Options) interbroker.Sender
	// Controller takes the leaders' ISR changes; nil on the single node.
	Controller Controller
	// FollowerQuota is follower.replication.throttled.rate's (KIP-73):
	// throttled partitions not in sync are left out of a fetch while it is
	// exceeded. Nil: no throttle.
	FollowerQuota Quota
	// LogDirChanged is told when a follower's log fails or takes the
	// leader's records again (the controller learns it, logdirevents);
	// may be nil.
	LogDirChanged func()

	// The collaborators of hosting (hosting.go). Logs opens, creates and
	// deletes the logs; Admin is the lock topic administration and
	// configuration changes hold, taken around each topic's change;
	// TopicConfigs is a topic's configuration as the metadata backend's
	// cache has it (read without waiting); MakePartition wraps an opened
	// log with its topic's configuration (NewPartition and the broker's
	// settings of it); LiveBrokers lists the live brokers, sorted, for a
	// new leader's core.
	Logs          Logs
	Admin         sync.Locker
	TopicConfigs  func(topic string) map[string]string
	MakePartition func(topic string, index int32, l *engine.Log, configs map[string]string) *Partition
	LiveBrokers   func() []int32
}

// Controller carries a leader's ISR changes to the cluster's controller.
type Controller interface {
	// BrokerEpoch is this broker's registration epoch (KIP-380), which
	// the controller checks an AlterPartition's against.
	BrokerEpoch() int64
	// AlterPartition sends req to the controller the metadata names now:
	// an error when there is none or it cannot be reached.
	AlterPartition(ctx context.Context, req *kmsg.AlterPartitionRequest) (*kmsg.AlterPartitionResponse, error)
}

// Quota is a replication quota: how long it is exceeded for (0 when it
// is not), and the bytes that count against it.
type Quota interface {
	Exceeded() time.Duration
	Record(bytes int64)
}

// Manager makes the partitions a broker hosts, keeps the table of them
// (topics.go), runs its followers' fetchers and tells the listeners of a
// topic's leadership changes (leadership.go).
type Manager struct {
	o        Options
	fetchers *fetchers // nil on the single node
	topics   topicTable
	// listeners are set before the first partition is hosted, read
	// without a lock after.
	listeners map[string]LeadershipListener
	// live are the live brokers last stepped into every partition
	// (SetLiveBrokers); mu is taken before the partitions' replica locks.
	live struct {
		mu  sync.Mutex
		ids []int32
	}
}

// SetLiveBrokers tells every hosted partition's core the live brokers
// (sorted) when they changed (replication.LiveBrokers: a dead broker's
// caught-up replica outside the ISR no longer holds the high watermark
// back).
func (m *Manager) SetLiveBrokers(ids []int32) {
	m.live.mu.Lock()
	defer m.live.mu.Unlock()
	if len(ids) == 0 || slices.Equal(ids, m.live.ids) {
		return
	}
	m.live.ids = ids
	for _, p := range m.Hosted() {
		p.SetLiveBrokers(ids)
	}
}

// RunClock steps the clock into every hosted leader's core until the
// broker closes: ISR shrinks of followers that stopped fetching. Every
// replica.lag.time.max.ms/2, as Kafka's isr-expiration task.
func (m *Manager) RunClock() {
	t := time.NewTicker(m.o.LagTimeMax / 2)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-m.o.Closing:
			return
		}
		for _, p := range m.Hosted() {
			if p.Leads() {
				p.Tick()
			}
		}
	}
}

// New returns a manager of no partition yet.
func New(o Options) *Manager {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	m := &Manager{o: o, listeners: map[string]LeadershipListener{}}
	m.topics.byName, m.topics.byID = map[string]*Topic{}, map[engine.TopicID]*Topic{}
	if o.Dial != nil {
		m.fetchers = newFetchers(m, o.Fetch.WithDefaults())
	}
	return m
}

// NewPartition wraps an opened log of topic's partition index, offline
// until it becomes leader or follower (owner.go), with the topic's
// min.insync.replicas. mt are its metrics, nil without.
func (m *Manager) NewPartition(topic string, index int32, l *engine.Log, minInsync int32, mt *metrics.Topic) *Partition {
	p := &Partition{Topic: topic, Index: index, Log: l, Metrics: mt, m: m}
	p.minInsync.Store(minInsync)
	p.rep.mu.r = replication.New(replication.Config{Self: m.o.Self, MinInsyncReplicas: int(minInsync),
		ReplicaLagTimeMaxMs: m.o.LagTimeMax.Milliseconds()})
	p.rep.mu.waiters = map[uint64]chan error{}
	p.rep.hw.Store(l.HighWatermark())
	return p
}

// closingContext is a context of timeout that ends when the broker closes.
func (m *Manager) closingContext(timeout time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	go func() {
		select {
		case <-m.o.Closing:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}
