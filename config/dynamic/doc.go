// Package dynamic is a broker's run-time configuration service: the layers
// a value comes from while the broker runs, and the changes
// DescribeConfigs, AlterConfigs and IncrementalAlterConfigs read and make.
//
// It owns:
//   - service.go: the Service, built from its collaborators (Options): the
//     static layer, the two dynamic broker layers (the cluster-wide
//     default and this broker's own) read from the Store at start and
//     again on another broker's change (Changed), published as an
//     immutable config.DynamicConfigs behind an atomic pointer, so that
//     the engine Store's LogOptions callback reads them under the Store's
//     lock without taking another; a topic's overrides (TopicConfigs);
//     broker resource names ("" or this broker's id).
//   - describe.go: DescribeConfigs' entries: every key's effective value,
//     source, synonyms, read-only flag, type and documentation, secrets
//     never sent, and the resources' error codes and messages.
//   - alter.go: AlterConfigs and IncrementalAlterConfigs: resources named
//     twice, duplicate keys, null values, the operations (SET, DELETE,
//     APPEND, SUBTRACT), validate_only; alter.go's Authorize is the
//     caller's check of a resource's permission, asked before a resource
//     is described or changed.
//   - change.go: a topic's new override set or a new dynamic broker layer,
//     validated as Kafka does (config's key table), persisted in the Store
//     and applied through the Options' ApplyTopic and ApplyBroker.
//
// Error codes and messages are Kafka's: INVALID_CONFIG for a topic config
// refused, INVALID_REQUEST for a broker config refused (KAFKA-13609),
// INVALID_TOPIC_EXCEPTION, UNKNOWN_TOPIC_OR_PARTITION.
//
// Locking: a change holds Options.Admin (the broker's administration lock)
// from its validation until it is applied; the Service takes it in Alter,
// IncrementalAlter and Changed, and SetTopicConfigsLocked expects it held.
// Under it the Service calls the Store and then ApplyTopic or ApplyBroker,
// which take the broker's later locks (broker/doc.go's lock order). The
// Service has no lock of its own; Describe takes none.
//
// The package may call config (the keys, their validation, the layers),
// coordinator (the Topic type and ErrUnknownTopic: its Store is the
// metadata backend's, behind the small Store interface), engine (a topic's
// id) and franz-go's kmsg and kerr. It imports nothing of broker/ or
// replication: the broker builds the Service and gives it functions for
// what touches its logs and partitions, the topic-name rules and whether
// a topic exists.
package dynamic
