// Package quota is Kafka's client quotas (KIP-13, KIP-55, KIP-124,
// KIP-219), as its ClientQuotaManager and ClientRequestQuotaManager keep
// them, with their administration (admin.go), and the replication
// quotas (replication.go). The measures do no I/O: the caller gives every
// time.
//
//   - Types: producer_byte_rate (bytes/s of Produce requests),
//     consumer_byte_rate (bytes/s of Fetch responses), request_percentage
//     (time handling requests, as a percentage of one thread's time: 100 is
//     one thread busy all the time), controller_mutation_rate (KIP-599:
//     partitions created or deleted a second, a token bucket:
//     mutation.go).
//   - Entities: a user, a client id, or a user and client id, where either
//     may be the default entity (Default, Kafka's "<default>"). For a
//     request of user U with client id C the quota applied is the first
//     found of, in Kafka's order: (U, C), (U, <default>), (U),
//     (<default>, C), (<default>, <default>), (<default>), (C), (<default>
//     client).
//   - Clients that resolve to the same entity share one rate: its key is
//     Kafka's metric tags (Resolve), so all users of a client-id quota
//     share it, and a user's quota is shared by all its client ids.
//   - A rate is Kafka's Rate (rate.go); a request is recorded first and
//     then checked: its throttle time is ThrottleTime of the rate over its
//     bound, for request_percentage at most one window (Kafka caps it at
//     quota.window.size.seconds).
//   - Rates unused for an hour are dropped (Kafka's
//     InactiveSensorExpirationTimeSeconds).
//
// Files:
//
//   - quota.go: the types and their keys, Entity, Manager (the quotas of
//     one broker, the rates of its clients, Resolve, Record, Unrecord,
//     MaxInWindow).
//   - rate.go: Kafka's Rate over a windowed sum, Config, ThrottleTime.
//   - mutation.go: controller_mutation_rate's token bucket (Mutations).
//   - replication.go: the replication quotas (KIP-73's Replication) and
//     Now, the one monotonic clock of every quota.
//   - admin.go: Admin, the client quotas' loading from the entity configs
//     of a Store and their administration (DescribeClientQuotas,
//     AlterClientQuotas), with Kafka's codes and messages.
//
// What it may call: the standard library, franz-go's kmsg and kerr (the
// requests and codes Admin answers with), and package coordinator for the
// entity paths' names (ParseEntityPath, UserEntity, ...) only; its Store
// is an interface coordinator.Coordinator satisfies. It imports nothing
// of broker/ or above. Only Admin does I/O, through its Store; the rest
// is given every time by its caller.
//
// Lock order: Manager.mu, then a rate's mu.
package quota
