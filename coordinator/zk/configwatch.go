package zk

// The broker's side of change notifications, Kafka's
// ZkNodeChangeNotificationListener: every broker watches the children of
// /config/changes (and, with an authorizer, /kafka-acl-changes and
// /kafka-acl-extended-changes, acls.go) and, for each notification whose
// sequence number is above the last it processed, re-reads what the
// notification names (configstore.go and acls.go write both).
//
// The loop, on one goroutine per watcher:
//
//  1. list the children of the change path and arm a child watch in the
//     same call (ChildrenW), so a notification created after the list
//     fires the watch: nothing falls between a watch firing and its
//     re-arming;
//  2. deliver the notifications above the last one delivered, in sequence
//     order; those there when the watcher starts are delivered too (the
//     broker reads current configs at start anyway: an extra re-read is
//     harmless, a missed one is not);
//  3. delete the notifications older than 15 minutes (Kafka's
//     changeExpirationMs), by any broker's watcher: another broker deleting
//     the same one first (NoNode) is not an error;
//  4. wait for the watch, a session expiry, or the end.
//
// A watch outlives a lost connection (go-zookeeper re-arms it on the new
// connection, with the zxid it had seen, so changes made meanwhile fire
// it) but not an expired session: then the loop lists the children again
// under the new session. Sequence numbers are ZooKeeper's 10-digit
// suffixes; like Kafka's listener this one does not handle their wrap past
// 2^31 notifications.

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"time"

	gozk "github.com/go-zookeeper/zk"
)

// ConfigChangeExpiration is how long a change notification is kept before
// a watcher deletes it (Kafka's changeExpirationMs, 15 minutes).
const ConfigChangeExpiration = 15 * time.Minute

// configWatchRetry is the pause before a watcher retries a failed
// ZooKeeper call (a lost connection: go-zookeeper reconnects meanwhile).
const configWatchRetry = 200 * time.Millisecond

// ChangeWatcher delivers the notifications created under one change path
// (/config/changes, /kafka-acl-changes, /kafka-acl-extended-changes) until
// it is closed, its context ends or its Client closes.
type ChangeWatcher struct {
	c      *Client
	path   string // the change path
	prefix string // the notifications' name before the sequence number
	// handle takes one notification's path and data; it logs what it
	// cannot decode.
	handle func(p string, data []byte)
	cancel context.CancelFunc
	done   chan struct{}

	// expiration and now decide which notifications are old enough to
	// delete (tests move now forward).
	expiration time.Duration
	now        func() time.Time

	// last is the sequence number of the last notification delivered, -1
	// for none; owned by the watcher's goroutine.
	last int64
}

// WatchConfigChanges starts a watcher of /config/changes (creating it if
// missing) that calls fn once for each notification, in sequence order,
// beginning with those that exist already. fn runs on the watcher's
// goroutine, one call at a time: it must not block for long (the
// notifications behind it wait, and the watcher's deletion of old ones),
// and must not call Close.
func WatchConfigChanges(ctx context.Context, c *Client, fn func(ConfigChange)) *ChangeWatcher {
	return startConfigWatcher(ctx, c, fn, ConfigChangeExpiration, time.Now)
}

func startConfigWatcher(ctx context.Context, c *Client, fn func(ConfigChange), expiration time.Duration, now func() time.Time) *ChangeWatcher {
	handle := func(p string, data []byte) {
		change, err := DecodeConfigChange(p[len(ConfigChangesPath)+1:], data)
		if err != nil {
			// As Kafka: a notification that does not decode is logged
			// and passed over.
			c.log.Error("ignoring a config change notification", "err", err)
			return
		}
		fn(change)
	}
	return startChangeWatcher(ctx, c, ConfigChangesPath, ConfigChangePrefix, handle, expiration, now)
}

// startChangeWatcher starts a watcher of the children of path named
// prefix<seq> (creating path if missing).
func startChangeWatcher(ctx context.Context, c *Client, path, prefix string, handle func(string, []byte), expiration time.Duration, now func() time.Time) *ChangeWatcher {
	ctx, cancel := context.WithCancel(ctx)
	w := &ChangeWatcher{c: c, path: path, prefix: prefix, handle: handle, cancel: cancel, done: make(chan struct{}),
		expiration: expiration, now: now, last: -1}
	go w.run(ctx)
	return w
}

// Close stops the watcher and waits for its goroutine (and so for any call
// of fn) to end.
func (w *ChangeWatcher) Close() {
	w.cancel()
	<-w.done
}

// Done is closed when the watcher has stopped.
func (w *ChangeWatcher) Done() <-chan struct{} { return w.done }

func (w *ChangeWatcher) run(ctx context.Context) {
	defer close(w.done)
	p := w.c.abs(w.path)
	for {
		// Taken before the list, so an expiry after it is seen below.
		expired := w.c.Expired()
		names, _, watch, err := w.c.conn.ChildrenW(p)
		if errors.Is(err, gozk.ErrNoNode) {
			err = w.c.createParents(w.path, false)
			if err == nil {
				continue
			}
		}
		if err == nil {
			err = w.deliver(names)
		}
		if err != nil {
			if !w.c.pause(ctx, configWatchRetry) {
				return
			}
			continue
		}
		select {
		case <-watch:
		case <-expired:
		case <-ctx.Done():
			return
		case <-w.c.Closed():
			return
		}
	}
}

// notification is a child of the change path with its sequence number.
type notification struct {
	name string
	seq  int64
}

// deliver calls fn for the notifications of names above the last one
// delivered, in order, then deletes the expired ones. An error (ZooKeeper
// unreachable) leaves the rest for the next attempt: last is where it
// stopped.
func (w *ChangeWatcher) deliver(names []string) error {
	notes := make([]notification, 0, len(names))
	for _, name := range names {
		seq, err := changeSeq(w.path, w.prefix, name)
		if err != nil {
			w.c.log.Warn("ignoring a znode that is not a change notification", "err", err)
			continue
		}
		notes = append(notes, notification{name, seq})
	}
	slices.SortFunc(notes, func(a, b notification) int { return cmp.Compare(a.seq, b.seq) })
	now := w.now()
	for _, n := range notes {
		if n.seq <= w.last {
			continue
		}
		p := w.path + "/" + n.name
		data, _, err := w.c.conn.Get(w.c.abs(p))
		switch {
		case errors.Is(err, gozk.ErrNoNode):
			// Expired and deleted by another broker before we read it:
			// nothing to do that the broker's start did not do.
		case err != nil:
			return err
		default:
			w.handle(p, data)
		}
		w.last = n.seq
	}
	return w.purge(now, notes)
}

// purge deletes the notifications created more than the expiration before
// now (ZkNodeChangeNotificationListener.purgeObsoleteNotifications).
func (w *ChangeWatcher) purge(now time.Time, notes []notification) error {
	for _, n := range notes {
		p := w.c.abs(w.path + "/" + n.name)
		ok, stat, err := w.c.conn.Exists(p)
		if err != nil {
			return err
		}
		if !ok || now.Sub(time.UnixMilli(stat.Ctime)) <= w.expiration {
			continue
		}
		if err := w.c.conn.Delete(p, -1); err != nil && !errors.Is(err, gozk.ErrNoNode) {
			return err
		}
	}
	return nil
}
