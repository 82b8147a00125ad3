package quota

// The client quotas' rates and their resolution: Manager, Entity, the
// quota types and their keys (see doc.go).

import (
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Type is a quota type.
type Type int

// The quota types, in the order of Keys.
const (
	ProducerByteRate Type = iota
	ConsumerByteRate
	RequestPercentage
	ControllerMutationRate
	NumTypes
)

// Keys are the config keys of the types, as Kafka names them.
var Keys = [NumTypes]string{"producer_byte_rate", "consumer_byte_rate", "request_percentage", "controller_mutation_rate"}

// Key is t's config key.
func (t Type) Key() string { return Keys[t] }

// TypeOf is the type of a config key.
func TypeOf(key string) (Type, bool) {
	for i, k := range Keys {
		if k == key {
			return Type(i), true
		}
	}
	return 0, false
}

// Integral reports whether t's values are whole numbers (Kafka's LONG
// keys; the others are DOUBLE).
func (t Type) Integral() bool { return t == ProducerByteRate || t == ConsumerByteRate }

// Default names the default user or client id entity (Kafka's
// ZooKeeperInternals.DEFAULT_STRING).
const Default = "<default>"

// Entity is a quota entity: a user, a client id, or both. "" is absent
// (Kafka refuses empty names); Default is the default entity.
type Entity struct {
	User, ClientID string
}

// inactive is how long a rate is kept without a record.
const inactive = time.Hour

// NanosToPercent turns handling time into request_percentage's unit:
// percent-seconds of one thread (Kafka's NanosToPercentagePerSecond).
const NanosToPercent = 100.0 / float64(time.Second)

// Manager keeps the quotas of one broker and the rates of its clients.
type Manager struct {
	cfg Config
	gen atomic.Uint64 // bumped by every change that may move a client to another rate
	// enabled[t]: a quota of type t was ever set (Kafka's quotasEnabled);
	// until then nothing is recorded.
	enabled [NumTypes]atomic.Bool

	mu struct {
		sync.Mutex
		quotas    [NumTypes]map[Entity]float64
		rates     map[rateKey]*rate
		lastSweep int64
	}
}

type rateKey struct {
	t    Type
	tags Entity
}

// rate is the measured rate of one entity and its bound.
type rate struct {
	mu    sync.Mutex
	r     *Rate  // nil for ControllerMutationRate
	b     bucket // ControllerMutationRate's
	bound float64
	last  int64 // ns of the last record
}

// NewManager makes a manager with no quotas.
func NewManager(cfg Config) *Manager {
	m := &Manager{cfg: cfg.withDefaults()}
	for t := range m.mu.quotas {
		m.mu.quotas[t] = map[Entity]float64{}
	}
	m.mu.rates = map[rateKey]*rate{}
	return m
}

// Enabled reports whether any quota was ever set: until then nothing needs
// resolving or recording.
func (m *Manager) Enabled() bool {
	for t := range m.enabled {
		if m.enabled[t].Load() {
			return true
		}
	}
	return false
}

// Config is how m measures rates.
func (m *Manager) Config() Config { return m.cfg }

// Set sets (ok) or removes (!ok) the quota of type t of entity e.
func (m *Manager) Set(t Type, e Entity, value float64, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if ok {
		m.mu.quotas[t][e] = value
		m.enabled[t].Store(true)
	} else {
		delete(m.mu.quotas[t], e)
	}
	for k, r := range m.mu.rates {
		if k.t != t {
			continue
		}
		b, ok := m.limitLocked(t, k.tags)
		if !ok {
			b = math.Inf(1) // no quota now; its clients resolve again (gen)
		}
		r.mu.Lock()
		r.bound = b
		r.mu.Unlock()
	}
	m.gen.Add(1)
}

// SetEntity replaces every quota of e with values (config key to value;
// keys that are not quota types are ignored), as a changed entity config
// is applied.
func (m *Manager) SetEntity(e Entity, values map[string]float64) {
	for t := range NumTypes {
		v, ok := values[t.Key()]
		m.Set(t, e, v, ok)
	}
}

// Quota is the bound of type t that applies to user and clientID, and
// whether one does.
func (m *Manager) Quota(t Type, user, clientID string) (float64, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.limitLocked(t, m.tagsLocked(t, user, clientID))
}

// tagsLocked is Kafka's quotaMetricTags: the key of the rate user and
// clientID share with others, by the first level of the precedence that
// has a quota ((C) and (<default> client) when none has).
func (m *Manager) tagsLocked(t Type, user, clientID string) Entity {
	q := m.mu.quotas[t]
	has := func(u, c string) bool { _, ok := q[Entity{u, c}]; return ok }
	switch {
	case has(user, clientID), has(user, Default):
		return Entity{user, clientID}
	case has(user, ""):
		return Entity{user, ""}
	case has(Default, clientID), has(Default, Default):
		return Entity{user, clientID}
	case has(Default, ""):
		return Entity{user, ""}
	}
	return Entity{"", clientID}
}

// limitLocked is Kafka's quotaLimit: the bound of the rate keyed tags.
func (m *Manager) limitLocked(t Type, tags Entity) (float64, bool) {
	q := m.mu.quotas[t]
	try := func(es ...Entity) (float64, bool) {
		for _, e := range es {
			if v, ok := q[e]; ok {
				return v, true
			}
		}
		return 0, false
	}
	u, c := tags.User, tags.ClientID
	switch {
	case u != "" && c != "":
		return try(Entity{u, c}, Entity{u, Default}, Entity{Default, c}, Entity{Default, Default})
	case u != "":
		return try(Entity{u, ""}, Entity{Default, ""})
	case c != "":
		return try(Entity{"", c}, Entity{"", Default})
	}
	return 0, false
}

// Client is one connection's view of its rates: resolved once for its user
// and client id, and again only when either or the quotas change. The
// connection owns it; it is not safe for concurrent use.
type Client struct {
	gen            uint64
	user, clientID string
	resolved       bool
	rates          [NumTypes]*rate // nil: no quota of the type applies
}

// Resolve brings c up to date for user and clientID at now. It allocates
// only when it has to resolve (a first request, another user or client id,
// a changed quota).
func (m *Manager) Resolve(c *Client, user, clientID string, now int64) {
	gen := m.gen.Load()
	if c.resolved && c.gen == gen && c.user == user && c.clientID == clientID {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sweepLocked(now)
	c.gen, c.user, c.clientID, c.resolved = m.gen.Load(), user, clientID, true
	for t := range NumTypes {
		c.rates[t] = nil
		if !m.enabled[t].Load() {
			continue
		}
		tags := m.tagsLocked(t, user, clientID)
		bound, ok := m.limitLocked(t, tags)
		if !ok {
			continue
		}
		k := rateKey{t, tags}
		r := m.mu.rates[k]
		if r == nil {
			r = &rate{bound: bound, last: now}
			if t != ControllerMutationRate {
				r.r = NewRate(m.cfg)
			}
			m.mu.rates[k] = r
		}
		c.rates[t] = r
	}
}

// sweepLocked drops the rates unused for an hour, at most once a minute.
// A connection still holding one resolves again (gen moves).
func (m *Manager) sweepLocked(now int64) {
	if now-m.mu.lastSweep < int64(time.Minute) {
		return
	}
	m.mu.lastSweep = now
	dropped := false
	for k, r := range m.mu.rates {
		r.mu.Lock()
		idle := now-r.last >= int64(inactive)
		r.mu.Unlock()
		if idle {
			delete(m.mu.rates, k)
			dropped = true
		}
	}
	if dropped {
		m.gen.Add(1)
	}
}

// Limited reports whether a quota of type t applies to c.
func (c *Client) Limited(t Type) bool { return c.rates[t] != nil }

// Record adds v to c's rate of type t at now and returns how long c is to
// be throttled (0: its rate is within the quota). For RequestPercentage v
// is in NanosToPercent units. Resolve first.
func (m *Manager) Record(c *Client, t Type, v float64, now int64) time.Duration {
	r := c.rates[t]
	if r == nil || t == ControllerMutationRate {
		return 0
	}
	r.mu.Lock()
	r.r.Record(v, now)
	r.last = now
	observed := r.r.Measure(now)
	d := ThrottleTime(observed, r.bound, r.r.WindowSize(now))
	r.mu.Unlock()
	if t == RequestPercentage {
		d = min(d, m.cfg.Window)
	}
	return d
}

// Unrecord takes back v recorded at now (Kafka's unrecordQuotaSensor: a
// throttled fetch sends no records, so its bytes do not count).
func (m *Manager) Unrecord(c *Client, t Type, v float64, now int64) {
	if r := c.rates[t]; r != nil && t != ControllerMutationRate {
		r.mu.Lock()
		r.r.Record(-v, now)
		r.mu.Unlock()
	}
}

// MaxInWindow is the most of type t c may take at once without being
// throttled for certain (Kafka's getMaxValueInQuotaWindow: the bound times
// Samples-1 windows), or math.MaxFloat64 with no quota.
func (m *Manager) MaxInWindow(c *Client, t Type) float64 {
	r := c.rates[t]
	if r == nil {
		return math.MaxFloat64
	}
	r.mu.Lock()
	b := r.bound
	r.mu.Unlock()
	return b * float64(m.cfg.Samples-1) * m.cfg.Window.Seconds()
}
