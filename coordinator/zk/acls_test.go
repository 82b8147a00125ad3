package zk

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"

	"github.com/sluice-io/sluice/coordinator/zk/zktest"
	"github.com/sluice-io/sluice/security/acl"
)

// aclLog collects what an ACL watcher delivers.
type aclLog chan acl.Resource

func (l aclLog) record(r acl.Resource) { l <- r }

// expect waits (with a deadline) for want, in any order between the two
// change paths but each exactly once.
func (l aclLog) expect(t *testing.T, what string, want ...acl.Resource) {
	t.Helper()
	deadline := time.NewTimer(15 * time.Second)
	defer deadline.Stop()
	left := slices.Clone(want)
	for len(left) > 0 {
		select {
		case got := <-l:
			i := slices.Index(left, got)
			if i < 0 {
				t.Fatalf("%s: delivered %v, want one of %v", what, got, left)
			}
			left = slices.Delete(left, i, i+1)
		case <-deadline.C:
			t.Fatalf("%s: still waiting for %v", what, left)
		}
	}
}

func aclEntry(principal string, op acl.Operation, perm acl.Permission) acl.Entry {
	p, err := acl.ParsePrincipal(principal)
	if err != nil {
		panic(err)
	}
	return acl.Entry{Principal: p, Host: "*", Operation: op, Permission: perm}
}

// addACLs adds entries to r's ACLs.
func addACLs(t *testing.T, c *Client, r acl.Resource, add ...acl.Entry) []acl.Entry {
	t.Helper()
	got, err := c.UpdateACLs(r, func(cur []acl.Entry) ([]acl.Entry, error) { return acl.AddEntries(cur, add), nil })
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// The znodes and notifications are Kafka's, byte for byte; another
// session loads the ACLs and a watcher on it learns of each change; the
// last ACL removed removes the znode.
func TestACLStore(t *testing.T) {
	chroot := zktest.Chroot()
	writer := connect(t, chroot)
	if err := writer.CreateACLPaths(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/kafka-acl/Topic", "/kafka-acl/TransactionalId", "/kafka-acl-extended/prefixed/Group",
		"/kafka-acl-extended/prefixed/DelegationToken", "/kafka-acl-changes", "/kafka-acl-extended-changes"} {
		if ok, _, err := writer.conn.Exists(writer.abs(p)); !ok || err != nil {
			t.Fatalf("%s after CreateACLPaths: exists %v, %v", p, ok, err)
		}
	}
	reader := connect(t, chroot)
	l := make(aclLog, 100)
	w := WatchACLChanges(context.Background(), reader, l.record)
	defer w.Close()

	lit := acl.Resource{Type: acl.ResourceTopic, Name: "orders", Pattern: acl.PatternLiteral}
	pre := acl.Resource{Type: acl.ResourceGroup, Name: "app-", Pattern: acl.PatternPrefixed}
	read := aclEntry("User:alice", acl.OpRead, acl.Allow)
	deny := aclEntry("User:*", acl.OpDescribe, acl.Deny)
	addACLs(t, writer, lit, read)
	addACLs(t, writer, lit, read) // no change: no notification
	addACLs(t, writer, pre, deny)
	l.expect(t, "after two creations", lit, pre)

	for _, z := range []struct{ path, data string }{
		{"/kafka-acl/Topic/orders", `{"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow","operation":"Read","host":"*"}]}`},
		{"/kafka-acl-extended/prefixed/Group/app-", `{"version":1,"acls":[{"principal":"User:*","permissionType":"Deny","operation":"Describe","host":"*"}]}`},
		{"/kafka-acl-changes/acl_changes_0000000000", `TOPIC:orders`},
		{"/kafka-acl-extended-changes/acl_changes_0000000000", `{"version":1,"resourceType":"GROUP","name":"app-","patternType":"PREFIXED"}`},
	} {
		data, _, err := writer.Get(z.path)
		if err != nil || string(data) != z.data {
			t.Errorf("%s holds %s (%v), want %s", z.path, data, err, z.data)
		}
	}
	if names, _, _ := writer.conn.Children(writer.abs(ACLChangesPath)); len(names) != 1 {
		t.Errorf("literal notifications %v: the unchanged write announced a change", names)
	}

	all, err := reader.LoadACLs()
	if err != nil {
		t.Fatal(err)
	}
	want := map[acl.Resource][]acl.Entry{lit: {read}, pre: {deny}}
	if fmt.Sprint(all) != fmt.Sprint(want) {
		t.Fatalf("LoadACLs = %v, want %v", all, want)
	}

	if _, err := writer.UpdateACLs(lit, func([]acl.Entry) ([]acl.Entry, error) { return nil, nil }); err != nil {
		t.Fatal(err)
	}
	l.expect(t, "after the removal", lit)
	if ok, _, _ := writer.conn.Exists(writer.abs("/kafka-acl/Topic/orders")); ok {
		t.Error("the znode of a pattern without ACLs is still there")
	}
	if got, err := reader.ACLs(lit); err != nil || len(got) != 0 {
		t.Errorf("ACLs after the removal = %v, %v", got, err)
	}

	// A change announced in Kafka's own words (a Kafka broker's write) is
	// delivered too; one that does not decode is passed over.
	for _, n := range []struct{ parent, data string }{
		{ACLChangesPath, "not-a-change"},
		{ACLChangesPath, "TRANSACTIONAL_ID:tx-1"},
	} {
		if _, err := writer.conn.Create(writer.abs(n.parent+"/"+ACLChangePrefix), []byte(n.data), gozk.FlagSequence, openACL); err != nil {
			t.Fatal(err)
		}
	}
	l.expect(t, "after Kafka's notification", acl.Resource{Type: acl.ResourceTransactionalID, Name: "tx-1", Pattern: acl.PatternLiteral})

	if _, err := writer.UpdateACLs(acl.Resource{Type: acl.ResourceGroup, Name: "a/b", Pattern: acl.PatternLiteral},
		func([]acl.Entry) ([]acl.Entry, error) { return []acl.Entry{read}, nil }); err == nil {
		t.Error("a name with a / was stored")
	}
}

// Writers on different sessions adding to the same pattern at once all
// land: each write is conditional on the version read.
func TestACLStoreConcurrentWriters(t *testing.T) {
	chroot := zktest.Chroot()
	r := acl.Resource{Type: acl.ResourceTopic, Name: "shared", Pattern: acl.PatternLiteral}
	const writers, each = 4, 5
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for i := range writers {
		c := connect(t, chroot)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range each {
				e := aclEntry(fmt.Sprintf("User:w%d-%d", i, j), acl.OpWrite, acl.Allow)
				if _, err := c.UpdateACLs(r, func(cur []acl.Entry) ([]acl.Entry, error) { return acl.AddEntries(cur, []acl.Entry{e}), nil }); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		// Gave up after the retries: possible under heavy contention, but
		// not with four writers.
		t.Error(err)
	}
	got, err := connect(t, chroot).ACLs(r)
	if err != nil || len(got) != writers*each {
		t.Fatalf("%d ACLs stored (%v), want %d", len(got), err, writers*each)
	}
}

// ACL watchers purge the notifications older than the expiration from
// both change paths, as Kafka's listener does.
func TestACLWatchPurge(t *testing.T) {
	chroot := zktest.Chroot()
	writer := connect(t, chroot)
	var aging atomic.Int64
	clock := func() time.Time { return time.Now().Add(time.Duration(aging.Load())) }
	l := make(aclLog, 100)
	w := startACLWatcher(context.Background(), connect(t, chroot), l.record, ConfigChangeExpiration, clock)
	defer w.Close()
	lit := acl.Resource{Type: acl.ResourceCluster, Name: acl.ClusterName, Pattern: acl.PatternLiteral}
	pre := acl.Resource{Type: acl.ResourceTopic, Name: "t-", Pattern: acl.PatternPrefixed}
	addACLs(t, writer, lit, aclEntry("User:a", acl.OpAlter, acl.Allow))
	addACLs(t, writer, pre, aclEntry("User:a", acl.OpRead, acl.Allow))
	l.expect(t, "created", lit, pre)
	aging.Store(int64(ConfigChangeExpiration + time.Minute))
	for _, parent := range []string{ACLChangesPath, ExtendedACLChangesPath} {
		deadline := time.After(15 * time.Second)
		// A child that is not a notification wakes the watcher.
		if _, err := writer.conn.Create(writer.abs(parent+"/wake"), nil, 0, openACL); err != nil {
			t.Fatal(err)
		}
		for {
			names, _, ch, err := writer.conn.ChildrenW(writer.abs(parent))
			if err != nil {
				t.Fatal(err)
			}
			names = slices.DeleteFunc(names, func(s string) bool { return !strings.HasPrefix(s, ACLChangePrefix) })
			if len(names) == 0 {
				break
			}
			select {
			case <-ch:
			case <-deadline:
				t.Fatalf("%s: notifications %v left", parent, names)
			}
		}
	}
}
