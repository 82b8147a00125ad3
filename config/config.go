package config

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-io/sluice/engine"
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
}

// WithDefaults fills zero fields with Kafka's defaults.
func (c Config) WithDefaults() Config {
	if c.Listen == "" {
		c.Listen = "localhost:9092"
	}
	if c.DataDir == "" {
		c.DataDir = "./sluice-data"
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

// Apply sets the fields named by Kafka keys in props. Unknown keys are
// returned so the caller can warn about them; a bad value is an error.
func (c *Config) Apply(props map[string]string) (unknown []string, err error) {
	num := func(k, v string, bits int) (int64, error) {
		n, err := strconv.ParseInt(v, 10, bits)
		if err != nil {
			return 0, fmt.Errorf("broker: config %s=%q: not a number", k, v)
		}
		return n, nil
	}
	for k, v := range props {
		var n int64
		switch k {
		case "broker.id", "node.id":
			if n, err = num(k, v, 32); err == nil {
				c.ID = int32(n)
			}
		case "listeners", "advertised.listeners", "listener.security.protocol.map",
			"inter.broker.listener.name", "security.inter.broker.protocol":
			_, err = c.applyListenerKey(k, v)
		case "log.dirs", "log.dir":
			c.DataDir = strings.Split(v, ",")[0]
		case "num.partitions":
			if n, err = num(k, v, 32); err == nil {
				c.NumPartitions = int32(n)
			}
		case "default.replication.factor":
			if n, err = num(k, v, 16); err == nil {
				c.DefaultReplicationFactor = int16(n)
			}
		case "auto.create.topics.enable":
			b, perr := strconv.ParseBool(v)
			if perr != nil {
				err = fmt.Errorf("broker: config %s=%q: not a boolean", k, v)
			}
			c.AutoCreateTopics = &b
		case "message.max.bytes":
			if n, err = num(k, v, 32); err == nil {
				c.MessageMaxBytes = int32(n)
			}
		case "socket.request.max.bytes":
			if n, err = num(k, v, 32); err == nil {
				c.SocketRequestMaxBytes = int32(n)
			}
		case "log.segment.bytes":
			if n, err = num(k, v, 32); err == nil {
				c.LogSegmentBytes = n
			}
		case "log.roll.ms", "log.roll.hours":
			if n, err = num(k, v, 64); err == nil {
				c.LogRoll = scaled(k, n)
			}
		case "log.index.size.max.bytes":
			if n, err = num(k, v, 32); err == nil {
				c.LogIndexSizeMaxBytes = int32(n)
			}
		case "log.index.interval.bytes":
			if n, err = num(k, v, 32); err == nil {
				c.LogIndexIntervalBytes = int32(n)
			}
		case "log.retention.ms", "log.retention.minutes", "log.retention.hours":
			if n, err = num(k, v, 64); err == nil {
				c.LogRetention = scaled(k, n)
			}
		case "log.retention.bytes":
			if n, err = num(k, v, 64); err == nil {
				c.LogRetentionBytes = n
			}
		case "log.retention.check.interval.ms":
			if n, err = num(k, v, 64); err == nil {
				c.LogRetentionCheck = time.Duration(n) * time.Millisecond
			}
		case "log.flush.interval.messages":
			if n, err = num(k, v, 64); err == nil {
				c.FlushIntervalMessages = n
			}
		case "log.flush.interval.ms":
			if n, err = num(k, v, 64); err == nil {
				c.FlushInterval = time.Duration(n) * time.Millisecond
			}
		case "log.cleanup.policy":
			var cv configValue
			if cv, err = BrokerKeyByName[k].Parse(v); err == nil {
				c.LogCleanupPolicy = &cv.s
			}
		case "compression.type", "compression.gzip.level", "compression.lz4.level", "compression.zstd.level":
			err = c.applyCompression(k, v)
		case "producer.id.expiration.ms": // Kafka: an int, at least 1
			if n, err = num(k, v, 32); err == nil && n < 1 {
				err = fmt.Errorf("broker: config %s=%q: must be at least 1", k, v)
			}
			c.ProducerIDExpiration = time.Duration(n) * time.Millisecond
		default:
			var ok bool
			if ok, err = c.Cleaner.Apply(k, v); ok {
				break
			}
			if ok, err = c.Network.Apply(k, v); ok {
				break
			}
			if ok, err = c.SASL.Apply(k, v); ok {
				break
			}
			if ok, err = c.TLS.Apply(k, v); ok {
				break
			}
			if ok, err = c.Cluster.Apply(k, v); ok {
				break
			}
			if ok, err = c.Observability.Apply(k, v); ok {
				break
			}
			if ok, err = c.Txns.Apply(k, v); ok {
				break
			}
			if ok, err = c.Authz.Apply(k, v); ok {
				break
			}
			if ok, err = c.ClientQuotas.Apply(k, v); ok {
				break
			}
			if ok, err = c.Groups.Apply(k, v); ok {
				break
			}
			if ck := BrokerKeyByName[k]; ck != nil && !ck.Undefined {
				// A catalogue key no field takes (min.insync.replicas,
				// log.preallocate, ...): kept as its static value.
				var s string
				if s, err = checkBrokerValue(ck, k, v); err == nil {
					if c.StaticKeys == nil {
						c.StaticKeys = map[string]string{}
					}
					c.StaticKeys[k] = s
				}
				break
			}
			unknown = append(unknown, k)
		}
		if err != nil {
			return unknown, err
		}
	}
	return unknown, nil
}

// applyCompression sets compression.type or one of its levels, validated
// as Kafka validates the key (and as the default of the topic key).
func (c *Config) applyCompression(k, v string) error {
	nv, err := ValidateBrokerConfig(k, v)
	if err != nil {
		return fmt.Errorf("broker: config %s=%q: %w", k, v, err)
	}
	if k == "compression.type" {
		c.CompressionType = nv
		return nil
	}
	n, _ := strconv.ParseInt(nv, 10, 32) // validated as an INT
	switch k {
	case "compression.gzip.level":
		c.CompressionGzipLevel = int32(n)
	case "compression.lz4.level":
		c.CompressionLZ4Level = int32(n)
	default:
		c.CompressionZstdLevel = int32(n)
	}
	return nil
}

// scaled converts a .ms, .minutes or .hours value; negative means forever.
func scaled(key string, n int64) time.Duration {
	if n < 0 {
		return -1
	}
	switch {
	case strings.HasSuffix(key, ".hours"):
		return time.Duration(n) * time.Hour
	case strings.HasSuffix(key, ".minutes"):
		return time.Duration(n) * time.Minute
	}
	return time.Duration(n) * time.Millisecond
}
