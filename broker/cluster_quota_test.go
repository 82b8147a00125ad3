package broker

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A quota altered through one broker of a ZooKeeper cluster applies on
// the other (its /config/changes notification), and so does its removal.
func TestClusterClientQuotaReachesEveryBroker(t *testing.T) {
	c := startCluster(t, 2, nil)
	// Altered on a raw connection to broker 0: a client would send it to
	// any broker.
	via := c.broker(0).addr
	other := c.broker(1)
	waitQuota := func(want float64, ok bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			got, has := other.quotas.clients.Quota(0, "alice", "c1")
			if has == ok && (!ok || got == want) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("broker 1 has quota %v %v, want %v %v", got, has, want, ok)
			}
			<-tick.C // the notification is on its way
		}
	}
	rawSetQuota(t, via, userEntity("alice"), "producer_byte_rate", 5000, false)
	waitQuota(5000, true)
	both := kadm.ClientQuotaEntity{{Type: "user", Name: strPtr("alice")}, {Type: "client-id", Name: strPtr("c1")}}
	rawSetQuota(t, via, both, "producer_byte_rate", 7000, false)
	waitQuota(7000, true)
	rawSetQuota(t, via, both, "producer_byte_rate", 0, true)
	waitQuota(5000, true)
	rawSetQuota(t, via, userEntity("alice"), "producer_byte_rate", 0, true)
	waitQuota(0, false)
	// Described alike through the other broker.
	adm1 := kadm.NewClient(clusterClient(t, c.bootstrap()[1:2]))
	rawSetQuota(t, via, clientEntity("c9"), "consumer_byte_rate", 123, false)
	dq, err := adm1.DescribeClientQuotas(ctxTimeout(t, 10*time.Second), false, nil)
	if err != nil || len(dq) != 1 || dq[0].Entity.String() != "{client-id=c9}" || dq[0].Values[0].Value != 123 {
		t.Fatalf("described through broker 1: %v %v", dq, err)
	}
}

func strPtr(s string) *string { return &s }

// rawSetQuota is setQuota on a raw connection to the broker at addr.
func rawSetQuota(t testing.TB, addr string, entity kadm.ClientQuotaEntity, key string, value float64, remove bool) {
	t.Helper()
	rc := dialRaw(t, addr)
	defer rc.nc.Close()
	req := kmsg.NewPtrAlterClientQuotasRequest()
	e := kmsg.NewAlterClientQuotasRequestEntry()
	for _, c := range entity {
		ce := kmsg.NewAlterClientQuotasRequestEntryEntity()
		ce.Type, ce.Name = c.Type, c.Name
		e.Entity = append(e.Entity, ce)
	}
	op := kmsg.NewAlterClientQuotasRequestEntryOp()
	op.Key, op.Value, op.Remove = key, value, remove
	e.Ops = append(e.Ops, op)
	req.Entries = append(req.Entries, e)
	resp := rc.roundTrip(req, 1).(*kmsg.AlterClientQuotasResponse)
	if len(resp.Entries) != 1 || resp.Entries[0].ErrorCode != 0 {
		t.Fatalf("AlterClientQuotas on %s: %+v", addr, resp.Entries)
	}
}
