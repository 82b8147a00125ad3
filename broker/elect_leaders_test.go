package broker

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// On the single node each partition's one replica leads it: kadm's
// ElectLeaders of either type gets ELECTION_NOT_NEEDED for the partitions
// it names, UNKNOWN_TOPIC_OR_PARTITION for one that does not exist, and,
// for all partitions (a null list), nothing (those not needed are left
// out, as Kafka's). v0 has no election type; an unknown type fails the
// request UNKNOWN_SERVER_ERROR, as Kafka's parse of it.
func TestElectLeadersSingleNode(t *testing.T) {
	tb := startBroker(t, t.TempDir(), nil)
	adm := tb.admin(t)
	ctx := ctxTimeout(t, 30*time.Second)
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, "e"); err != nil {
		t.Fatal(err)
	}
	for _, how := range []kadm.ElectLeadersHow{kadm.ElectPreferredReplica, kadm.ElectLiveReplica} {
		var set kadm.TopicsSet
		set.Add("e", 0, 1, 7)
		res, err := adm.ElectLeaders(ctx, how, set)
		if err != nil {
			t.Fatal(err)
		}
		for p, want := range map[int32]error{0: kerr.ElectionNotNeeded, 1: kerr.ElectionNotNeeded, 7: kerr.UnknownTopicOrPartition} {
			if r := res["e"][p]; !errors.Is(r.Err, want) {
				t.Errorf("%v e-%d: %+v, want %v", how, p, r, want)
			}
		}
		all, err := adm.ElectLeaders(ctx, how, nil)
		if err != nil || len(all) != 0 {
			t.Errorf("%v of all partitions: %+v %v, want nothing", how, all, err)
		}
	}

	rc := dialRaw(t, tb.addr)
	req := kmsg.NewPtrElectLeadersRequest()
	req.ElectionType = 1 // not sent in v0: a preferred election
	req.Topics = []kmsg.ElectLeadersRequestTopic{{Topic: "e", Partitions: []int32{0}}}
	resp := rc.roundTrip(req, 0).(*kmsg.ElectLeadersResponse)
	if len(resp.Topics) != 1 || resp.Topics[0].Partitions[0].ErrorCode != kerr.ElectionNotNeeded.Code {
		t.Fatalf("v0: %+v", resp)
	}
	req.ElectionType = 5
	resp = rc.roundTrip(req, 2).(*kmsg.ElectLeadersResponse)
	if resp.ErrorCode != kerr.UnknownServerError.Code || len(resp.Topics) != 1 || resp.Topics[0].Partitions[0].ErrorCode != kerr.UnknownServerError.Code {
		t.Fatalf("election type 5: %+v", resp)
	}
}
