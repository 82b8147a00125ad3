package config

// The configuration catalogue: every topic and broker key sluice knows, as
// Kafka 3.9 defines it (LogConfig's topic keys, ServerTopicConfigSynonyms,
// DynamicBrokerConfig's dynamic keys): its type, default, valid values, the
// broker keys a topic key falls back to, and whether a broker key can change
// at run time. CreateTopics, DescribeConfigs, AlterConfigs and
// IncrementalAlterConfigs validate and describe through it. Every key
// server.properties accepts (Config.Apply) has a row here
// (broker/configs_keys_test.go walks the parser's keys against DescribeConfigs).
//
// A value comes from the first of these layers that sets it (Kafka's
// ConfigSource; layers.go and config/dynamic keep the layers):
//
//	DYNAMIC_TOPIC_CONFIG           the topic's override
//	DYNAMIC_BROKER_CONFIG          this broker's dynamic config (resource "<id>")
//	DYNAMIC_DEFAULT_BROKER_CONFIG  the cluster-wide dynamic default (resource "")
//	STATIC_BROKER_CONFIG           the configuration file and flags
//	DEFAULT_CONFIG                 Kafka's default
//
// A topic key reads the broker layers through its synonyms, in order: each
// layer is searched for all of them before the next layer (a dynamic
// log.retention.ms beats a static log.retention.hours).
//
// Keys sluice accepts without acting on them (replication, tiering and
// preallocation settings of a single node) are stored and described, as
// Kafka does with settings that have no effect in its setup. Values sluice
// cannot honour are refused with INVALID_CONFIG, never accepted and ignored.

import (
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/engine"

	"github.com/sluice-io/sluice/wire"
)

// Key is one configuration key.
type Key struct {
	Name    string
	Type    kmsg.ConfigType
	Default *string // Kafka's default as DescribeConfigs shows it; nil: none
	// check refuses a parsed value that Kafka refuses (a range, a set of
	// strings) or that sluice cannot honour; it returns why, or "".
	check func(v configValue) string
	Doc   string
	// field is the Config field the key sets (fields.go); nil: none, the
	// value is kept in Config.StaticKeys.
	field *field
	// engine (topic keys) sets the engine option a topic's value of the key
	// stands for (topic.go); nil: the key changes no log option.
	engine func(o *engine.Options, v configValue)

	// Synonyms (topic keys) are the broker keys a topic without an override
	// takes its value from, highest priority first.
	Synonyms []Synonym

	// Dynamic (broker keys): the key can change at run time, for the whole
	// cluster or one broker. topic is the topic key it is the default of,
	// unit its time unit in ms when that differs (log.retention.hours).
	Dynamic bool
	Topic   string
	unit    int64
	// PerBroker (dynamic broker keys): the key can change for one broker
	// only, never as the cluster-wide default (Kafka's PerBrokerConfigs).
	PerBroker bool
	// Undefined (broker keys): KafkaConfig does not define the key (the
	// authorizer reads it), so Kafka describes it only when set, as a key
	// of unknown type (keys_security.go).
	Undefined bool
}

// Synonym is a broker key that gives a topic key its default.
type Synonym struct {
	Name string
	unit int64 // ms per unit of the broker key; 0: the same value
}

// configValue is a parsed value.
type configValue struct {
	s    string   // normalized string form, as stored and described
	n    int64    // INT, LONG
	f    float64  // DOUBLE
	b    bool     // BOOLEAN
	list []string // LIST
}

// Error is a value or key Kafka refuses with INVALID_CONFIG.
type Error struct{ Msg string }

func (e *Error) Error() string { return e.Msg }

func invalidValue(key, value, reason string) error {
	return &Error{fmt.Sprintf("Invalid value %s for configuration %s: %s", value, key, reason)}
}

func str(s string) *string { return &s }

// listSplit is Kafka's list separator: a comma with any whitespace around.
var listSplit = regexp.MustCompile(`\s*,\s*`)

// Parse checks v against k's type and rules and returns it normalized.
func (k *Key) Parse(v string) (configValue, error) {
	out, why := k.validate(v)
	if why != "" {
		return out, invalidValue(k.Name, v, why)
	}
	return out, nil
}

// validate is parse with the reason a value is refused, "" if it is not.
func (k *Key) validate(v string) (configValue, string) {
	out, why := k.value(v)
	if why == "" && k.check != nil {
		why = k.check(out)
	}
	return out, why
}

// value is v parsed as the key's type, unchecked.
func (k *Key) value(v string) (configValue, string) {
	t := strings.TrimSpace(v)
	out := configValue{s: t}
	var err error
	switch k.Type {
	case kmsg.ConfigTypeBoolean:
		switch strings.ToLower(t) {
		case "true":
			out.b, out.s = true, "true"
		case "false":
			out.s = "false"
		default:
			return out, "Expected value to be either true or false"
		}
	case kmsg.ConfigTypeInt:
		if out.n, err = strconv.ParseInt(t, 10, 32); err != nil {
			return out, "Not a number of type INT"
		}
		out.s = strconv.FormatInt(out.n, 10)
	case kmsg.ConfigTypeLong:
		if out.n, err = strconv.ParseInt(t, 10, 64); err != nil {
			return out, "Not a number of type LONG"
		}
		out.s = strconv.FormatInt(out.n, 10)
	case kmsg.ConfigTypeShort:
		if out.n, err = strconv.ParseInt(t, 10, 16); err != nil {
			return out, "Not a number of type SHORT"
		}
		out.s = strconv.FormatInt(out.n, 10)
	case kmsg.ConfigTypeDouble:
		if out.f, err = strconv.ParseFloat(t, 64); err != nil || math.IsNaN(out.f) {
			return out, "Not a number of type DOUBLE"
		}
	case kmsg.ConfigTypeList:
		if t != "" {
			out.list = listSplit.Split(t, -1)
		}
		out.s = strings.Join(out.list, ",")
	}
	return out, ""
}

// Validators, with Kafka's messages.

func atLeast(min int64) func(configValue) string {
	return func(v configValue) string {
		if v.n < min {
			return fmt.Sprintf("Value must be at least %d", min)
		}
		return ""
	}
}

func between(min, max int64) func(configValue) string {
	return func(v configValue) string {
		switch {
		case v.n < min:
			return fmt.Sprintf("Value must be at least %d", min)
		case v.n > max:
			return fmt.Sprintf("Value must be no more than %d", max)
		}
		return ""
	}
}

func doubleBetween(min, max float64) func(configValue) string {
	return func(v configValue) string {
		switch {
		case v.f < min:
			return fmt.Sprintf("Value must be at least %v", min)
		case v.f > max:
			return fmt.Sprintf("Value must be no more than %v", max)
		}
		return ""
	}
}

func oneOf(allowed ...string) func(configValue) string {
	return func(v configValue) string {
		for _, a := range allowed {
			if v.s == a {
				return ""
			}
		}
		return "String must be one of: " + strings.Join(allowed, ", ")
	}
}

// cleanupPolicy is Kafka's list check (ValidList.in("compact", "delete")):
// any order, an empty list allowed (nothing is deleted or compacted).
func cleanupPolicy(v configValue) string {
	for _, p := range v.list {
		if p != "compact" && p != "delete" {
			return "String must be one of: compact, delete"
		}
	}
	return ""
}

// ratio is Kafka's between(0, 1) on a DOUBLE.
func ratio(v configValue) string {
	switch {
	case v.f < 0:
		return "Value must be at least 0"
	case v.f > 1:
		return "Value must be no more than 1"
	}
	return ""
}

// compressionType is Kafka's set (BrokerCompressionType's names, in its
// order).
var compressionType = oneOf("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")

// timestampBound is Kafka's range, then sluice's: record timestamps are not
// checked against the broker's clock yet, so only "no bound" is honoured.
func timestampBound(v configValue) string {
	if v.n < 0 {
		return "Value must be at least 0"
	}
	if v.n != math.MaxInt64 {
		return "sluice does not check record timestamps against its clock yet: only the default, 9223372036854775807, is supported"
	}
	return ""
}

func gzipLevel(v configValue) string {
	if v.n > 9 || v.n < 1 && v.n != -1 {
		return "Value must be between 1 and 9 or equal to -1"
	}
	return ""
}

var throttledReplica = regexp.MustCompile(`^\d+:\d+$`)

// throttledReplicas is Kafka's format: "*" or partition:broker pairs.
func throttledReplicas(v configValue) string {
	if len(v.list) == 1 && v.list[0] == "*" {
		return ""
	}
	for _, r := range v.list {
		if !throttledReplica.MatchString(r) {
			return "must be the literal '*' or a list of replicas in the format partitionId:brokerId,partitionId:brokerId,..."
		}
	}
	return ""
}

var metadataVersion = regexp.MustCompile(`^(0\.(8|9|10|11)\.[0-2]|[1-3]\.[0-9]|4\.0)(-IV[0-9]+)?(\.[0-9]+)?$`)

func messageFormatVersion(v configValue) string {
	if !metadataVersion.MatchString(v.s) {
		return "Version " + v.s + " is not a valid version"
	}
	return ""
}

func remoteStorage(v configValue) string {
	if v.b {
		return "tiered storage is not available in sluice: topics cannot be configured with remote log storage"
	}
	return ""
}

const MaxLong = "9223372036854775807"

// Time units of broker synonyms, in ms.
const (
	unitMinutes = 60 * 1000
	unitHours   = 60 * unitMinutes
)

// TopicKeys are Kafka 3.9's topic-level keys, in LogConfig's order.
var TopicKeys = []Key{
	{Name: "segment.bytes", Type: kmsg.ConfigTypeInt, Default: str("1073741824"), check: atLeast(14),
		Synonyms: []Synonym{{Name: "log.segment.bytes"}},
		engine:   func(o *engine.Options, v configValue) { o.SegmentBytes = v.n },
		Doc:      "Size of a segment file: the active segment rolls before it would grow past it."},
	{Name: "segment.ms", Type: kmsg.ConfigTypeLong, Default: str("604800000"), check: atLeast(1),
		Synonyms: []Synonym{{Name: "log.roll.ms", unit: 1}, {Name: "log.roll.hours", unit: unitHours}},
		engine:   func(o *engine.Options, v configValue) { o.SegmentAge = SaturatingMs(v.n) },
		Doc:      "Age at which the active segment rolls even if not full, so that retention can delete it."},
	{Name: "segment.jitter.ms", Type: kmsg.ConfigTypeLong, Default: str("0"), check: atLeast(0),
		Synonyms: []Synonym{{Name: "log.roll.jitter.ms", unit: 1}, {Name: "log.roll.jitter.hours", unit: unitHours}},
		Doc:      "Random jitter subtracted from segment.ms in Kafka; sluice stores it without effect."},
	{Name: "segment.index.bytes", Type: kmsg.ConfigTypeInt, Default: str("10485760"), check: atLeast(4),
		Synonyms: []Synonym{{Name: "log.index.size.max.bytes"}},
		engine:   func(o *engine.Options, v configValue) { o.SegmentIndexBytes = int(v.n) },
		Doc:      "Size of each segment's offset and time index; a full index rolls the segment. A change applies from the next segment."},
	{Name: "flush.messages", Type: kmsg.ConfigTypeLong, Default: str(MaxLong), check: atLeast(1),
		Synonyms: []Synonym{{Name: "log.flush.interval.messages"}},
		engine:   func(o *engine.Options, v configValue) { o.FlushMessages = v.n },
		Doc:      "Unflushed records after which an append waits for an fsync; 1 makes every append durable before it is acknowledged."},
	{Name: "flush.ms", Type: kmsg.ConfigTypeLong, Default: str(MaxLong), check: atLeast(0),
		Synonyms: []Synonym{{Name: "log.flush.interval.ms", unit: 1}, {Name: "log.flush.scheduler.interval.ms", unit: 1}},
		engine:   flushInterval,
		Doc:      "Interval at which the log is fsynced when it holds unflushed records."},
	{Name: "retention.bytes", Type: kmsg.ConfigTypeLong, Default: str("-1"),
		Synonyms: []Synonym{{Name: "log.retention.bytes"}},
		engine:   retentionBytes,
		Doc:      "Size a partition may keep: the oldest segments beyond it are deleted. -1: no bound."},
	{Name: "retention.ms", Type: kmsg.ConfigTypeLong, Default: str("604800000"), check: atLeast(-1),
		Synonyms: []Synonym{{Name: "log.retention.ms", unit: 1}, {Name: "log.retention.minutes", unit: unitMinutes}, {Name: "log.retention.hours", unit: unitHours}},
		engine:   retentionTime,
		Doc:      "Time a segment is kept after its newest record. -1: forever."},
	{Name: "max.message.bytes", Type: kmsg.ConfigTypeInt, Default: str("1048588"), check: atLeast(0),
		Synonyms: []Synonym{{Name: "message.max.bytes"}},
		engine:   maxBatchBytes,
		Doc:      "Largest record batch the topic accepts."},
	{Name: "index.interval.bytes", Type: kmsg.ConfigTypeInt, Default: str("4096"), check: atLeast(0),
		Synonyms: []Synonym{{Name: "log.index.interval.bytes"}},
		engine:   indexInterval,
		Doc:      "Log bytes between two offset index entries."},
	{Name: "delete.retention.ms", Type: kmsg.ConfigTypeLong, Default: str("86400000"), check: atLeast(0),
		Synonyms: []Synonym{{Name: "log.cleaner.delete.retention.ms"}},
		engine: func(o *engine.Options, v configValue) {
			o.Compaction.DeleteRetention = engineDeleteRetention(SaturatingMs(v.n))
		},
		Doc: "Time a tombstone (a record with a null value) is kept on a compacted topic after the cleaner first meets it."},
	{Name: "min.compaction.lag.ms", Type: kmsg.ConfigTypeLong, Default: str("0"), check: atLeast(0),
		Synonyms: []Synonym{{Name: "log.cleaner.min.compaction.lag.ms"}},
		engine:   func(o *engine.Options, v configValue) { o.Compaction.MinCompactionLag = SaturatingMs(v.n) },
		Doc:      "Minimum time a record stays uncompacted: segments holding newer records are not cleaned."},
	{Name: "max.compaction.lag.ms", Type: kmsg.ConfigTypeLong, Default: str(MaxLong), check: atLeast(1),
		Synonyms: []Synonym{{Name: "log.cleaner.max.compaction.lag.ms"}},
		engine:   maxCompactionLag,
		Doc:      "Maximum time a record stays uncompacted: older dirty data makes the log cleanable whatever its dirty ratio."},
	{Name: "file.delete.delay.ms", Type: kmsg.ConfigTypeLong, Default: str("60000"), check: atLeast(0),
		Synonyms: []Synonym{{Name: "log.segment.delete.delay.ms"}},
		Doc:      "Delay before a deleted segment's files are removed in Kafka; sluice removes them once no reader holds them."},
	{Name: "min.cleanable.dirty.ratio", Type: kmsg.ConfigTypeDouble, Default: str("0.5"), check: ratio,
		Synonyms: []Synonym{{Name: "log.cleaner.min.cleanable.ratio"}},
		engine:   func(o *engine.Options, v configValue) { o.Compaction.MinCleanableDirtyRatio = engineRatio(v.f) },
		Doc:      "Share of a compacted log's cleanable bytes that must be dirty (not yet cleaned) before the cleaner picks it."},
	{Name: "cleanup.policy", Type: kmsg.ConfigTypeList, Default: str("delete"), check: cleanupPolicy,
		Synonyms: []Synonym{{Name: "log.cleanup.policy"}},
		Doc:      "delete: old segments are deleted by retention.ms and retention.bytes; compact: the cleaner keeps the latest record of every key; compact,delete: both; an empty list keeps every segment."},
	{Name: "unclean.leader.election.enable", Type: kmsg.ConfigTypeBoolean, Default: str("false"),
		Synonyms: []Synonym{{Name: "unclean.leader.election.enable"}},
		Doc:      "Whether an out-of-sync replica may become leader (no effect on a single node)."},
	{Name: "min.insync.replicas", Type: kmsg.ConfigTypeInt, Default: str("1"), check: atLeast(1),
		Synonyms: []Synonym{{Name: "min.insync.replicas"}},
		Doc:      "In-sync replicas an acks=all produce needs; above 1 a single node refuses such produces with NOT_ENOUGH_REPLICAS."},
	{Name: "compression.type", Type: kmsg.ConfigTypeString, Default: str("producer"), check: compressionType,
		Synonyms: []Synonym{{Name: "compression.type"}},
		Doc:      "Codec batches are stored in: producer keeps each producer's; uncompressed, gzip, snappy, lz4 or zstd recompresses (or decompresses) a batch in another codec on append."},
	{Name: "compression.gzip.level", Type: kmsg.ConfigTypeInt, Default: str("-1"), check: gzipLevel,
		Synonyms: []Synonym{{Name: "compression.gzip.level"}},
		Doc:      "Level of gzip when compression.type=gzip recompresses a batch: 1-9, or -1 for the codec's default (6)."},
	{Name: "compression.lz4.level", Type: kmsg.ConfigTypeInt, Default: str("9"), check: between(1, 17),
		Synonyms: []Synonym{{Name: "compression.lz4.level"}},
		Doc:      "Level of lz4 when compression.type=lz4 recompresses a batch: 9 is the fast compressor, other levels high compression."},
	{Name: "compression.zstd.level", Type: kmsg.ConfigTypeInt, Default: str("3"), check: between(-131072, 22),
		Synonyms: []Synonym{{Name: "compression.zstd.level"}},
		Doc:      "Level of zstd when compression.type=zstd recompresses a batch."},
	{Name: "preallocate", Type: kmsg.ConfigTypeBoolean, Default: str("false"),
		Synonyms: []Synonym{{Name: "log.preallocate"}},
		Doc:      "Preallocate segment files (sluice always reserves space ahead of appends)."},
	{Name: "message.format.version", Type: kmsg.ConfigTypeString, Default: str("3.0-IV1"), check: messageFormatVersion,
		Synonyms: []Synonym{{Name: "log.message.format.version"}},
		Doc:      "Deprecated record format version; ignored from 3.0 on, as in Kafka."},
	{Name: "message.timestamp.type", Type: kmsg.ConfigTypeString, Default: str("CreateTime"), check: oneOf("CreateTime", "LogAppendTime"),
		Synonyms: []Synonym{{Name: "log.message.timestamp.type"}},
		engine:   func(o *engine.Options, v configValue) { o.LogAppendTime = v.s == "LogAppendTime" },
		Doc:      "CreateTime keeps the producer's timestamps; LogAppendTime stamps each batch with the broker's clock."},
	{Name: "message.timestamp.difference.max.ms", Type: kmsg.ConfigTypeLong, Default: str(MaxLong), check: timestampBound,
		Synonyms: []Synonym{{Name: "log.message.timestamp.difference.max.ms"}},
		Doc:      "Deprecated bound on a record timestamp's distance from the broker's clock; only the default is supported."},
	{Name: "message.timestamp.before.max.ms", Type: kmsg.ConfigTypeLong, Default: str(MaxLong), check: timestampBound,
		Synonyms: []Synonym{{Name: "log.message.timestamp.before.max.ms"}},
		Doc:      "Bound on how far a record timestamp may lag the broker's clock; only the default is supported."},
	{Name: "message.timestamp.after.max.ms", Type: kmsg.ConfigTypeLong, Default: str(MaxLong), check: timestampBound,
		Synonyms: []Synonym{{Name: "log.message.timestamp.after.max.ms"}},
		Doc:      "Bound on how far a record timestamp may lead the broker's clock; only the default is supported."},
	{Name: "leader.replication.throttled.replicas", Type: kmsg.ConfigTypeList, Default: str(""), check: throttledReplicas,
		Doc: "Replicas (partition:broker, or * for all) whose leader sends to out-of-sync followers no faster than its leader.replication.throttled.rate (no effect on a single node)."},
	{Name: "follower.replication.throttled.replicas", Type: kmsg.ConfigTypeList, Default: str(""), check: throttledReplicas,
		Doc: "Replicas (partition:broker, or * for all) that fetch, while out of sync, no faster than their broker's follower.replication.throttled.rate (no effect on a single node)."},
	{Name: "message.downconversion.enable", Type: kmsg.ConfigTypeBoolean, Default: str("true"),
		Synonyms: []Synonym{{Name: "log.message.downconversion.enable"}},
		Doc:      "Whether old fetch versions get down-converted records (no effect: sluice serves record batch v2 only)."},
	{Name: "remote.storage.enable", Type: kmsg.ConfigTypeBoolean, Default: str("false"), check: remoteStorage,
		Doc: "Tiered storage; not available in sluice."},
	{Name: "local.retention.ms", Type: kmsg.ConfigTypeLong, Default: str("-2"), check: atLeast(-2),
		Synonyms: []Synonym{{Name: "log.local.retention.ms"}},
		Doc:      "Local retention with tiered storage (no effect: not available in sluice)."},
	{Name: "local.retention.bytes", Type: kmsg.ConfigTypeLong, Default: str("-2"), check: atLeast(-2),
		Synonyms: []Synonym{{Name: "log.local.retention.bytes"}},
		Doc:      "Local retention with tiered storage (no effect: not available in sluice)."},
	{Name: "remote.log.copy.disable", Type: kmsg.ConfigTypeBoolean, Default: str("false"),
		Doc: "Stops copying to tiered storage (no effect: not available in sluice)."},
	{Name: "remote.log.delete.on.disable", Type: kmsg.ConfigTypeBoolean, Default: str("false"),
		Doc: "Deletes tiered data when tiering is turned off (no effect: not available in sluice)."},
}

// BrokerKeys are the broker keys sluice knows: the ones it reads from its
// configuration file (read-only, as in Kafka), and the dynamic ones:
// DynamicLogConfig's (the first synonym of every topic key but
// message.format.version), producer.id.expiration.ms and the replication
// throttles' rates; and the listener and security keys (securityKeys).
// Defaults are sluice's where they differ from Kafka's (broker.id,
// listeners, log.dirs, the keystore types, the SASL mechanisms).
var BrokerKeys = []Key{
	{Name: "broker.id", Type: kmsg.ConfigTypeInt, Default: str("0"), field: num(func(c *Config) *int32 { return &c.ID }), Doc: "This broker's id."},
	{Name: "node.id", Type: kmsg.ConfigTypeInt, Default: str("0"), field: num(func(c *Config) *int32 { return &c.ID }), Doc: "This broker's id (KRaft's name for broker.id)."},
	{Name: "log.dirs", Type: kmsg.ConfigTypeString, Default: str("./sluice-data"), field: dataDirField, Doc: "Data directory (the first one)."},
	{Name: "log.dir", Type: kmsg.ConfigTypeString, Default: str("./sluice-data"), field: dataDirField, Doc: "Data directory when log.dirs is not set."},
	{Name: "num.partitions", Type: kmsg.ConfigTypeInt, Default: str("1"), field: num(func(c *Config) *int32 { return &c.NumPartitions }), Doc: "Partitions of auto-created topics and of CreateTopics with -1."},
	{Name: "default.replication.factor", Type: kmsg.ConfigTypeInt, Default: str("1"), field: num(func(c *Config) *int16 { return &c.DefaultReplicationFactor }), Doc: "Replication factor for CreateTopics with -1."},
	{Name: "auto.create.topics.enable", Type: kmsg.ConfigTypeBoolean, Default: str("true"), field: flag(func(c *Config) **bool { return &c.AutoCreateTopics }), Doc: "Whether Metadata requests create unknown topics."},
	{Name: "socket.request.max.bytes", Type: kmsg.ConfigTypeInt, Default: str("104857600"), field: num(func(c *Config) *int32 { return &c.SocketRequestMaxBytes }), Doc: "Largest request frame; larger ones close the connection."},
	// The network bounds (network.go). Kafka can change the connection
	// bounds at run time; sluice reads them when it starts.
	{Name: "queued.max.request.bytes", Type: kmsg.ConfigTypeLong, Default: str(strconv.FormatInt(DefaultRequestPool(wire.DefaultMaxFrame), 10)),
		field: requestPoolField, Doc: "Bytes requests being read or waiting to be handled may hold; requests up to 64 KiB are read in their connection's buffer and hold none. sluice's default is an eighth of the memory available to the process (Kafka's is -1, no bound); 0 or less: no bound."},
	{Name: "socket.request.receive.timeout.ms", Type: kmsg.ConfigTypeLong, Default: str("30000"),
		field: msOrNeverField(func(c *Config) *time.Duration { return &c.Network.RequestReceiveTimeout }), Doc: "sluice's bound on the time a request takes to arrive whole, from its first byte; a request slower than this closes its connection. -1: none."},
	{Name: "max.connections", Type: kmsg.ConfigTypeInt, Default: str("2147483647"), check: atLeast(0),
		field: numPtr(func(c *Config) **int32 { return &c.Network.MaxConnections }), Doc: "Connections the broker holds at most; while it has this many, it accepts no more."},
	{Name: "max.connections.per.ip", Type: kmsg.ConfigTypeInt, Default: str("2147483647"), check: atLeast(0),
		field: numPtr(func(c *Config) **int32 { return &c.Network.MaxConnectionsPerIP }), Doc: "Connections one address may hold; more from it are closed at once."},
	{Name: "max.connections.per.ip.overrides", Type: kmsg.ConfigTypeString, Default: str(""), check: connectionOverrides,
		field: connectionOverridesField, Doc: "Per-address bounds overriding max.connections.per.ip: host:count,host:count."},
	{Name: "connections.max.idle.ms", Type: kmsg.ConfigTypeLong, Default: str("600000"),
		field: msOrNeverField(func(c *Config) *time.Duration { return &c.Network.ConnectionsMaxIdle }), Doc: "A connection that sends no request for this long after its last response is closed. -1: never."},
	{Name: "log.retention.check.interval.ms", Type: kmsg.ConfigTypeLong, Default: str("300000"), field: dur(func(c *Config) *time.Duration { return &c.LogRetentionCheck }, time.Millisecond), Doc: "How often retention runs."},
	{Name: "log.roll.hours", Type: kmsg.ConfigTypeInt, Default: str("168"), Topic: "segment.ms", unit: unitHours, field: alias(retention(func(c *Config) *time.Duration { return &c.LogRoll }, time.Hour)), Doc: "segment.ms default in hours (log.roll.ms wins)."},
	{Name: "log.roll.jitter.hours", Type: kmsg.ConfigTypeInt, Default: str("0"), Topic: "segment.jitter.ms", unit: unitHours, Doc: "segment.jitter.ms default in hours."},
	{Name: "log.retention.minutes", Type: kmsg.ConfigTypeInt, Topic: "retention.ms", unit: unitMinutes, field: alias(retention(func(c *Config) *time.Duration { return &c.LogRetention }, time.Minute)), Doc: "retention.ms default in minutes (log.retention.ms wins)."},
	{Name: "log.retention.hours", Type: kmsg.ConfigTypeInt, Default: str("168"), Topic: "retention.ms", unit: unitHours, field: alias(retention(func(c *Config) *time.Duration { return &c.LogRetention }, time.Hour)), Doc: "retention.ms default in hours (log.retention.ms and .minutes win)."},
	{Name: "log.flush.scheduler.interval.ms", Type: kmsg.ConfigTypeLong, Default: str(MaxLong), Topic: "flush.ms", unit: 1, Doc: "flush.ms default when log.flush.interval.ms is not set."},
	// The cleaner's settings. Kafka reconfigures threads, buffers and
	// backoff at run time (LogCleaner.ReconfigurableConfigs); sluice's Store
	// sizes its cleaner when it opens, so they are read-only here and a
	// dynamic change is refused as Kafka refuses a read-only key.
	{Name: "log.cleaner.enable", Type: kmsg.ConfigTypeBoolean, Default: str("true"),
		field: flag(func(c *Config) **bool { return &c.Cleaner.Enable }), Doc: "Whether the background cleaner compacts logs whose cleanup.policy includes compact."},
	{Name: "log.cleaner.threads", Type: kmsg.ConfigTypeInt, Default: str("1"), check: atLeast(0),
		field: numPtr(func(c *Config) **int { return &c.Cleaner.Threads }), Doc: "Cleaner threads: how many logs are cleaned at once; 0 runs none."},
	{Name: "log.cleaner.dedupe.buffer.size", Type: kmsg.ConfigTypeLong, Default: str("134217728"),
		field: num(func(c *Config) *int64 { return &c.Cleaner.DedupeBufferSize }), Doc: "Memory of the offset maps (key to latest offset) of all cleaner threads together."},
	{Name: "log.cleaner.io.buffer.size", Type: kmsg.ConfigTypeInt, Default: str("524288"), check: atLeast(0),
		field: num(func(c *Config) *int32 { return &c.Cleaner.IOBufferSize }), Doc: "Read and write buffer memory of all cleaner threads together."},
	{Name: "log.cleaner.io.buffer.load.factor", Type: kmsg.ConfigTypeDouble, Default: str("0.9"),
		field: double(func(c *Config) *float64 { return &c.Cleaner.LoadFactor }), Doc: "How full an offset map may become before a cleaning pass stops mapping dirty records."},
	{Name: "log.cleaner.backoff.ms", Type: kmsg.ConfigTypeLong, Default: str("15000"), check: atLeast(0),
		field: durPtr(func(c *Config) **time.Duration { return &c.Cleaner.Backoff }, time.Millisecond), Doc: "How long an idle cleaner thread waits before looking for a dirty log again."},
	{Name: "log.message.format.version", Type: kmsg.ConfigTypeString, Default: str("3.0-IV1"), Topic: "message.format.version", Doc: "message.format.version default."},
	// The controller's rebalance (election.go), read when the broker
	// starts, as Kafka's.
	{Name: "auto.leader.rebalance.enable", Type: kmsg.ConfigTypeBoolean, Default: str("true"),
		field: flag(func(c *Config) **bool { return &c.Cluster.Election.AutoLeaderRebalance }), Doc: "Whether the controller moves leadership back to preferred replicas when a broker's leader imbalance is above leader.imbalance.per.broker.percentage."},
	{Name: "leader.imbalance.check.interval.seconds", Type: kmsg.ConfigTypeLong, Default: str("300"), check: atLeast(1),
		field: imbalanceCheckField, Doc: "How often the controller checks the leader imbalance."},
	{Name: "leader.imbalance.per.broker.percentage", Type: kmsg.ConfigTypeInt, Default: str("10"),
		field: numPtr(func(c *Config) **int { return &c.Cluster.Election.ImbalancePercentage }), Doc: "Share of a broker's preferred partitions, in percent, that may be led elsewhere before the controller moves them back."},
	// The group coordinator's keys (group.go), read when the broker
	// starts, as Kafka's.
	{Name: "group.initial.rebalance.delay.ms", Type: kmsg.ConfigTypeInt, Default: str("3000"),
		check: atLeast(0), field: durPtr(func(c *Config) **time.Duration { return &c.Groups.InitialRebalanceDelay }, time.Millisecond), Doc: "How long the first rebalance of an empty group waits for more members to join."},
	{Name: "group.min.session.timeout.ms", Type: kmsg.ConfigTypeInt, Default: str("6000"),
		check: atLeast(1), field: dur(func(c *Config) *time.Duration { return &c.Groups.MinSessionTimeout }, time.Millisecond), Doc: "Smallest session timeout a member may ask for."},
	{Name: "group.max.session.timeout.ms", Type: kmsg.ConfigTypeInt, Default: str("1800000"),
		check: atLeast(1), field: dur(func(c *Config) *time.Duration { return &c.Groups.MaxSessionTimeout }, time.Millisecond), Doc: "Largest session timeout a member may ask for."},
	{Name: "group.max.size", Type: kmsg.ConfigTypeInt, Default: str("2147483647"),
		check: atLeast(1), field: num(func(c *Config) *int { return &c.Groups.MaxSize }), Doc: "Members a group may have; more are refused GROUP_MAX_SIZE_REACHED."},
	{Name: "offsets.topic.num.partitions", Type: kmsg.ConfigTypeInt, Default: str("50"),
		check: atLeast(1), field: num(func(c *Config) *int32 { return &c.Groups.OffsetsPartitions }), Doc: "Partitions of __consumer_offsets, when it is created."},
	{Name: "offsets.topic.replication.factor", Type: kmsg.ConfigTypeShort, Default: str("3"),
		check: atLeast(1), field: num(func(c *Config) *int16 { return &c.Groups.OffsetsReplication }), Doc: "Replication factor of __consumer_offsets, when it is created (a single node uses 1)."},
	{Name: "offsets.topic.segment.bytes", Type: kmsg.ConfigTypeInt, Default: str("104857600"),
		check: atLeast(1), field: num(func(c *Config) *int64 { return &c.Groups.OffsetsSegmentBytes }), Doc: "Segment size of __consumer_offsets."},
	{Name: "offsets.retention.minutes", Type: kmsg.ConfigTypeInt, Default: str("10080"),
		check: atLeast(1), field: dur(func(c *Config) *time.Duration { return &c.Groups.OffsetsRetention }, time.Minute), Doc: "How long the committed offsets of a group without members are kept."},
	{Name: "offsets.retention.check.interval.ms", Type: kmsg.ConfigTypeLong, Default: str("600000"),
		check: atLeast(1), field: dur(func(c *Config) *time.Duration { return &c.Groups.OffsetsRetentionCheck }, time.Millisecond), Doc: "How often expired offsets are removed."},
	{Name: "offset.metadata.max.bytes", Type: kmsg.ConfigTypeInt, Default: str("4096"),
		check: atLeast(1), field: num(func(c *Config) *int { return &c.Groups.OffsetMetadataMax }), Doc: "Largest metadata string of a committed offset; longer ones are refused OFFSET_METADATA_TOO_LARGE."},
	// The transaction coordinator's keys (txn.go), read when the
	// broker starts. Kafka can change
	// transaction.partition.verification.enable at run time; sluice reads it
	// when it starts.
	{Name: "transaction.max.timeout.ms", Type: kmsg.ConfigTypeInt, Default: str("900000"),
		check: atLeast(1), field: dur(func(c *Config) *time.Duration { return &c.Txns.MaxTimeout }, time.Millisecond), Doc: "Largest transaction timeout a producer may ask for; more is refused INVALID_TRANSACTION_TIMEOUT."},
	{Name: "transactional.id.expiration.ms", Type: kmsg.ConfigTypeInt, Default: str("604800000"),
		check: atLeast(1), field: dur(func(c *Config) *time.Duration { return &c.Txns.IDExpiration }, time.Millisecond), Doc: "How long a transactional id no producer uses is kept."},
	{Name: "transaction.abort.timed.out.transaction.cleanup.interval.ms", Type: kmsg.ConfigTypeInt, Default: str("10000"),
		check: atLeast(1), field: dur(func(c *Config) *time.Duration { return &c.Txns.AbortCheck }, time.Millisecond), Doc: "How often transactions past their timeout are aborted."},
	{Name: "transaction.remove.expired.transaction.cleanup.interval.ms", Type: kmsg.ConfigTypeInt, Default: str("3600000"),
		check: atLeast(1), field: dur(func(c *Config) *time.Duration { return &c.Txns.ExpireCheck }, time.Millisecond), Doc: "How often expired transactional ids are removed."},
	{Name: "transaction.state.log.num.partitions", Type: kmsg.ConfigTypeInt, Default: str("50"),
		check: atLeast(1), field: num(func(c *Config) *int32 { return &c.Txns.StatePartitions }), Doc: "Partitions of __transaction_state, when it is created."},
	{Name: "transaction.state.log.replication.factor", Type: kmsg.ConfigTypeShort, Default: str("3"),
		check: atLeast(1), field: num(func(c *Config) *int16 { return &c.Txns.StateReplication }), Doc: "Replication factor of __transaction_state, when it is created (a single node uses 1)."},
	{Name: "transaction.state.log.min.isr", Type: kmsg.ConfigTypeInt, Default: str("2"),
		check: atLeast(1), field: num(func(c *Config) *int32 { return &c.Txns.StateMinISR }), Doc: "min.insync.replicas of __transaction_state (a single node uses 1)."},
	{Name: "transaction.state.log.segment.bytes", Type: kmsg.ConfigTypeInt, Default: str("104857600"),
		check: atLeast(1), field: num(func(c *Config) *int64 { return &c.Txns.StateSegmentBytes }), Doc: "Segment size of __transaction_state."},
	{Name: "transaction.partition.verification.enable", Type: kmsg.ConfigTypeBoolean, Default: str("true"),
		field: flag(func(c *Config) **bool { return &c.Txns.PartitionVerification }), Doc: "Whether a partition leader verifies with the transaction coordinator that a transactional batch's partition is in its transaction (KIP-890)."},
	// The cluster's keys (cluster.go, fetcher.go; replication/host's fetchers read them), read when
	// the broker starts. Kafka can change num.replica.fetchers at run time;
	// sluice reads it when it starts.
	{Name: "zookeeper.connect", Type: kmsg.ConfigTypeString,
		field: text(func(c *Config) *string { return &c.Cluster.ZooKeeper }), Doc: "ZooKeeper of the cluster, host:port[,host:port...][/chroot]; none: a single node."},
	{Name: "zookeeper.session.timeout.ms", Type: kmsg.ConfigTypeInt, Default: str("18000"),
		check: atLeast(1), field: dur(func(c *Config) *time.Duration { return &c.Cluster.SessionTimeout }, time.Millisecond), Doc: "A broker silent this long loses its registration, and the controller role if it had it."},
	{Name: "zookeeper.connection.timeout.ms", Type: kmsg.ConfigTypeInt,
		check: atLeast(1), field: dur(func(c *Config) *time.Duration { return &c.Cluster.ConnectionTimeout }, time.Millisecond), Doc: "How long the broker waits for a ZooKeeper session when it starts (default the session timeout)."},
	{Name: "broker.rack", Type: kmsg.ConfigTypeString,
		field: text(func(c *Config) *string { return &c.Cluster.Rack }), Doc: "This broker's rack: new topics spread each partition's replicas over racks."},
	{Name: "replica.lag.time.max.ms", Type: kmsg.ConfigTypeLong, Default: str("30000"),
		check: atLeast(1), field: dur(func(c *Config) *time.Duration { return &c.Cluster.ReplicaLagTimeMax }, time.Millisecond), Doc: "A follower that has not caught up with its leader for this long leaves the ISR."},
	{Name: "controlled.shutdown.enable", Type: kmsg.ConfigTypeBoolean, Default: str("true"),
		field: flag(func(c *Config) **bool { return &c.Cluster.ControlledShutdown }), Doc: "Whether a stopping broker first asks the controller to move its leadership away."},
	{Name: "controlled.shutdown.max.retries", Type: kmsg.ConfigTypeInt, Default: str("3"),
		check: atLeast(0), field: zeroAs(func(c *Config) *int { return &c.Cluster.ShutdownRetries }, -1), Doc: "How often a stopping broker asks again while it still leads partitions."},
	{Name: "controlled.shutdown.retry.backoff.ms", Type: kmsg.ConfigTypeLong, Default: str("5000"),
		check: atLeast(1), field: dur(func(c *Config) *time.Duration { return &c.Cluster.ShutdownRetryBackoff }, time.Millisecond), Doc: "Pause before a stopping broker asks again."},
	{Name: "num.replica.fetchers", Type: kmsg.ConfigTypeInt, Default: str("1"),
		check: atLeast(1), field: num(func(c *Config) *int { return &c.Cluster.Fetch.Fetchers }), Doc: "Fetchers per source broker, each with its own connection; a partition goes to one by its hash."},
	{Name: "replica.fetch.max.bytes", Type: kmsg.ConfigTypeInt, Default: str("1048576"),
		check: atLeast(0), field: num(func(c *Config) *int32 { return &c.Cluster.Fetch.MaxBytes }), Doc: "Bytes a follower asks per partition; a bigger first batch is still returned whole."},
	{Name: "replica.fetch.response.max.bytes", Type: kmsg.ConfigTypeInt, Default: str("10485760"),
		check: atLeast(0), field: num(func(c *Config) *int32 { return &c.Cluster.Fetch.ResponseMaxBytes }), Doc: "Bytes a follower asks per fetch, over all its partitions."},
	{Name: "replica.fetch.min.bytes", Type: kmsg.ConfigTypeInt, Default: str("1"),
		check: atLeast(1), field: num(func(c *Config) *int32 { return &c.Cluster.Fetch.MinBytes }), Doc: "The leader holds a follower's fetch until this much is there or replica.fetch.wait.max.ms passed."},
	{Name: "replica.fetch.wait.max.ms", Type: kmsg.ConfigTypeInt, Default: str("500"),
		check: atLeast(1), field: dur(func(c *Config) *time.Duration { return &c.Cluster.Fetch.WaitMax }, time.Millisecond), Doc: "Longest wait of a follower's fetch; at most replica.lag.time.max.ms."},
	{Name: "replica.fetch.backoff.ms", Type: kmsg.ConfigTypeInt, Default: str("1000"),
		check: atLeast(0), field: fetchBackoffField, Doc: "Pause after a failed fetch, and before a follower fetches records its log refused again."},
	// sluice's own observability keys (observability.go), read when the broker
	// starts; Kafka has none of them.
	{Name: "metrics.listen", Type: kmsg.ConfigTypeString,
		field: text(func(c *Config) *string { return &c.Observability.MetricsListen }), Doc: "sluice's: host:port of the HTTP listener serving /metrics, /healthz and /readyz; none: no metrics are kept."},
	{Name: "metrics.pprof.enable", Type: kmsg.ConfigTypeBoolean, Default: str("false"),
		field: onFlag(func(c *Config) *bool { return &c.Observability.Pprof }), Doc: "sluice's: /debug/pprof on the metrics listener."},
	{Name: "log.level", Type: kmsg.ConfigTypeString, Default: str("info"), check: logLevel,
		field: text(func(c *Config) *string { return &c.Observability.LogLevel }), Doc: "sluice's: debug, info, warn or error; at debug every request is logged."},
	{Name: "log.format", Type: kmsg.ConfigTypeString, Default: str("text"), check: oneOf("text", "json"),
		field: text(func(c *Config) *string { return &c.Observability.LogFormat }), Doc: "sluice's: text or json."},
	{Name: "log.slow.request.ms", Type: kmsg.ConfigTypeLong, Default: str("0"),
		check: atLeast(0), field: dur(func(c *Config) *time.Duration { return &c.Observability.SlowRequest }, time.Millisecond), Doc: "sluice's: a request that takes longer, from its last byte read to its response written, is logged at info; 0: none."},

	{Name: "log.segment.bytes", Type: kmsg.ConfigTypeInt, Default: str("1073741824"), Dynamic: true, Topic: "segment.bytes", field: num(func(c *Config) *int64 { return &c.LogSegmentBytes })},
	{Name: "log.roll.ms", Type: kmsg.ConfigTypeLong, Dynamic: true, Topic: "segment.ms", unit: 1, field: retention(func(c *Config) *time.Duration { return &c.LogRoll }, time.Millisecond)},
	{Name: "log.roll.jitter.ms", Type: kmsg.ConfigTypeLong, Dynamic: true, Topic: "segment.jitter.ms", unit: 1},
	{Name: "log.index.size.max.bytes", Type: kmsg.ConfigTypeInt, Default: str("10485760"), Dynamic: true, Topic: "segment.index.bytes", field: num(func(c *Config) *int32 { return &c.LogIndexSizeMaxBytes })},
	{Name: "log.flush.interval.messages", Type: kmsg.ConfigTypeLong, Default: str(MaxLong), Dynamic: true, Topic: "flush.messages", field: num(func(c *Config) *int64 { return &c.FlushIntervalMessages })},
	{Name: "log.flush.interval.ms", Type: kmsg.ConfigTypeLong, Dynamic: true, Topic: "flush.ms", unit: 1, field: dur(func(c *Config) *time.Duration { return &c.FlushInterval }, time.Millisecond)},
	{Name: "log.retention.bytes", Type: kmsg.ConfigTypeLong, Default: str("-1"), Dynamic: true, Topic: "retention.bytes", field: num(func(c *Config) *int64 { return &c.LogRetentionBytes })},
	{Name: "log.retention.ms", Type: kmsg.ConfigTypeLong, Dynamic: true, Topic: "retention.ms", unit: 1, field: retention(func(c *Config) *time.Duration { return &c.LogRetention }, time.Millisecond)},
	{Name: "message.max.bytes", Type: kmsg.ConfigTypeInt, Default: str("1048588"), Dynamic: true, Topic: "max.message.bytes", field: num(func(c *Config) *int32 { return &c.MessageMaxBytes })},
	{Name: "log.index.interval.bytes", Type: kmsg.ConfigTypeInt, Default: str("4096"), Dynamic: true, Topic: "index.interval.bytes", field: num(func(c *Config) *int32 { return &c.LogIndexIntervalBytes })},
	{Name: "log.cleaner.delete.retention.ms", Type: kmsg.ConfigTypeLong, Default: str("86400000"), check: atLeast(0), Dynamic: true, Topic: "delete.retention.ms", field: durPtr(func(c *Config) **time.Duration { return &c.Cleaner.DeleteRetention }, time.Millisecond)},
	{Name: "log.cleaner.min.compaction.lag.ms", Type: kmsg.ConfigTypeLong, Default: str("0"), check: atLeast(0), Dynamic: true, Topic: "min.compaction.lag.ms", field: dur(func(c *Config) *time.Duration { return &c.Cleaner.MinCompactionLag }, time.Millisecond)},
	{Name: "log.cleaner.max.compaction.lag.ms", Type: kmsg.ConfigTypeLong, Default: str(MaxLong), check: atLeast(1), Dynamic: true, Topic: "max.compaction.lag.ms", field: maxCompactionLagField},
	{Name: "log.segment.delete.delay.ms", Type: kmsg.ConfigTypeLong, Default: str("60000"), Dynamic: true, Topic: "file.delete.delay.ms"},
	{Name: "log.cleaner.min.cleanable.ratio", Type: kmsg.ConfigTypeDouble, Default: str("0.5"), check: ratio, Dynamic: true, Topic: "min.cleanable.dirty.ratio", field: doublePtr(func(c *Config) **float64 { return &c.Cleaner.MinCleanableRatio })},
	{Name: "log.cleanup.policy", Type: kmsg.ConfigTypeList, Default: str("delete"), check: cleanupPolicy, Dynamic: true, Topic: "cleanup.policy", field: textPtr(func(c *Config) **string { return &c.LogCleanupPolicy })},
	{Name: "unclean.leader.election.enable", Type: kmsg.ConfigTypeBoolean, Default: str("false"), Dynamic: true, Topic: "unclean.leader.election.enable", field: flag(func(c *Config) **bool { return &c.Cluster.Election.UncleanLeaderElection })},
	{Name: "min.insync.replicas", Type: kmsg.ConfigTypeInt, Default: str("1"), Dynamic: true, Topic: "min.insync.replicas"},
	{Name: "compression.type", Type: kmsg.ConfigTypeString, Default: str("producer"), Dynamic: true, Topic: "compression.type", field: text(func(c *Config) *string { return &c.CompressionType })},
	{Name: "compression.gzip.level", Type: kmsg.ConfigTypeInt, Default: str("-1"), Dynamic: true, Topic: "compression.gzip.level", field: num(func(c *Config) *int32 { return &c.CompressionGzipLevel })},
	{Name: "compression.lz4.level", Type: kmsg.ConfigTypeInt, Default: str("9"), Dynamic: true, Topic: "compression.lz4.level", field: num(func(c *Config) *int32 { return &c.CompressionLZ4Level })},
	{Name: "compression.zstd.level", Type: kmsg.ConfigTypeInt, Default: str("3"), Dynamic: true, Topic: "compression.zstd.level", field: num(func(c *Config) *int32 { return &c.CompressionZstdLevel })},
	{Name: "log.preallocate", Type: kmsg.ConfigTypeBoolean, Default: str("false"), Dynamic: true, Topic: "preallocate"},
	{Name: "log.message.timestamp.type", Type: kmsg.ConfigTypeString, Default: str("CreateTime"), Dynamic: true, Topic: "message.timestamp.type"},
	{Name: "log.message.timestamp.difference.max.ms", Type: kmsg.ConfigTypeLong, Default: str(MaxLong), Dynamic: true, Topic: "message.timestamp.difference.max.ms"},
	{Name: "log.message.timestamp.before.max.ms", Type: kmsg.ConfigTypeLong, Default: str(MaxLong), Dynamic: true, Topic: "message.timestamp.before.max.ms"},
	{Name: "log.message.timestamp.after.max.ms", Type: kmsg.ConfigTypeLong, Default: str(MaxLong), Dynamic: true, Topic: "message.timestamp.after.max.ms"},
	{Name: "log.message.downconversion.enable", Type: kmsg.ConfigTypeBoolean, Default: str("true"), Dynamic: true, Topic: "message.downconversion.enable"},
	{Name: "log.local.retention.ms", Type: kmsg.ConfigTypeLong, Default: str("-2"), Dynamic: true, Topic: "local.retention.ms"},
	{Name: "log.local.retention.bytes", Type: kmsg.ConfigTypeLong, Default: str("-2"), Dynamic: true, Topic: "local.retention.bytes"},
	{Name: "producer.id.expiration.ms", Type: kmsg.ConfigTypeInt, Default: str("86400000"), Dynamic: true, check: atLeast(1),
		field: dur(func(c *Config) *time.Duration { return &c.ProducerIDExpiration }, time.Millisecond), Doc: "How long an idle producer's idempotence state is kept."},
	// The replication throttles (throttle.go): Kafka's dynamic broker
	// quotas of DynamicConfig.Broker, and the static windows they are
	// measured over.
	{Name: "leader.replication.throttled.rate", Type: kmsg.ConfigTypeLong, Default: str(MaxLong), check: atLeast(0), Dynamic: true,
		Doc: "Bytes/s this broker sends, as leader, to followers of the replicas leader.replication.throttled.replicas names; out-of-sync followers of them get no records while the rate is above it."},
	{Name: "follower.replication.throttled.rate", Type: kmsg.ConfigTypeLong, Default: str(MaxLong), check: atLeast(0), Dynamic: true,
		Doc: "Bytes/s this broker fetches, as follower, for the replicas follower.replication.throttled.replicas names; out-of-sync ones are not fetched while the rate is above it."},
	{Name: "quota.window.num", Type: kmsg.ConfigTypeInt, Default: str("11"), check: atLeast(1),
		field: num(func(c *Config) *int { return &c.ClientQuotas.WindowNum }), Doc: "Samples client quotas' rates are measured over."},
	{Name: "quota.window.size.seconds", Type: kmsg.ConfigTypeInt, Default: str("1"), check: atLeast(1),
		field: dur(func(c *Config) *time.Duration { return &c.ClientQuotas.WindowSize }, time.Second), Doc: "Length of each of those samples."},
	{Name: "controller.quota.window.num", Type: kmsg.ConfigTypeInt, Default: str("11"), check: atLeast(1),
		field: num(func(c *Config) *int { return &c.ClientQuotas.ControllerWindowNum }), Doc: "Samples of controller_mutation_rate: its burst is this times controller.quota.window.size.seconds times the quota."},
	{Name: "controller.quota.window.size.seconds", Type: kmsg.ConfigTypeInt, Default: str("1"), check: atLeast(1),
		field: dur(func(c *Config) *time.Duration { return &c.ClientQuotas.ControllerWindowSize }, time.Second), Doc: "Length of each of those samples."},
	{Name: "replication.quota.window.num", Type: kmsg.ConfigTypeInt, Default: str("11"), check: atLeast(1),
		field: num(func(c *Config) *int { return &c.Cluster.QuotaWindowNum }), Doc: "Samples the replication throttles' rates are measured over."},
	{Name: "replication.quota.window.size.seconds", Type: kmsg.ConfigTypeInt, Default: str("1"), check: atLeast(1),
		field: dur(func(c *Config) *time.Duration { return &c.Cluster.QuotaWindowSize }, time.Second), Doc: "Length of each of those samples."},

	// Kafka's dynamic SASL keys of a broker's listeners
	// (DynamicListenerConfig.ReconfigurableConfigs) for GSSAPI and
	// OAUTHBEARER, per broker only. sluice serves neither mechanism: they
	// are validated, stored and described, with no effect, as a Kafka broker
	// without such a listener keeps them (librdkafka's admin tests set
	// sasl.kerberos.min.time.before.relogin). The SASL keys sluice acts on
	// are static (securityKeys, keys_security.go).
	{Name: "sasl.kerberos.service.name", Type: kmsg.ConfigTypeString, Dynamic: true, PerBroker: true, Doc: saslDoc},
	{Name: "sasl.kerberos.kinit.cmd", Type: kmsg.ConfigTypeString, Default: str("/usr/bin/kinit"), Dynamic: true, PerBroker: true, Doc: saslDoc},
	{Name: "sasl.kerberos.ticket.renew.window.factor", Type: kmsg.ConfigTypeDouble, Default: str("0.8"), Dynamic: true, PerBroker: true, Doc: saslDoc},
	{Name: "sasl.kerberos.ticket.renew.jitter", Type: kmsg.ConfigTypeDouble, Default: str("0.05"), Dynamic: true, PerBroker: true, Doc: saslDoc},
	{Name: "sasl.kerberos.min.time.before.relogin", Type: kmsg.ConfigTypeLong, Default: str("60000"), Dynamic: true, PerBroker: true, Doc: saslDoc},
	{Name: "sasl.kerberos.principal.to.local.rules", Type: kmsg.ConfigTypeList, Default: str("DEFAULT"), Dynamic: true, PerBroker: true, Doc: saslDoc},
	{Name: "sasl.login.refresh.window.factor", Type: kmsg.ConfigTypeDouble, Default: str("0.8"), Dynamic: true, PerBroker: true, check: doubleBetween(0.5, 1.0), Doc: saslDoc},
	{Name: "sasl.login.refresh.window.jitter", Type: kmsg.ConfigTypeDouble, Default: str("0.05"), Dynamic: true, PerBroker: true, check: doubleBetween(0, 0.25), Doc: saslDoc},
	{Name: "sasl.login.refresh.min.period.seconds", Type: kmsg.ConfigTypeShort, Default: str("60"), Dynamic: true, PerBroker: true, check: between(0, 900), Doc: saslDoc},
	{Name: "sasl.login.refresh.buffer.seconds", Type: kmsg.ConfigTypeShort, Default: str("300"), Dynamic: true, PerBroker: true, check: between(0, 3600), Doc: saslDoc},
}

const saslDoc = "Kafka's GSSAPI or OAUTHBEARER listener key; stored and described, no effect: sluice serves neither mechanism."

var (
	TopicKeyByName  = map[string]*Key{}
	BrokerKeyByName = map[string]*Key{}
)

func init() {
	BrokerKeys = append(BrokerKeys, securityKeys...)
	for i := range TopicKeys {
		TopicKeyByName[TopicKeys[i].Name] = &TopicKeys[i]
	}
	for i := range BrokerKeys {
		k := &BrokerKeys[i]
		if k.Topic != "" && k.Doc == "" {
			k.Doc = "Default of the topic config " + k.Topic + ": " + TopicKeyByName[k.Topic].Doc
		}
		BrokerKeyByName[k.Name] = k
	}
}

// BrokerSynonyms are the broker keys describing one broker key, in order
// (DynamicBrokerConfig.brokerConfigSynonyms).
func BrokerSynonyms(name string) []string {
	switch name {
	case "log.roll.ms", "log.roll.hours":
		return []string{"log.roll.ms", "log.roll.hours"}
	case "log.roll.jitter.ms", "log.roll.jitter.hours":
		return []string{"log.roll.jitter.ms", "log.roll.jitter.hours"}
	case "log.flush.interval.ms":
		return []string{"log.flush.interval.ms", "log.flush.scheduler.interval.ms"}
	case "log.retention.ms", "log.retention.minutes", "log.retention.hours":
		return []string{"log.retention.ms", "log.retention.minutes", "log.retention.hours"}
	}
	if base := ListenerBase(name); base != "" {
		return []string{name, base} // the listener's key, then the base key
	}
	return []string{name}
}

// TopicValueFromBroker converts a broker key's value into the topic key's
// (hours and minutes to ms; a negative log.retention.* is -1, as Kafka's
// KafkaConfig reads it). It returns v unchanged for keys without a unit.
func TopicValueFromBroker(broker, v string, unit int64) string {
	if unit == 0 {
		return v
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil {
		return v
	}
	if n < 0 && strings.HasPrefix(broker, "log.retention.") {
		return "-1"
	}
	if n > math.MaxInt64/unit {
		n = math.MaxInt64
	} else if n < math.MinInt64/unit {
		n = math.MinInt64
	} else {
		n *= unit
	}
	return strconv.FormatInt(n, 10)
}

// ValidateTopicConfig checks one topic configuration entry as Kafka does
// and returns its normalized value. It refuses values sluice cannot honour
// yet rather than accepting and ignoring them.
func ValidateTopicConfig(key string, value *string) (string, error) {
	k, ok := TopicKeyByName[key]
	if !ok {
		return "", &Error{"Unknown topic config name: " + key}
	}
	if value == nil {
		return "", &Error{"Null value not supported for topic configs: " + key}
	}
	v, err := k.Parse(*value)
	return v.s, err
}

// ValidateTopicConfigs checks a topic's complete override set: each entry,
// then the rules between keys over the effective values (Kafka's
// LogConfig.validateValues: min.compaction.lag.ms <= max.compaction.lag.ms).
// effective gives a key's value when the set does not override it.
func ValidateTopicConfigs(configs map[string]string, effective func(key string) string) error {
	for _, k := range slices.Sorted(maps.Keys(configs)) { // the first error, in key order
		v := configs[k]
		if _, err := ValidateTopicConfig(k, &v); err != nil {
			return err
		}
	}
	get := func(k string) int64 {
		v, ok := configs[k]
		if !ok {
			v = effective(k)
		}
		n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		return n
	}
	if lo, hi := get("min.compaction.lag.ms"), get("max.compaction.lag.ms"); lo > hi {
		return &Error{fmt.Sprintf("conflict topic config setting min.compaction.lag.ms (%d) > max.compaction.lag.ms (%d)", lo, hi)}
	}
	return nil
}

// ValidateBrokerConfig checks one dynamic broker entry and returns its
// normalized value. A key that is not dynamic is refused as Kafka refuses
// it; one sluice does not know at all is refused too (Kafka stores unknown
// broker keys for plugins; sluice has none, so such a key is a mistake).
func ValidateBrokerConfig(key, value string) (string, error) {
	k, ok := BrokerKeyByName[key]
	switch {
	case ReadOnlyBrokerKey(key):
		return "", &Error{fmt.Sprintf("Cannot update these configs dynamically: [%s]", key)}
	case !ok:
		return "", &Error{fmt.Sprintf("sluice cannot update broker config %s dynamically: it is not a broker config sluice knows", key)}
	}
	return checkBrokerValue(k, key, value)
}

// checkBrokerValue parses a value of broker key k, normalized, or says why
// it is refused.
func checkBrokerValue(k *Key, key, value string) (string, error) {
	v, err := k.Parse(value)
	if err != nil || k.Topic == "" {
		return v.s, err
	}
	// The value becomes the default of a topic key: it must be a valid
	// value of that key too (log.roll.ms=0 is refused as segment.ms=0 is).
	tv := TopicValueFromBroker(key, v.s, k.unit)
	if _, why := TopicKeyByName[k.Topic].validate(tv); why != "" {
		return "", invalidValue(key, value, "as the default of "+k.Topic+": "+why)
	}
	return v.s, nil
}
