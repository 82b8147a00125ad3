// Package config is a sluice broker's configuration: the Config the broker
// is made with (config.go) and its sub-configurations, one file each
// (listeners.go, network.go, cluster.go, fetcher.go, election.go,
// cleaner.go, group.go, txn.go, authz.go, clientquota.go, sasl.go, tls.go,
// observability.go); the catalogue of every key sluice knows, with its
// type, default, synonyms, whether it can change at run time and the
// Config field it sets (keys.go, keys_security.go, topic.go; the bindings
// are fields.go's), through which CreateTopics, DescribeConfigs,
// AlterConfigs and IncrementalAlterConfigs validate and describe; parsing
// server.properties into a Config by that one table (Config.Apply) and
// filling Kafka's defaults (WithDefaults); the layers a value comes from
// (layers.go), whose static layer walks the same table back; and the
// effective values of a running broker read through its layers
// (effective.go: DescribeConfigs' chains, min.insync.replicas, unclean
// election, the replication throttles, the internal topics' configs are
// group.go's and txn.go's), so that the broker parses no Kafka key itself
// (security/tlsconf still parses the listeners' ssl.* keys).
//
// The package holds values and pure functions only: no goroutines, no
// network, no locks; the one file it reads is the cgroup's memory limit
// (memory.go), for queued.max.request.bytes' default. It depends on engine
// (the options of a topic's logs), wire (the frame size) and security/*
// (the settings they parse); broker/ and config/dynamic (the run-time
// configuration service, built on these layers) depend on it, never the
// other way.
package config
