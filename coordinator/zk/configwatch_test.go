package zk

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"

	"github.com/sluice-io/sluice/coordinator/zk/zktest"
)

// changeLog collects what a watcher delivers.
type changeLog chan ConfigChange

func newChangeLog() changeLog { return make(changeLog, 100) }

func (l changeLog) record(c ConfigChange) { l <- c }

// expect waits (with a deadline) for exactly want, in order.
func (l changeLog) expect(t *testing.T, what string, want ...ConfigChange) {
	t.Helper()
	deadline := time.NewTimer(15 * time.Second)
	defer deadline.Stop()
	for i, w := range want {
		select {
		case got := <-l:
			if got != w {
				t.Fatalf("%s: change %d is %+v, want %+v", what, i, got, w)
			}
		case <-deadline.C:
			t.Fatalf("%s: got %d of %d changes (%+v...)", what, i, len(want), want)
		}
	}
}

// set writes a config of each change (a value unique to the call).
func set(t *testing.T, c *Client, changes ...ConfigChange) {
	t.Helper()
	for _, ch := range changes {
		if err := c.SetConfig(ch.EntityType, ch.EntityName, map[string]string{"at": time.Now().String()}); err != nil {
			t.Fatal(err)
		}
	}
}

func topicChange(name string) ConfigChange  { return ConfigChange{ConfigTopics, name} }
func brokerChange(name string) ConfigChange { return ConfigChange{ConfigBrokers, name} }

// A watcher on another session sees each change once, in order, for
// topics and brokers; one started after the changes sees those too; the
// notifications are kept (they are not 15 minutes old).
func TestConfigWatch(t *testing.T) {
	chroot := zktest.Chroot()
	writer := connect(t, chroot)
	ctx := context.Background()
	early := newChangeLog()
	w := WatchConfigChanges(ctx, connect(t, chroot), early.record)
	defer w.Close()

	changes := []ConfigChange{topicChange("orders"), brokerChange(DefaultEntity), brokerChange("1"),
		topicChange("payments"), topicChange("orders")}
	set(t, writer, changes...)
	early.expect(t, "watcher started first", changes...)

	late := newChangeLog()
	w2 := WatchConfigChanges(ctx, connect(t, chroot), late.record)
	defer w2.Close()
	late.expect(t, "watcher started after the changes", changes...)

	// Nothing more came: the next change is the next thing either sees.
	marker := topicChange("marker")
	set(t, writer, marker)
	early.expect(t, "watcher started first, after the marker", marker)
	late.expect(t, "watcher started later, after the marker", marker)

	names, _, err := writer.conn.Children(writer.abs(ConfigChangesPath))
	if err != nil || len(names) != len(changes)+1 {
		t.Fatalf("notifications left: %v, %v; want all %d", names, err, len(changes)+1)
	}
	w.Close()
	select {
	case <-w.Done():
	default:
		t.Fatal("Close returned before the watcher stopped")
	}
}

// Watchers delete the notifications older than the expiration as they
// process them, two of them racing to delete the same ones, and keep the
// younger ones. The test's clock ages the notifications once delivered:
// one deleted before a watcher read it would not be delivered (the
// broker read its entity's config at start, 15 minutes ago).
func TestConfigWatchPurge(t *testing.T) {
	chroot := zktest.Chroot()
	writer := connect(t, chroot)
	var aging atomic.Int64
	clock := func() time.Time { return time.Now().Add(time.Duration(aging.Load())) }
	ctx := context.Background()
	logs := []changeLog{newChangeLog(), newChangeLog()}
	for _, l := range logs {
		w := startConfigWatcher(ctx, connect(t, chroot), l.record, ConfigChangeExpiration, clock)
		defer w.Close()
	}
	// notifications waits until n are left, and returns them.
	notifications := func(n int) []string {
		t.Helper()
		deadline := time.After(15 * time.Second)
		for {
			names, _, ch, err := writer.conn.ChildrenW(writer.abs(ConfigChangesPath))
			if err != nil {
				t.Fatal(err)
			}
			names = slices.DeleteFunc(names, func(s string) bool { return !strings.HasPrefix(s, ConfigChangePrefix) })
			if len(names) == n {
				return names
			}
			select {
			case <-ch:
			case <-deadline:
				t.Fatalf("notifications %v, want %d", names, n)
			}
		}
	}
	for round := range 3 {
		aging.Store(0)
		changes := []ConfigChange{topicChange("t"), brokerChange("2")}
		set(t, writer, changes...)
		for _, l := range logs {
			l.expect(t, fmt.Sprintf("round %d", round), changes...)
		}
		notifications(len(changes)) // younger than the expiration: kept
		aging.Store(int64(ConfigChangeExpiration + time.Minute))
		// A child that is not a notification wakes the watchers (and is
		// passed over).
		if _, err := writer.conn.Create(writer.abs(fmt.Sprintf("%s/wake-%d", ConfigChangesPath, round)), nil, 0, openACL); err != nil {
			t.Fatal(err)
		}
		notifications(0)
	}
}

// Changes made while a watcher's link to ZooKeeper is cut are delivered
// once it is back, by the watch go-zookeeper re-arms; changes made while
// its session expires are delivered under the new session. Neither
// delivers a change twice.
func TestConfigWatchReconnect(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// setup returns a writer and a watcher's client, through a proxy, on
	// a chroot of their own, the watcher started and one change delivered.
	setup := func(t *testing.T, session time.Duration) (writer, c *Client, proxy *zktest.LinkProxy, l changeLog) {
		chroot := zktest.Chroot()
		writer = connect(t, chroot)
		if err := writer.EnsurePersistentPaths(); err != nil {
			t.Fatal(err)
		}
		proxy = startLinkProxy(t, zkServerAddr(t))
		c, err := Connect(ctx, proxy.Addr()+chroot, Options{SessionTimeout: session, Logger: quietLogger()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		l = newChangeLog()
		t.Cleanup(WatchConfigChanges(ctx, c, l.record).Close)
		first := topicChange("before")
		set(t, writer, first)
		l.expect(t, "before the link goes", first)
		return writer, c, proxy, l
	}
	// noMore checks that nothing else was delivered: the next change is
	// the next thing the watcher sees.
	noMore := func(t *testing.T, writer *Client, l changeLog) {
		marker := topicChange("marker")
		set(t, writer, marker)
		l.expect(t, "after the marker", marker)
	}

	t.Run("link cut", func(t *testing.T) {
		writer, c, proxy, l := setup(t, 8*time.Second)
		expired := c.Expired()
		proxy.SetCut(true)
		during := []ConfigChange{topicChange("during"), brokerChange("7")}
		set(t, writer, during...)
		proxy.SetCut(false)
		l.expect(t, "after the cut", during...)
		select {
		case <-expired:
			t.Fatal("the session expired: the cut was to be shorter than the session")
		default:
		}
		noMore(t, writer, l)
	})

	t.Run("session expiry", func(t *testing.T) {
		writer, c, proxy, l := setup(t, time.Second)

		if _, err := c.conn.Create(c.abs("/probe"), nil, gozk.FlagEphemeral, openACL); err != nil {
			t.Fatal(err)
		}
		_, _, gone, err := writer.conn.ExistsW(writer.abs("/probe"))
		if err != nil {
			t.Fatal(err)
		}
		expired := c.Expired()
		proxy.SetCut(true)
		select {
		case <-gone: // the server expired the session
		case <-ctx.Done():
			t.Fatal("the session never expired")
		}
		during := []ConfigChange{brokerChange(DefaultEntity), topicChange("during")}
		set(t, writer, during...)
		proxy.SetCut(false)
		select {
		case <-expired:
		case <-ctx.Done():
			t.Fatal("the client never learned its session expired")
		}
		l.expect(t, "after the expiry", during...)
		noMore(t, writer, l)
	})
}
