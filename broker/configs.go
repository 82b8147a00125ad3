package broker

// The configuration catalogue: every topic and broker key sluice knows, as
// Kafka 3.9 defines it (LogConfig's topic keys, ServerTopicConfigSynonyms,
// DynamicBrokerConfig's dynamic keys): its type, default, valid values, the
// broker keys a topic key falls back to, and whether a broker key can change
// at run time. CreateTopics, DescribeConfigs, AlterConfigs and
// IncrementalAlterConfigs validate and describe through it. Every key
// server.properties accepts (Config.Apply) has a row here
// (configs_keys_test.go walks the parser's keys against DescribeConfigs).
//
// A value comes from the first of these layers that sets it (Kafka's
// ConfigSource, dynconfig.go keeps the layers):
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

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/wire"
)

// configKey is one configuration key.
type configKey struct {
	name string
	typ  kmsg.ConfigType
	def  *string // Kafka's default as DescribeConfigs shows it; nil: none
	// check refuses a parsed value that Kafka refuses (a range, a set of
	// strings) or that sluice cannot honour; it returns why, or "".
	check func(v configValue) string
	doc   string

	// synonyms (topic keys) are the broker keys a topic without an override
	// takes its value from, highest priority first.
	synonyms []synonym

	// dynamic (broker keys): the key can change at run time, for the whole
	// cluster or one broker. topic is the topic key it is the default of,
	// unit its time unit in ms when that differs (log.retention.hours).
	dynamic bool
	topic   string
	unit    int64
	// perBroker (dynamic broker keys): the key can change for one broker
	// only, never as the cluster-wide default (Kafka's PerBrokerConfigs).
	perBroker bool
	// undefined (broker keys): KafkaConfig does not define the key (the
	// authorizer reads it), so Kafka describes it only when set, as a key
	// of unknown type (configs_security.go).
	undefined bool
}

// synonym is a broker key that gives a topic key its default.
type synonym struct {
	name string
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

// configError is a value or key Kafka refuses with INVALID_CONFIG.
type configError struct{ msg string }

func (e *configError) Error() string { return e.msg }

func invalidValue(key, value, reason string) error {
	return &configError{fmt.Sprintf("Invalid value %s for configuration %s: %s", value, key, reason)}
}

func str(s string) *string { return &s }

// listSplit is Kafka's list separator: a comma with any whitespace around.
var listSplit = regexp.MustCompile(`\s*,\s*`)

// parse checks v against k's type and rules and returns it normalized.
func (k *configKey) parse(v string) (configValue, error) {
	out, why := k.validate(v)
	if why != "" {
		return out, invalidValue(k.name, v, why)
	}
	return out, nil
}

// validate is parse with the reason a value is refused, "" if it is not.
func (k *configKey) validate(v string) (configValue, string) {
	t := strings.TrimSpace(v)
	out := configValue{s: t}
	var err error
	switch k.typ {
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
	if k.check != nil {
		return out, k.check(out)
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

const maxLong = "9223372036854775807"

// Time units of broker synonyms, in ms.
const (
	unitMinutes = 60 * 1000
	unitHours   = 60 * unitMinutes
)

// topicKeys are Kafka 3.9's topic-level keys, in LogConfig's order.
var topicKeys = []configKey{
	{name: "segment.bytes", typ: kmsg.ConfigTypeInt, def: str("1073741824"), check: atLeast(14),
		synonyms: []synonym{{name: "log.segment.bytes"}},
		doc:      "Size of a segment file: the active segment rolls before it would grow past it."},
	{name: "segment.ms", typ: kmsg.ConfigTypeLong, def: str("604800000"), check: atLeast(1),
		synonyms: []synonym{{name: "log.roll.ms", unit: 1}, {name: "log.roll.hours", unit: unitHours}},
		doc:      "Age at which the active segment rolls even if not full, so that retention can delete it."},
	{name: "segment.jitter.ms", typ: kmsg.ConfigTypeLong, def: str("0"), check: atLeast(0),
		synonyms: []synonym{{name: "log.roll.jitter.ms", unit: 1}, {name: "log.roll.jitter.hours", unit: unitHours}},
		doc:      "Random jitter subtracted from segment.ms in Kafka; sluice stores it without effect."},
	{name: "segment.index.bytes", typ: kmsg.ConfigTypeInt, def: str("10485760"), check: atLeast(4),
		synonyms: []synonym{{name: "log.index.size.max.bytes"}},
		doc:      "Size of each segment's offset and time index; a full index rolls the segment. A change applies from the next segment."},
	{name: "flush.messages", typ: kmsg.ConfigTypeLong, def: str(maxLong), check: atLeast(1),
		synonyms: []synonym{{name: "log.flush.interval.messages"}},
		doc:      "Unflushed records after which an append waits for an fsync; 1 makes every append durable before it is acknowledged."},
	{name: "flush.ms", typ: kmsg.ConfigTypeLong, def: str(maxLong), check: atLeast(0),
		synonyms: []synonym{{name: "log.flush.interval.ms", unit: 1}, {name: "log.flush.scheduler.interval.ms", unit: 1}},
		doc:      "Interval at which the log is fsynced when it holds unflushed records."},
	{name: "retention.bytes", typ: kmsg.ConfigTypeLong, def: str("-1"),
		synonyms: []synonym{{name: "log.retention.bytes"}},
		doc:      "Size a partition may keep: the oldest segments beyond it are deleted. -1: no bound."},
	{name: "retention.ms", typ: kmsg.ConfigTypeLong, def: str("604800000"), check: atLeast(-1),
		synonyms: []synonym{{name: "log.retention.ms", unit: 1}, {name: "log.retention.minutes", unit: unitMinutes}, {name: "log.retention.hours", unit: unitHours}},
		doc:      "Time a segment is kept after its newest record. -1: forever."},
	{name: "max.message.bytes", typ: kmsg.ConfigTypeInt, def: str("1048588"), check: atLeast(0),
		synonyms: []synonym{{name: "message.max.bytes"}},
		doc:      "Largest record batch the topic accepts."},
	{name: "index.interval.bytes", typ: kmsg.ConfigTypeInt, def: str("4096"), check: atLeast(0),
		synonyms: []synonym{{name: "log.index.interval.bytes"}},
		doc:      "Log bytes between two offset index entries."},
	{name: "delete.retention.ms", typ: kmsg.ConfigTypeLong, def: str("86400000"), check: atLeast(0),
		synonyms: []synonym{{name: "log.cleaner.delete.retention.ms"}},
		doc:      "Time a tombstone (a record with a null value) is kept on a compacted topic after the cleaner first meets it."},
	{name: "min.compaction.lag.ms", typ: kmsg.ConfigTypeLong, def: str("0"), check: atLeast(0),
		synonyms: []synonym{{name: "log.cleaner.min.compaction.lag.ms"}},
		doc:      "Minimum time a record stays uncompacted: segments holding newer records are not cleaned."},
	{name: "max.compaction.lag.ms", typ: kmsg.ConfigTypeLong, def: str(maxLong), check: atLeast(1),
		synonyms: []synonym{{name: "log.cleaner.max.compaction.lag.ms"}},
		doc:      "Maximum time a record stays uncompacted: older dirty data makes the log cleanable whatever its dirty ratio."},
	{name: "file.delete.delay.ms", typ: kmsg.ConfigTypeLong, def: str("60000"), check: atLeast(0),
		synonyms: []synonym{{name: "log.segment.delete.delay.ms"}},
		doc:      "Delay before a deleted segment's files are removed in Kafka; sluice removes them once no reader holds them."},
	{name: "min.cleanable.dirty.ratio", typ: kmsg.ConfigTypeDouble, def: str("0.5"), check: ratio,
		synonyms: []synonym{{name: "log.cleaner.min.cleanable.ratio"}},
		doc:      "Share of a compacted log's cleanable bytes that must be dirty (not yet cleaned) before the cleaner picks it."},
	{name: "cleanup.policy", typ: kmsg.ConfigTypeList, def: str("delete"), check: cleanupPolicy,
		synonyms: []synonym{{name: "log.cleanup.policy"}},
		doc:      "delete: old segments are deleted by retention.ms and retention.bytes; compact: the cleaner keeps the latest record of every key; compact,delete: both; an empty list keeps every segment."},
	{name: "unclean.leader.election.enable", typ: kmsg.ConfigTypeBoolean, def: str("false"),
		synonyms: []synonym{{name: "unclean.leader.election.enable"}},
		doc:      "Whether an out-of-sync replica may become leader (no effect on a single node)."},
	{name: "min.insync.replicas", typ: kmsg.ConfigTypeInt, def: str("1"), check: atLeast(1),
		synonyms: []synonym{{name: "min.insync.replicas"}},
		doc:      "In-sync replicas an acks=all produce needs; above 1 a single node refuses such produces with NOT_ENOUGH_REPLICAS."},
	{name: "compression.type", typ: kmsg.ConfigTypeString, def: str("producer"), check: compressionType,
		synonyms: []synonym{{name: "compression.type"}},
		doc:      "Codec batches are stored in: producer keeps each producer's; uncompressed, gzip, snappy, lz4 or zstd recompresses (or decompresses) a batch in another codec on append."},
	{name: "compression.gzip.level", typ: kmsg.ConfigTypeInt, def: str("-1"), check: gzipLevel,
		synonyms: []synonym{{name: "compression.gzip.level"}},
		doc:      "Level of gzip when compression.type=gzip recompresses a batch: 1-9, or -1 for the codec's default (6)."},
	{name: "compression.lz4.level", typ: kmsg.ConfigTypeInt, def: str("9"), check: between(1, 17),
		synonyms: []synonym{{name: "compression.lz4.level"}},
		doc:      "Level of lz4 when compression.type=lz4 recompresses a batch: 9 is the fast compressor, other levels high compression."},
	{name: "compression.zstd.level", typ: kmsg.ConfigTypeInt, def: str("3"), check: between(-131072, 22),
		synonyms: []synonym{{name: "compression.zstd.level"}},
		doc:      "Level of zstd when compression.type=zstd recompresses a batch."},
	{name: "preallocate", typ: kmsg.ConfigTypeBoolean, def: str("false"),
		synonyms: []synonym{{name: "log.preallocate"}},
		doc:      "Preallocate segment files (sluice always reserves space ahead of appends)."},
	{name: "message.format.version", typ: kmsg.ConfigTypeString, def: str("3.0-IV1"), check: messageFormatVersion,
		synonyms: []synonym{{name: "log.message.format.version"}},
		doc:      "Deprecated record format version; ignored from 3.0 on, as in Kafka."},
	{name: "message.timestamp.type", typ: kmsg.ConfigTypeString, def: str("CreateTime"), check: oneOf("CreateTime", "LogAppendTime"),
		synonyms: []synonym{{name: "log.message.timestamp.type"}},
		doc:      "CreateTime keeps the producer's timestamps; LogAppendTime stamps each batch with the broker's clock."},
	{name: "message.timestamp.difference.max.ms", typ: kmsg.ConfigTypeLong, def: str(maxLong), check: timestampBound,
		synonyms: []synonym{{name: "log.message.timestamp.difference.max.ms"}},
		doc:      "Deprecated bound on a record timestamp's distance from the broker's clock; only the default is supported."},
	{name: "message.timestamp.before.max.ms", typ: kmsg.ConfigTypeLong, def: str(maxLong), check: timestampBound,
		synonyms: []synonym{{name: "log.message.timestamp.before.max.ms"}},
		doc:      "Bound on how far a record timestamp may lag the broker's clock; only the default is supported."},
	{name: "message.timestamp.after.max.ms", typ: kmsg.ConfigTypeLong, def: str(maxLong), check: timestampBound,
		synonyms: []synonym{{name: "log.message.timestamp.after.max.ms"}},
		doc:      "Bound on how far a record timestamp may lead the broker's clock; only the default is supported."},
	{name: "leader.replication.throttled.replicas", typ: kmsg.ConfigTypeList, def: str(""), check: throttledReplicas,
		doc: "Replicas (partition:broker, or * for all) whose leader sends to out-of-sync followers no faster than its leader.replication.throttled.rate (no effect on a single node)."},
	{name: "follower.replication.throttled.replicas", typ: kmsg.ConfigTypeList, def: str(""), check: throttledReplicas,
		doc: "Replicas (partition:broker, or * for all) that fetch, while out of sync, no faster than their broker's follower.replication.throttled.rate (no effect on a single node)."},
	{name: "message.downconversion.enable", typ: kmsg.ConfigTypeBoolean, def: str("true"),
		synonyms: []synonym{{name: "log.message.downconversion.enable"}},
		doc:      "Whether old fetch versions get down-converted records (no effect: sluice serves record batch v2 only)."},
	{name: "remote.storage.enable", typ: kmsg.ConfigTypeBoolean, def: str("false"), check: remoteStorage,
		doc: "Tiered storage; not available in sluice."},
	{name: "local.retention.ms", typ: kmsg.ConfigTypeLong, def: str("-2"), check: atLeast(-2),
		synonyms: []synonym{{name: "log.local.retention.ms"}},
		doc:      "Local retention with tiered storage (no effect: not available in sluice)."},
	{name: "local.retention.bytes", typ: kmsg.ConfigTypeLong, def: str("-2"), check: atLeast(-2),
		synonyms: []synonym{{name: "log.local.retention.bytes"}},
		doc:      "Local retention with tiered storage (no effect: not available in sluice)."},
	{name: "remote.log.copy.disable", typ: kmsg.ConfigTypeBoolean, def: str("false"),
		doc: "Stops copying to tiered storage (no effect: not available in sluice)."},
	{name: "remote.log.delete.on.disable", typ: kmsg.ConfigTypeBoolean, def: str("false"),
		doc: "Deletes tiered data when tiering is turned off (no effect: not available in sluice)."},
}

// brokerKeys are the broker keys sluice knows: the ones it reads from its
// configuration file (read-only, as in Kafka), and the dynamic ones:
// DynamicLogConfig's (the first synonym of every topic key but
// message.format.version), producer.id.expiration.ms and the replication
// throttles' rates; and the listener and security keys (securityKeys).
// Defaults are sluice's where they differ from Kafka's (broker.id,
// listeners, log.dirs, the keystore types, the SASL mechanisms).
var brokerKeys = []configKey{
	{name: "broker.id", typ: kmsg.ConfigTypeInt, def: str("0"), doc: "This broker's id."},
	{name: "node.id", typ: kmsg.ConfigTypeInt, def: str("0"), doc: "This broker's id (KRaft's name for broker.id)."},
	{name: "log.dirs", typ: kmsg.ConfigTypeString, def: str("./sluice-data"), doc: "Data directory (the first one)."},
	{name: "log.dir", typ: kmsg.ConfigTypeString, def: str("./sluice-data"), doc: "Data directory when log.dirs is not set."},
	{name: "num.partitions", typ: kmsg.ConfigTypeInt, def: str("1"), doc: "Partitions of auto-created topics and of CreateTopics with -1."},
	{name: "default.replication.factor", typ: kmsg.ConfigTypeInt, def: str("1"), doc: "Replication factor for CreateTopics with -1."},
	{name: "auto.create.topics.enable", typ: kmsg.ConfigTypeBoolean, def: str("true"), doc: "Whether Metadata requests create unknown topics."},
	{name: "socket.request.max.bytes", typ: kmsg.ConfigTypeInt, def: str("104857600"), doc: "Largest request frame; larger ones close the connection."},
	// The network bounds (netconfig.go). Kafka can change the connection
	// bounds at run time; sluice reads them when it starts.
	{name: "queued.max.request.bytes", typ: kmsg.ConfigTypeLong, def: str(strconv.FormatInt(defaultRequestPool(wire.DefaultMaxFrame), 10)),
		doc: "Bytes requests being read or waiting to be handled may hold; requests up to 64 KiB are read in their connection's buffer and hold none. sluice's default is an eighth of the memory available to the process (Kafka's is -1, no bound); 0 or less: no bound."},
	{name: "socket.request.receive.timeout.ms", typ: kmsg.ConfigTypeLong, def: str("30000"),
		doc: "sluice's bound on the time a request takes to arrive whole, from its first byte; a request slower than this closes its connection. -1: none."},
	{name: "max.connections", typ: kmsg.ConfigTypeInt, def: str("2147483647"), check: atLeast(0),
		doc: "Connections the broker holds at most; while it has this many, it accepts no more."},
	{name: "max.connections.per.ip", typ: kmsg.ConfigTypeInt, def: str("2147483647"), check: atLeast(0),
		doc: "Connections one address may hold; more from it are closed at once."},
	{name: "max.connections.per.ip.overrides", typ: kmsg.ConfigTypeString, def: str(""), check: connectionOverrides,
		doc: "Per-address bounds overriding max.connections.per.ip: host:count,host:count."},
	{name: "connections.max.idle.ms", typ: kmsg.ConfigTypeLong, def: str("600000"),
		doc: "A connection that sends no request for this long after its last response is closed. -1: never."},
	{name: "log.retention.check.interval.ms", typ: kmsg.ConfigTypeLong, def: str("300000"), doc: "How often retention runs."},
	{name: "log.roll.hours", typ: kmsg.ConfigTypeInt, def: str("168"), topic: "segment.ms", unit: unitHours, doc: "segment.ms default in hours (log.roll.ms wins)."},
	{name: "log.roll.jitter.hours", typ: kmsg.ConfigTypeInt, def: str("0"), topic: "segment.jitter.ms", unit: unitHours, doc: "segment.jitter.ms default in hours."},
	{name: "log.retention.minutes", typ: kmsg.ConfigTypeInt, topic: "retention.ms", unit: unitMinutes, doc: "retention.ms default in minutes (log.retention.ms wins)."},
	{name: "log.retention.hours", typ: kmsg.ConfigTypeInt, def: str("168"), topic: "retention.ms", unit: unitHours, doc: "retention.ms default in hours (log.retention.ms and .minutes win)."},
	{name: "log.flush.scheduler.interval.ms", typ: kmsg.ConfigTypeLong, def: str(maxLong), topic: "flush.ms", unit: 1, doc: "flush.ms default when log.flush.interval.ms is not set."},
	// The cleaner's settings. Kafka reconfigures threads, buffers and
	// backoff at run time (LogCleaner.ReconfigurableConfigs); sluice's Store
	// sizes its cleaner when it opens, so they are read-only here and a
	// dynamic change is refused as Kafka refuses a read-only key.
	{name: "log.cleaner.enable", typ: kmsg.ConfigTypeBoolean, def: str("true"),
		doc: "Whether the background cleaner compacts logs whose cleanup.policy includes compact."},
	{name: "log.cleaner.threads", typ: kmsg.ConfigTypeInt, def: str("1"), check: atLeast(0),
		doc: "Cleaner threads: how many logs are cleaned at once; 0 runs none."},
	{name: "log.cleaner.dedupe.buffer.size", typ: kmsg.ConfigTypeLong, def: str("134217728"),
		doc: "Memory of the offset maps (key to latest offset) of all cleaner threads together."},
	{name: "log.cleaner.io.buffer.size", typ: kmsg.ConfigTypeInt, def: str("524288"), check: atLeast(0),
		doc: "Read and write buffer memory of all cleaner threads together."},
	{name: "log.cleaner.io.buffer.load.factor", typ: kmsg.ConfigTypeDouble, def: str("0.9"),
		doc: "How full an offset map may become before a cleaning pass stops mapping dirty records."},
	{name: "log.cleaner.backoff.ms", typ: kmsg.ConfigTypeLong, def: str("15000"), check: atLeast(0),
		doc: "How long an idle cleaner thread waits before looking for a dirty log again."},
	{name: "log.message.format.version", typ: kmsg.ConfigTypeString, def: str("3.0-IV1"), topic: "message.format.version", doc: "message.format.version default."},
	// The controller's rebalance (electionconfig.go), read when the broker
	// starts, as Kafka's.
	{name: "auto.leader.rebalance.enable", typ: kmsg.ConfigTypeBoolean, def: str("true"),
		doc: "Whether the controller moves leadership back to preferred replicas when a broker's leader imbalance is above leader.imbalance.per.broker.percentage."},
	{name: "leader.imbalance.check.interval.seconds", typ: kmsg.ConfigTypeLong, def: str("300"), check: atLeast(1),
		doc: "How often the controller checks the leader imbalance."},
	{name: "leader.imbalance.per.broker.percentage", typ: kmsg.ConfigTypeInt, def: str("10"),
		doc: "Share of a broker's preferred partitions, in percent, that may be led elsewhere before the controller moves them back."},
	// The group coordinator's keys (groupconfig.go), read when the broker
	// starts, as Kafka's.
	{name: "group.initial.rebalance.delay.ms", typ: kmsg.ConfigTypeInt, def: str("3000"),
		doc: "How long the first rebalance of an empty group waits for more members to join."},
	{name: "group.min.session.timeout.ms", typ: kmsg.ConfigTypeInt, def: str("6000"),
		doc: "Smallest session timeout a member may ask for."},
	{name: "group.max.session.timeout.ms", typ: kmsg.ConfigTypeInt, def: str("1800000"),
		doc: "Largest session timeout a member may ask for."},
	{name: "group.max.size", typ: kmsg.ConfigTypeInt, def: str("2147483647"),
		doc: "Members a group may have; more are refused GROUP_MAX_SIZE_REACHED."},
	{name: "offsets.topic.num.partitions", typ: kmsg.ConfigTypeInt, def: str("50"),
		doc: "Partitions of __consumer_offsets, when it is created."},
	{name: "offsets.topic.replication.factor", typ: kmsg.ConfigTypeShort, def: str("3"),
		doc: "Replication factor of __consumer_offsets, when it is created (a single node uses 1)."},
	{name: "offsets.topic.segment.bytes", typ: kmsg.ConfigTypeInt, def: str("104857600"),
		doc: "Segment size of __consumer_offsets."},
	{name: "offsets.retention.minutes", typ: kmsg.ConfigTypeInt, def: str("10080"),
		doc: "How long the committed offsets of a group without members are kept."},
	{name: "offsets.retention.check.interval.ms", typ: kmsg.ConfigTypeLong, def: str("600000"),
		doc: "How often expired offsets are removed."},
	{name: "offset.metadata.max.bytes", typ: kmsg.ConfigTypeInt, def: str("4096"),
		doc: "Largest metadata string of a committed offset; longer ones are refused OFFSET_METADATA_TOO_LARGE."},
	// The transaction coordinator's keys (txnconfig.go), read when the
	// broker starts. Kafka can change
	// transaction.partition.verification.enable at run time; sluice reads it
	// when it starts.
	{name: "transaction.max.timeout.ms", typ: kmsg.ConfigTypeInt, def: str("900000"),
		doc: "Largest transaction timeout a producer may ask for; more is refused INVALID_TRANSACTION_TIMEOUT."},
	{name: "transactional.id.expiration.ms", typ: kmsg.ConfigTypeInt, def: str("604800000"),
		doc: "How long a transactional id no producer uses is kept."},
	{name: "transaction.abort.timed.out.transaction.cleanup.interval.ms", typ: kmsg.ConfigTypeInt, def: str("10000"),
		doc: "How often transactions past their timeout are aborted."},
	{name: "transaction.remove.expired.transaction.cleanup.interval.ms", typ: kmsg.ConfigTypeInt, def: str("3600000"),
		doc: "How often expired transactional ids are removed."},
	{name: "transaction.state.log.num.partitions", typ: kmsg.ConfigTypeInt, def: str("50"),
		doc: "Partitions of __transaction_state, when it is created."},
	{name: "transaction.state.log.replication.factor", typ: kmsg.ConfigTypeShort, def: str("3"),
		doc: "Replication factor of __transaction_state, when it is created (a single node uses 1)."},
	{name: "transaction.state.log.min.isr", typ: kmsg.ConfigTypeInt, def: str("2"),
		doc: "min.insync.replicas of __transaction_state (a single node uses 1)."},
	{name: "transaction.state.log.segment.bytes", typ: kmsg.ConfigTypeInt, def: str("104857600"),
		doc: "Segment size of __transaction_state."},
	{name: "transaction.partition.verification.enable", typ: kmsg.ConfigTypeBoolean, def: str("true"),
		doc: "Whether a partition leader verifies with the transaction coordinator that a transactional batch's partition is in its transaction (KIP-890)."},
	// The cluster's keys (clusterconfig.go, fetcherconfig.go), read when
	// the broker starts. Kafka can change num.replica.fetchers at run time;
	// sluice reads it when it starts.
	{name: "zookeeper.connect", typ: kmsg.ConfigTypeString,
		doc: "ZooKeeper of the cluster, host:port[,host:port...][/chroot]; none: a single node."},
	{name: "zookeeper.session.timeout.ms", typ: kmsg.ConfigTypeInt, def: str("18000"),
		doc: "A broker silent this long loses its registration, and the controller role if it had it."},
	{name: "zookeeper.connection.timeout.ms", typ: kmsg.ConfigTypeInt,
		doc: "How long the broker waits for a ZooKeeper session when it starts (default the session timeout)."},
	{name: "broker.rack", typ: kmsg.ConfigTypeString,
		doc: "This broker's rack: new topics spread each partition's replicas over racks."},
	{name: "replica.lag.time.max.ms", typ: kmsg.ConfigTypeLong, def: str("30000"),
		doc: "A follower that has not caught up with its leader for this long leaves the ISR."},
	{name: "controlled.shutdown.enable", typ: kmsg.ConfigTypeBoolean, def: str("true"),
		doc: "Whether a stopping broker first asks the controller to move its leadership away."},
	{name: "controlled.shutdown.max.retries", typ: kmsg.ConfigTypeInt, def: str("3"),
		doc: "How often a stopping broker asks again while it still leads partitions."},
	{name: "controlled.shutdown.retry.backoff.ms", typ: kmsg.ConfigTypeLong, def: str("5000"),
		doc: "Pause before a stopping broker asks again."},
	{name: "num.replica.fetchers", typ: kmsg.ConfigTypeInt, def: str("1"),
		doc: "Fetchers per source broker, each with its own connection; a partition goes to one by its hash."},
	{name: "replica.fetch.max.bytes", typ: kmsg.ConfigTypeInt, def: str("1048576"),
		doc: "Bytes a follower asks per partition; a bigger first batch is still returned whole."},
	{name: "replica.fetch.response.max.bytes", typ: kmsg.ConfigTypeInt, def: str("10485760"),
		doc: "Bytes a follower asks per fetch, over all its partitions."},
	{name: "replica.fetch.min.bytes", typ: kmsg.ConfigTypeInt, def: str("1"),
		doc: "The leader holds a follower's fetch until this much is there or replica.fetch.wait.max.ms passed."},
	{name: "replica.fetch.wait.max.ms", typ: kmsg.ConfigTypeInt, def: str("500"),
		doc: "Longest wait of a follower's fetch; at most replica.lag.time.max.ms."},
	{name: "replica.fetch.backoff.ms", typ: kmsg.ConfigTypeInt, def: str("1000"),
		doc: "Pause after a failed fetch, and before a follower fetches records its log refused again."},
	// sluice's own observability keys (obsconfig.go), read when the broker
	// starts; Kafka has none of them.
	{name: "metrics.listen", typ: kmsg.ConfigTypeString,
		doc: "sluice's: host:port of the HTTP listener serving /metrics, /healthz and /readyz; none: no metrics are kept."},
	{name: "metrics.pprof.enable", typ: kmsg.ConfigTypeBoolean, def: str("false"),
		doc: "sluice's: /debug/pprof on the metrics listener."},
	{name: "log.level", typ: kmsg.ConfigTypeString, def: str("info"),
		doc: "sluice's: debug, info, warn or error; at debug every request is logged."},
	{name: "log.format", typ: kmsg.ConfigTypeString, def: str("text"),
		doc: "sluice's: text or json."},
	{name: "log.slow.request.ms", typ: kmsg.ConfigTypeLong, def: str("0"),
		doc: "sluice's: a request that takes longer, from its last byte read to its response written, is logged at info; 0: none."},

	{name: "log.segment.bytes", typ: kmsg.ConfigTypeInt, def: str("1073741824"), dynamic: true, topic: "segment.bytes"},
	{name: "log.roll.ms", typ: kmsg.ConfigTypeLong, dynamic: true, topic: "segment.ms", unit: 1},
	{name: "log.roll.jitter.ms", typ: kmsg.ConfigTypeLong, dynamic: true, topic: "segment.jitter.ms", unit: 1},
	{name: "log.index.size.max.bytes", typ: kmsg.ConfigTypeInt, def: str("10485760"), dynamic: true, topic: "segment.index.bytes"},
	{name: "log.flush.interval.messages", typ: kmsg.ConfigTypeLong, def: str(maxLong), dynamic: true, topic: "flush.messages"},
	{name: "log.flush.interval.ms", typ: kmsg.ConfigTypeLong, dynamic: true, topic: "flush.ms", unit: 1},
	{name: "log.retention.bytes", typ: kmsg.ConfigTypeLong, def: str("-1"), dynamic: true, topic: "retention.bytes"},
	{name: "log.retention.ms", typ: kmsg.ConfigTypeLong, dynamic: true, topic: "retention.ms", unit: 1},
	{name: "message.max.bytes", typ: kmsg.ConfigTypeInt, def: str("1048588"), dynamic: true, topic: "max.message.bytes"},
	{name: "log.index.interval.bytes", typ: kmsg.ConfigTypeInt, def: str("4096"), dynamic: true, topic: "index.interval.bytes"},
	{name: "log.cleaner.delete.retention.ms", typ: kmsg.ConfigTypeLong, def: str("86400000"), check: atLeast(0), dynamic: true, topic: "delete.retention.ms"},
	{name: "log.cleaner.min.compaction.lag.ms", typ: kmsg.ConfigTypeLong, def: str("0"), check: atLeast(0), dynamic: true, topic: "min.compaction.lag.ms"},
	{name: "log.cleaner.max.compaction.lag.ms", typ: kmsg.ConfigTypeLong, def: str(maxLong), check: atLeast(1), dynamic: true, topic: "max.compaction.lag.ms"},
	{name: "log.segment.delete.delay.ms", typ: kmsg.ConfigTypeLong, def: str("60000"), dynamic: true, topic: "file.delete.delay.ms"},
	{name: "log.cleaner.min.cleanable.ratio", typ: kmsg.ConfigTypeDouble, def: str("0.5"), check: ratio, dynamic: true, topic: "min.cleanable.dirty.ratio"},
	{name: "log.cleanup.policy", typ: kmsg.ConfigTypeList, def: str("delete"), check: cleanupPolicy, dynamic: true, topic: "cleanup.policy"},
	{name: "unclean.leader.election.enable", typ: kmsg.ConfigTypeBoolean, def: str("false"), dynamic: true, topic: "unclean.leader.election.enable"},
	{name: "min.insync.replicas", typ: kmsg.ConfigTypeInt, def: str("1"), dynamic: true, topic: "min.insync.replicas"},
	{name: "compression.type", typ: kmsg.ConfigTypeString, def: str("producer"), dynamic: true, topic: "compression.type"},
	{name: "compression.gzip.level", typ: kmsg.ConfigTypeInt, def: str("-1"), dynamic: true, topic: "compression.gzip.level"},
	{name: "compression.lz4.level", typ: kmsg.ConfigTypeInt, def: str("9"), dynamic: true, topic: "compression.lz4.level"},
	{name: "compression.zstd.level", typ: kmsg.ConfigTypeInt, def: str("3"), dynamic: true, topic: "compression.zstd.level"},
	{name: "log.preallocate", typ: kmsg.ConfigTypeBoolean, def: str("false"), dynamic: true, topic: "preallocate"},
	{name: "log.message.timestamp.type", typ: kmsg.ConfigTypeString, def: str("CreateTime"), dynamic: true, topic: "message.timestamp.type"},
	{name: "log.message.timestamp.difference.max.ms", typ: kmsg.ConfigTypeLong, def: str(maxLong), dynamic: true, topic: "message.timestamp.difference.max.ms"},
	{name: "log.message.timestamp.before.max.ms", typ: kmsg.ConfigTypeLong, def: str(maxLong), dynamic: true, topic: "message.timestamp.before.max.ms"},
	{name: "log.message.timestamp.after.max.ms", typ: kmsg.ConfigTypeLong, def: str(maxLong), dynamic: true, topic: "message.timestamp.after.max.ms"},
	{name: "log.message.downconversion.enable", typ: kmsg.ConfigTypeBoolean, def: str("true"), dynamic: true, topic: "message.downconversion.enable"},
	{name: "log.local.retention.ms", typ: kmsg.ConfigTypeLong, def: str("-2"), dynamic: true, topic: "local.retention.ms"},
	{name: "log.local.retention.bytes", typ: kmsg.ConfigTypeLong, def: str("-2"), dynamic: true, topic: "local.retention.bytes"},
	{name: "producer.id.expiration.ms", typ: kmsg.ConfigTypeInt, def: str("86400000"), dynamic: true, check: atLeast(1),
		doc: "How long an idle producer's idempotence state is kept."},
	// The replication throttles (throttle.go): Kafka's dynamic broker
	// quotas of DynamicConfig.Broker, and the static windows they are
	// measured over.
	{name: "leader.replication.throttled.rate", typ: kmsg.ConfigTypeLong, def: str(maxLong), check: atLeast(0), dynamic: true,
		doc: "Bytes/s this broker sends, as leader, to followers of the replicas leader.replication.throttled.replicas names; out-of-sync followers of them get no records while the rate is above it."},
	{name: "follower.replication.throttled.rate", typ: kmsg.ConfigTypeLong, def: str(maxLong), check: atLeast(0), dynamic: true,
		doc: "Bytes/s this broker fetches, as follower, for the replicas follower.replication.throttled.replicas names; out-of-sync ones are not fetched while the rate is above it."},
	{name: "quota.window.num", typ: kmsg.ConfigTypeInt, def: str("11"), check: atLeast(1),
		doc: "Samples client quotas' rates are measured over."},
	{name: "quota.window.size.seconds", typ: kmsg.ConfigTypeInt, def: str("1"), check: atLeast(1),
		doc: "Length of each of those samples."},
	{name: "controller.quota.window.num", typ: kmsg.ConfigTypeInt, def: str("11"), check: atLeast(1),
		doc: "Samples of controller_mutation_rate: its burst is this times controller.quota.window.size.seconds times the quota."},
	{name: "controller.quota.window.size.seconds", typ: kmsg.ConfigTypeInt, def: str("1"), check: atLeast(1),
		doc: "Length of each of those samples."},
	{name: "replication.quota.window.num", typ: kmsg.ConfigTypeInt, def: str("11"), check: atLeast(1),
		doc: "Samples the replication throttles' rates are measured over."},
	{name: "replication.quota.window.size.seconds", typ: kmsg.ConfigTypeInt, def: str("1"), check: atLeast(1),
		doc: "Length of each of those samples."},

	// Kafka's dynamic SASL keys of a broker's listeners
	// (DynamicListenerConfig.ReconfigurableConfigs) for GSSAPI and
	// OAUTHBEARER, per broker only. sluice serves neither mechanism: they
	// are validated, stored and described, with no effect, as a Kafka broker
	// without such a listener keeps them (librdkafka's admin tests set
	// sasl.kerberos.min.time.before.relogin). The SASL keys sluice acts on
	// are static (securityKeys, configs_security.go).
	{name: "sasl.kerberos.service.name", typ: kmsg.ConfigTypeString, dynamic: true, perBroker: true, doc: saslDoc},
	{name: "sasl.kerberos.kinit.cmd", typ: kmsg.ConfigTypeString, def: str("/usr/bin/kinit"), dynamic: true, perBroker: true, doc: saslDoc},
	{name: "sasl.kerberos.ticket.renew.window.factor", typ: kmsg.ConfigTypeDouble, def: str("0.8"), dynamic: true, perBroker: true, doc: saslDoc},
	{name: "sasl.kerberos.ticket.renew.jitter", typ: kmsg.ConfigTypeDouble, def: str("0.05"), dynamic: true, perBroker: true, doc: saslDoc},
	{name: "sasl.kerberos.min.time.before.relogin", typ: kmsg.ConfigTypeLong, def: str("60000"), dynamic: true, perBroker: true, doc: saslDoc},
	{name: "sasl.kerberos.principal.to.local.rules", typ: kmsg.ConfigTypeList, def: str("DEFAULT"), dynamic: true, perBroker: true, doc: saslDoc},
	{name: "sasl.login.refresh.window.factor", typ: kmsg.ConfigTypeDouble, def: str("0.8"), dynamic: true, perBroker: true, check: doubleBetween(0.5, 1.0), doc: saslDoc},
	{name: "sasl.login.refresh.window.jitter", typ: kmsg.ConfigTypeDouble, def: str("0.05"), dynamic: true, perBroker: true, check: doubleBetween(0, 0.25), doc: saslDoc},
	{name: "sasl.login.refresh.min.period.seconds", typ: kmsg.ConfigTypeShort, def: str("60"), dynamic: true, perBroker: true, check: between(0, 900), doc: saslDoc},
	{name: "sasl.login.refresh.buffer.seconds", typ: kmsg.ConfigTypeShort, def: str("300"), dynamic: true, perBroker: true, check: between(0, 3600), doc: saslDoc},
}

const saslDoc = "Kafka's GSSAPI or OAUTHBEARER listener key; stored and described, no effect: sluice serves neither mechanism."

var (
	topicKeyByName  = map[string]*configKey{}
	brokerKeyByName = map[string]*configKey{}
)

func init() {
	brokerKeys = append(brokerKeys, securityKeys...)
	for i := range topicKeys {
		topicKeyByName[topicKeys[i].name] = &topicKeys[i]
	}
	for i := range brokerKeys {
		k := &brokerKeys[i]
		if k.topic != "" && k.doc == "" {
			k.doc = "Default of the topic config " + k.topic + ": " + topicKeyByName[k.topic].doc
		}
		brokerKeyByName[k.name] = k
	}
}

// brokerSynonyms are the broker keys describing one broker key, in order
// (DynamicBrokerConfig.brokerConfigSynonyms).
func brokerSynonyms(name string) []string {
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
	if base := listenerBase(name); base != "" {
		return []string{name, base} // the listener's key, then the base key
	}
	return []string{name}
}

// topicValueFromBroker converts a broker key's value into the topic key's
// (hours and minutes to ms; a negative log.retention.* is -1, as Kafka's
// KafkaConfig reads it). It returns v unchanged for keys without a unit.
func topicValueFromBroker(broker, v string, unit int64) string {
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

// validateTopicConfig checks one topic configuration entry as Kafka does
// and returns its normalized value. It refuses values sluice cannot honour
// yet rather than accepting and ignoring them.
func validateTopicConfig(key string, value *string) (string, error) {
	k, ok := topicKeyByName[key]
	if !ok {
		return "", &configError{"Unknown topic config name: " + key}
	}
	if value == nil {
		return "", &configError{"Null value not supported for topic configs: " + key}
	}
	v, err := k.parse(*value)
	return v.s, err
}

// validateTopicConfigs checks a topic's complete override set: each entry,
// then the rules between keys over the effective values (Kafka's
// LogConfig.validateValues: min.compaction.lag.ms <= max.compaction.lag.ms).
// effective gives a key's value when the set does not override it.
func validateTopicConfigs(configs map[string]string, effective func(key string) string) error {
	for _, k := range slices.Sorted(maps.Keys(configs)) { // the first error, in key order
		v := configs[k]
		if _, err := validateTopicConfig(k, &v); err != nil {
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
		return &configError{fmt.Sprintf("conflict topic config setting min.compaction.lag.ms (%d) > max.compaction.lag.ms (%d)", lo, hi)}
	}
	return nil
}

// validateBrokerConfig checks one dynamic broker entry and returns its
// normalized value. A key that is not dynamic is refused as Kafka refuses
// it; one sluice does not know at all is refused too (Kafka stores unknown
// broker keys for plugins; sluice has none, so such a key is a mistake).
func validateBrokerConfig(key, value string) (string, error) {
	k, ok := brokerKeyByName[key]
	switch {
	case readOnlyBrokerKey(key):
		return "", &configError{fmt.Sprintf("Cannot update these configs dynamically: [%s]", key)}
	case !ok:
		return "", &configError{fmt.Sprintf("sluice cannot update broker config %s dynamically: it is not a broker config sluice knows", key)}
	}
	return checkBrokerValue(k, key, value)
}

// checkBrokerValue parses a value of broker key k, normalized, or says why
// it is refused.
func checkBrokerValue(k *configKey, key, value string) (string, error) {
	v, err := k.parse(value)
	if err != nil || k.topic == "" {
		return v.s, err
	}
	// The value becomes the default of a topic key: it must be a valid
	// value of that key too (log.roll.ms=0 is refused as segment.ms=0 is).
	tv := topicValueFromBroker(key, v.s, k.unit)
	if _, why := topicKeyByName[k.topic].validate(tv); why != "" {
		return "", invalidValue(key, value, "as the default of "+k.topic+": "+why)
	}
	return v.s, nil
}
