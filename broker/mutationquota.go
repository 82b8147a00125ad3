package broker

// controller_mutation_rate (KIP-599, Kafka's ControllerMutationQuotaManager
// and its use by KafkaApis and ZkAdminManager): the partitions a user or
// client id creates or deletes, measured by security/quota (mutation.go).
//
//   - Counted: CreateTopics, each topic's partitions; CreatePartitions, the
//     partitions each topic gains; DeleteTopics, each topic's partitions.
//     Each topic is recorded in request order once it passed every other
//     check, just before it is created, grown or deleted; validate_only
//     requests record nothing.
//   - Strict from CreateTopics v6, CreatePartitions v3 and DeleteTopics v5
//     (the versions with THROTTLING_QUOTA_EXCEEDED): once the quota is
//     exceeded, the topics that follow are refused with
//     THROTTLING_QUOTA_EXCEEDED. A topic is accepted when the quota was not
//     yet exceeded before it, however many partitions it has. Older
//     versions are permissive: every topic is accepted and recorded.
//   - The response's throttle_time_ms is the larger of the mutation
//     quota's throttle time and the request quota's, and the connection is
//     muted for it (clientquotas.go).
//   - Deliberate difference: topics created automatically (Metadata's
//     allow_auto_topic_creation, the internal topics) are not recorded;
//     Kafka records them, permissively, without throttling the request.

import (
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-io/sluice/security/quota"
)

// throttlingQuotaMessage is Kafka's THROTTLING_QUOTA_EXCEEDED message.
const throttlingQuotaMessage = "The throttling quota has been exceeded."

// mutationQuota starts the request's controller mutation quota, strict
// from version strictSince (Kafka's newQuotaFor). Unbounded when no quota
// applies.
func (c *conn) mutationQuota(version, strictSince int16) *quota.Mutations {
	c.q.mut = quota.Mutations{}
	if c.q.on {
		c.q.mut = c.b.quotas.clients.Mutations(&c.q.client, version >= strictSince)
	}
	return &c.q.mut
}

// mutationRecorder is mutationQuota's recordMutations, for
// broker/cluster's topic administration.
func (c *conn) mutationRecorder(version, strictSince int16) func(int64) (int16, string) {
	mq := c.mutationQuota(version, strictSince)
	return func(n int64) (int16, string) { return recordMutations(mq, n) }
}

// recordMutations records n partitions created or deleted against mq (nil:
// none applies), and is THROTTLING_QUOTA_EXCEEDED when they are refused.
func recordMutations(mq *quota.Mutations, n int64) (int16, string) {
	if mq == nil || mq.Record(float64(n), quota.Now()) {
		return 0, ""
	}
	return kerr.ThrottlingQuotaExceeded.Code, throttlingQuotaMessage
}
