package broker

// Client quotas (Kafka's ClientQuotaManager and ClientRequestQuotaManager,
// KIP-13, KIP-55, KIP-124, KIP-219): producer_byte_rate,
// consumer_byte_rate and request_percentage of users and client ids, kept
// in the entity configs (coordinator.EntityConfigs: /config/users and
// /config/clients in ZooKeeper, the metadata file on a single node) and
// measured by security/quota.
//
//   - Loaded at start by security/quota's Admin (its admin.go), which
//     also answers DescribeClientQuotas and AlterClientQuotas and applies
//     this broker's own changes; an entity another broker changed is
//     re-read (clientEntityHooks).
//   - The user is the connection's principal's name (User:ANONYMOUS on
//     PLAINTEXT), the client id the request header's ("" when null).
//   - Produce records the request's size, Fetch (of consumers, not of
//     followers) its records' bytes; both and every other request
//     answered record the time spent handling it (request_percentage).
//     A request over a quota is answered at once, with throttle_time_ms
//     the larger of its throttle times, and the connection then reads no
//     further request until that time has passed (KIP-219's muted channel;
//     Kafka mutes for every version, the client's own back-off depends on
//     the version). A throttled Fetch is answered with no partitions and its
//     bytes are not counted (Kafka's unrecordQuotaSensor); a consumer's
//     fetch asks for at most what the quota allows in Samples-1 windows
//     (Kafka's getMaxValueInQuotaWindow). A Produce with acks=0 has no
//     response: its request time is not counted, its bytes are, and the
//     connection is muted for them as in Kafka.
//   - Deliberate differences. request_percentage: Kafka measures the time
//     a request holds an I/O (request handler) thread and a network
//     thread, as a share of one thread; sluice has no thread pool, so it
//     measures the handler's wall time on the connection's goroutine, less
//     the waits it knows of (a fetch's long poll, acks=all's wait for
//     replication), and counts it against the same percentage of one
//     thread. JoinGroup and SyncGroup, which park until their group
//     rebalances, are not timed. The fetched bytes counted are the
//     records' bytes, not the whole encoded response Kafka counts.
//   - Exempt, as Kafka's sendResponseExemptThrottle: the controller's and
//     brokers' requests (LeaderAndIsr, StopReplica, UpdateMetadata,
//     ControlledShutdown, WriteTxnMarkers, AlterPartition) and followers'
//     fetches.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/security/quota"
	"github.com/sluice-io/sluice/wire"
)

func init() {
	clientEntityHooks = append(clientEntityHooks, func(b *Broker, path string) { b.quotas.admin.LoadEntity(path) })
}

// connQuota is a connection's quota state for the request in hand.
type connQuota struct {
	client   quota.Client
	on       bool            // quotas apply to this request (some quota is set; not exempt)
	start    int64           // quota.Now when its handling began
	waited   time.Duration   // waits not counted as request time
	timed    bool            // its request time is recorded
	bytes    int             // its size
	throttle time.Duration   // the most of its throttle times: the mute after it
	mut      quota.Mutations // its controller mutation quota (mutationquota.go)
	muteT    *time.Timer
}

// quotaExempt are the keys Kafka answers with sendResponseExemptThrottle,
// and those that park (not timed, see above).
var quotaExempt = map[int16]bool{4: true, 5: true, 6: true, 7: true, 27: true, 56: true, 11: true, 14: true}

// quotaBegin starts a request's quota accounting.
func (c *conn) quotaBegin(h wire.Header, size int) {
	q := &c.q
	q.on, q.timed, q.waited, q.throttle, q.mut = false, false, 0, 0, quota.Mutations{}
	m := c.b.quotas.clients
	if !m.Enabled() || quotaExempt[h.Key] {
		return
	}
	id := ""
	if h.ClientID != nil {
		id = *h.ClientID
	}
	q.start = quota.Now()
	m.Resolve(&q.client, c.Principal.Name, id, q.start)
	q.on, q.bytes = true, size
}

// quotaBytes records n of type t for the request.
func (c *conn) quotaBytes(t quota.Type, n int64) time.Duration {
	q := &c.q
	if !q.on || !q.client.Limited(t) {
		return 0
	}
	d := c.b.quotas.clients.Record(&q.client, t, float64(n), quota.Now())
	q.throttle = max(q.throttle, d)
	return d
}

// quotaTime records the request's handling time so far, once.
func (c *conn) quotaTime() time.Duration {
	q := &c.q
	if !q.on || q.timed {
		return 0
	}
	q.timed = true
	if !q.client.Limited(quota.RequestPercentage) {
		return 0
	}
	now := quota.Now()
	spent := max(time.Duration(now-q.start)-q.waited, 0)
	d := c.b.quotas.clients.Record(&q.client, quota.RequestPercentage, float64(spent)*quota.NanosToPercent, now)
	q.throttle = max(q.throttle, d)
	return d
}

// quotaWait notes a wait since start that is not request time.
func (c *conn) quotaWait(start time.Time) {
	if c.q.on {
		c.q.waited += time.Since(start)
	}
}

// quotaEnd records the time of a request answered with resp and sets its
// throttle_time_ms.
func (c *conn) quotaEnd(resp kmsg.Response) {
	if !c.q.on || resp == nil {
		return
	}
	c.quotaTime()
	c.q.throttle = max(c.q.throttle, c.q.mut.Throttle(quota.Now()))
	if st, ok := resp.(kmsg.SetThrottleResponse); ok && c.q.throttle > 0 {
		st.SetThrottle(throttleMillis(c.q.throttle))
	}
}

func throttleMillis(d time.Duration) int32 {
	return int32(min(d.Milliseconds(), 1<<31-1))
}

// mute waits out the last request's throttle before the next is read.
func (c *conn) mute() {
	d := c.q.throttle
	if d <= 0 {
		return
	}
	c.q.throttle = 0
	if c.q.muteT == nil {
		c.q.muteT = time.NewTimer(d)
	} else {
		c.q.muteT.Reset(d)
	}
	select {
	case <-c.q.muteT.C:
	case <-c.b.life.closing:
		c.q.muteT.Stop()
	}
}
