package broker

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// librdkafka's 0081-admin DescribeConsumerGroups, ported with its
// assertions: librdkafka consumers (kcat -G) with static membership
// (group.instance.id), one per group, consume and close; while their
// sessions last each group is Stable with its one member, described with
// its client id, instance id and an assignment of the topic's partitions,
// and a group that never existed is Dead; DeleteGroups refuses the
// groups (a static member's close sends no LeaveGroup) until the sessions
// expire, then deletes them. The C test sleeps exactly the session timeout
// after the last close and so races the expiry by a millisecond (its last
// OffsetCommit restarts the session); this port waits for the expiry with a
// deadline instead.
func TestKcatStaticMembersDescribeDelete(t *testing.T) {
	requireKcat(t)
	tb := startBroker(t, t.TempDir(), groupTimeouts)
	tb.createTopic(t, "static-t", 4)
	produceN(t, tb, "static-t", 40)
	const session = 2 * time.Second
	var groups []string
	for i := range 2 {
		group := fmt.Sprintf("static-g%d", i)
		groups = append(groups, group)
		out := kcat(t, "", "-b", tb.addr, "-G", group, "-X", "client.id=client_id_"+fmt.Sprint(i),
			"-X", "group.instance.id=group_instance_id_"+fmt.Sprint(i),
			"-X", fmt.Sprintf("session.timeout.ms=%d", session.Milliseconds()),
			"-X", "auto.offset.reset=earliest", "-e", "-q", "-f", "%s\n", "static-t")
		if n := len(strings.Fields(out)); n != 40 {
			t.Fatalf("kcat member of %s read %d records, want 40", group, n)
		}
	}
	closed := time.Now()
	adm := tb.admin(t)
	ctx := ctxTimeout(t, 30*time.Second)
	described, err := adm.DescribeGroups(ctx, append(groups, "static-unknown")...)
	if err != nil {
		t.Fatal(err)
	}
	for i, g := range groups {
		d := described[g]
		if d.Err != nil || d.State != "Stable" || len(d.Members) != 1 {
			t.Fatalf("%s: %v, state %s, %d members; want Stable with one", g, d.Err, d.State, len(d.Members))
		}
		m := d.Members[0]
		if m.ClientID != fmt.Sprintf("client_id_%d", i) || m.InstanceID == nil || *m.InstanceID != fmt.Sprintf("group_instance_id_%d", i) {
			t.Errorf("%s: member client id %q, instance id %v", g, m.ClientID, m.InstanceID)
		}
		c, ok := m.Assigned.AsConsumer()
		if !ok || len(c.Topics) != 1 || c.Topics[0].Topic != "static-t" || len(c.Topics[0].Partitions) != 4 {
			t.Errorf("%s: assignment %+v", g, m.Assigned)
		}
	}
	if d := described["static-unknown"]; d.Err != nil || d.State != "Dead" {
		t.Errorf("a group that never existed: %v, state %s; want Dead", d.Err, d.State)
	}

	// Until the sessions expire the static members are still in their
	// groups.
	if time.Since(closed) < session/2 {
		rs, err := adm.DeleteGroups(ctx, groups...)
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range groups {
			if r := rs[g]; !errors.Is(r.Err, kerr.NonEmptyGroup) {
				t.Errorf("DeleteGroups %s right after its static member closed: %v, want NON_EMPTY_GROUP", g, r.Err)
			}
		}
	}
	pollUntil(t, "the static members' sessions to expire", func() bool {
		d, err := adm.DescribeGroups(ctx, groups...)
		if err != nil {
			return false
		}
		for _, g := range groups {
			if d[g].State != "Empty" {
				return false
			}
		}
		return true
	})
	rs, err := adm.DeleteGroups(ctx, groups...)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range groups {
		if r := rs[g]; r.Err != nil {
			t.Errorf("DeleteGroups %s after the session expired: %v", g, r.Err)
		}
	}
}
