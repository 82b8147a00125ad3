// Package config is a sluice broker's configuration: the Config the broker
// is made with (config.go) and its sub-configurations, one file each
// (listeners.go, network.go, cluster.go, fetcher.go, election.go,
// cleaner.go, group.go, txn.go, authz.go, clientquota.go, sasl.go, tls.go,
// observability.go); parsing server.properties into it (Config.Apply, each
// sub-configuration's Apply) and filling Kafka's defaults (WithDefaults);
// the catalogue of every key sluice knows, with its type, default,
// synonyms and whether it can change at run time (keys.go,
// keys_security.go, topic.go), through which CreateTopics, DescribeConfigs,
// AlterConfigs and IncrementalAlterConfigs validate and describe; and the
// layers a value comes from (layers.go).
//
// The package holds values and pure functions only: no goroutines, no
// network, no locks; the one file it reads is the cgroup's memory limit
// (memory.go), for queued.max.request.bytes' default. It depends on engine
// (the options of a topic's logs), wire (the frame size) and security/*
// (the settings they parse); broker/ depends on it, never the other way.
package config
