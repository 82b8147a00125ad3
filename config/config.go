package config

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/sluice-io/sluice/engine"
	"github.com/sluice-io/sluice/wire/interbroker"
)

// Config is a broker's configuration. Fields carry Kafka's server.properties
// key names in their comments; the zero value of a field means Kafka's
// default (see Defaults).
type Config struct {
	ID int32 // broker.id / node.id; default 0
	// Listen and Advertise are the one-listener shorthand: a PLAINTEXT
	// listener's host:port (default localhost:9092) and the address it
	// advertises (default the bound address). With Listeners set, Listen
	// is unused and Advertise, if set, is the first listener's.
	Listen    string
	Advertise string
	// Listeners is listeners, AdvertisedListeners advertised.listeners
	// (default: the listeners, at their bound addresses),
	// ListenerProtocols listener.security.protocol.map (default Kafka's),
	// InterBrokerListener inter.broker.listener.name and
	// InterBrokerProtocol security.inter.broker.protocol (listeners.go).
	Listeners           []ListenerConfig
	AdvertisedListeners []ListenerConfig
	ListenerProtocols   map[string]string
	InterBrokerListener string
	InterBrokerProtocol string
	DataDir             string // log.dirs; default ./sluice-data

	NumPartitions            int32 // num.partitions; default 1
	DefaultReplicationFactor int16 // default.replication.factor; default 1
	AutoCreateTopics         *bool // auto.create.topics.enable; default true
	MessageMaxBytes          int32 // message.max.bytes; default 1048588
	SocketRequestMaxBytes    int32 // socket.request.max.bytes; default 104857600

	LogSegmentBytes       int64         // log.segment.bytes; default 1 GiB
	LogRoll               time.Duration // log.roll.ms / log.roll.hours; default 168 h
	LogIndexSizeMaxBytes  int32         // log.index.size.max.bytes; default 10 MiB
	LogIndexIntervalBytes int32         // log.index.interval.bytes; default 4096
	LogRetention          time.Duration // log.retention.ms / .minutes / .hours; default 168 h
	LogRetentionBytes     int64         // log.retention.bytes; default -1
	LogRetentionCheck     time.Duration // log.retention.check.interval.ms; default 5 minutes
	FlushIntervalMessages int64         // log.flush.interval.messages; default none (Long.MAX_VALUE)
	FlushInterval         time.Duration // log.flush.interval.ms; default none

	ProducerIDExpiration time.Duration // producer.id.expiration.ms; default 1 day

	// LogCleanupPolicy is log.cleanup.policy, the default cleanup.policy of
	// topics: "delete", "compact", "compact,delete" or "" (keep
	// everything); nil means Kafka's default, delete.
	LogCleanupPolicy *string

	// CompressionType is compression.type, the default compression.type of
	// topics: "producer" (or "", the default) stores each producer's
	// codec; "uncompressed", "gzip", "snappy", "lz4" or "zstd" recompresses
	// a batch in another codec on append.
	CompressionType string
	// CompressionGzipLevel, CompressionLZ4Level and CompressionZstdLevel
	// are compression.gzip.level, compression.lz4.level and
	// compression.zstd.level, the defaults of the topic keys of the same
	// names; 0 means Kafka's default (-1, 9 and 3; zstd's level 0 is its 3).
	CompressionGzipLevel, CompressionLZ4Level, CompressionZstdLevel int32

	Cleaner CleanerConfig // log.cleaner.* keys

	Groups GroupConfig // group.* and offsets.* keys (group.go)

	Txns TxnConfig // transaction.* keys (txn.go)

	// Authz is the authorizer: authorizer.class.name, super.users,
	// allow.everyone.if.no.acl.found (authz.go).
	Authz AuthzConfig
	// ClientQuotas is quota.window.num, quota.window.size.seconds and
	// controller.quota.window.* (clientquota.go).
	ClientQuotas ClientQuotaConfig

	// Network bounds request memory, connections and their times:
	// queued.max.request.bytes, socket.request.receive.timeout.ms,
	// max.connections, max.connections.per.ip(.overrides),
	// connections.max.idle.ms (network.go).
	Network NetworkConfig

	// SASL is the sasl.* keys, global and listener-prefixed, and
	// connections.max.reauth.ms (sasl.go).
	SASL SASLConfig
	// TLS is the ssl.* keys of the SSL and SASL_SSL listeners (tls.go).
	TLS TLSConfig

	// Cluster is ZooKeeper mode: zookeeper.connect, its session's times and
	// broker.rack (cluster.go). Empty, the broker is the embedded
	// single node.
	Cluster ClusterConfig

	// ControlPlane fences the controller's requests (LeaderAndIsr,
	// StopReplica, UpdateMetadata; broker/controlplane.go). nil is the default:
	// ZooKeeper's controller in ZooKeeper mode, and on the embedded single
	// node none, which refuses them. Tests set it to drive the control
	// requests without a cluster.
	ControlPlane ControlPlane

	// Observability is the metrics endpoint and the logs' keys:
	// metrics.listen, metrics.pprof.enable, log.level, log.format,
	// log.slow.request.ms (observability.go).
	Observability ObservabilityConfig

	Logger *slog.Logger // default slog.Default()

	// StaticKeys are the broker keys of the catalogue (keys.go) that
	// server.properties sets and no field above takes: the static values of
	// keys Kafka also changes at run time (min.insync.replicas,
	// log.preallocate, log.message.timestamp.type, the replication
	// throttles' rates, ...), normalized as DescribeConfigs shows them. They
	// are those keys' STATIC_BROKER_CONFIG layer, below the dynamic ones:
	// the default of the topic key each stands for. Apply fills it.
	StaticKeys map[string]string

	// FS is the file system the logs live in: the engine's seam (a test's
	// faults, a simulation's disk). Default the operating system's.
	FS engine.FS
	// Transport opens every connection this broker makes to another: the
	// network's seam (a test's partitions, a simulation's network).
	// Default interbroker.TCP.
	Transport interbroker.Transport
}

// WithDefaults fills zero fields with Kafka's defaults.
func (c Config) WithDefaults() Config {
	if c.Listen == "" {
		c.Listen = "localhost:9092"
	}
	if c.DataDir == "" {
		c.DataDir = "./sluice-data"
	}
	if c.Transport == nil {
		c.Transport = interbroker.TCP{}
	}
	if c.NumPartitions <= 0 {
		c.NumPartitions = 1
	}
	if c.DefaultReplicationFactor <= 0 {
		c.DefaultReplicationFactor = 1
	}
	if c.AutoCreateTopics == nil {
		t := true
		c.AutoCreateTopics = &t
	}
	if c.MessageMaxBytes <= 0 {
		c.MessageMaxBytes = engine.DefaultMaxBatchBytes
	}
	if c.SocketRequestMaxBytes <= 0 {
		c.SocketRequestMaxBytes = 100 << 20
	}
	if c.LogSegmentBytes <= 0 {
		c.LogSegmentBytes = engine.DefaultSegmentBytes
	}
	if c.LogRoll <= 0 {
		c.LogRoll = engine.DefaultSegmentAge
	}
	if c.LogIndexSizeMaxBytes <= 0 {
		c.LogIndexSizeMaxBytes = engine.DefaultSegmentIndexBytes
	}
	if c.LogIndexIntervalBytes <= 0 {
		c.LogIndexIntervalBytes = engine.DefaultIndexIntervalBytes
	}
	if c.LogRetention == 0 {
		c.LogRetention = 7 * 24 * time.Hour
	}
	if c.LogRetentionBytes == 0 {
		c.LogRetentionBytes = -1
	}
	if c.ProducerIDExpiration <= 0 {
		c.ProducerIDExpiration = engine.DefaultProducerIDExpiration
	}
	c.Network = c.Network.WithDefaults(c.SocketRequestMaxBytes)
	c.TLS = c.TLS.WithDefaults()
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// ParseProperties reads a Java properties file (server.properties): key=value
// or key: value lines, # and ! comments, backslash line continuations.
func ParseProperties(r io.Reader) (map[string]string, error) {
	out := map[string]string{}
	sc := bufio.NewScanner(r)
	var pending string
	line := 0
	for sc.Scan() {
		line++
		s := strings.TrimLeft(sc.Text(), " \t\f")
		if pending == "" && (s == "" || s[0] == '#' || s[0] == '!') {
			continue
		}
		if strings.HasSuffix(s, `\`) && !strings.HasSuffix(s, `\\`) {
			pending += s[:len(s)-1]
			continue
		}
		s = pending + s
		pending = ""
		i := strings.IndexAny(s, "=:")
		if i < 0 {
			return nil, fmt.Errorf("broker: properties line %d: no '=' in %q", line, s)
		}
		out[strings.TrimSpace(s[:i])] = strings.TrimSpace(s[i+1:])
	}
	return out, sc.Err()
}

// Apply sets the fields named by Kafka keys in props, each through its
// catalogue row (keys.go): the value is parsed and checked as the row says
// (Key.Parse, and as the default of the topic key it stands for), then
// stored by the row's field (fields.go); a catalogue key no field takes is
// kept in StaticKeys. A listener-prefixed key (listener.name.<l>.<key>) is
// the listener's own SASL or TLS setting. Unknown keys are returned so the
// caller can warn about them; a bad value is an error naming the key.
func (c *Config) Apply(props map[string]string) (unknown []string, err error) {
	for _, k := range slices.Sorted(maps.Keys(props)) {
		v := props[k]
		if strings.HasPrefix(k, "listener.name.") {
			ok, err := c.applyListenerPrefixed(k, v)
			if err != nil {
				return unknown, err
			}
			if !ok {
				unknown = append(unknown, k)
			}
			continue
		}
		key := BrokerKeyByName[k]
		if key == nil || key.Undefined && key.field == nil {
			unknown = append(unknown, k)
			continue
		}
		cv, err := key.Parse(v)
		if err == nil && key.Topic != "" {
			_, err = checkBrokerValue(key, k, v)
		}
		if err == nil && key.field != nil {
			err = key.field.set(c, k, cv)
		}
		if err != nil {
			return unknown, fmt.Errorf("broker: config %s=%q: %w", k, v, err)
		}
		if key.field == nil {
			// A catalogue key no field takes (min.insync.replicas,
			// log.preallocate, ...): kept as its static value.
			if c.StaticKeys == nil {
				c.StaticKeys = map[string]string{}
			}
			c.StaticKeys[k] = cv.s
		}
	}
	return unknown, nil
}

// applyListenerPrefixed sets a listener's own SASL or TLS key; ok is false
// for a prefixed key neither takes.
func (c *Config) applyListenerPrefixed(k, v string) (ok bool, err error) {
	if ok, err := c.SASL.applyListener(k, v); ok {
		return true, err
	}
	if IsTLSKey(k) {
		c.TLS.setProp(k, v)
		return true, nil
	}
	return false, nil
}

// Fields of Config's own keys that the helpers of fields.go do not cover.
var (
	// log.dirs and log.dir: the first directory.
	dataDirField = custom(func(c *Config, _ string, v configValue) error {
		c.DataDir = strings.Split(v.s, ",")[0]
		return nil
	}, func(c *Config) (string, bool) { return c.DataDir, c.DataDir != "" })
)
