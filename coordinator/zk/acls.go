package zk

// ACLs in ZooKeeper, as Kafka 3.9's AclAuthorizer keeps them
// (kafka.zk.ZkAclStore, ZkAclChangeStore):
//
//	/kafka-acl/<Type>/<name>                     a literal pattern's ACLs
//	/kafka-acl-extended/prefixed/<Type>/<name>   a prefixed pattern's ACLs
//	    {"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow","operation":"Read","host":"*"}]}
//	/kafka-acl-changes/acl_changes_<seq>            a literal pattern changed: TOPIC:orders
//	/kafka-acl-extended-changes/acl_changes_<seq>   a prefixed one changed:
//	    {"version":1,"resourceType":"TOPIC","name":"orders-","patternType":"PREFIXED"}
//
// <Type> is SecurityUtils' name of the resource type ("Topic",
// "TransactionalId"); the documents are security/acl/json.go's. A pattern
// whose last ACL is removed loses its znode. Every write is conditional on
// the version of the znode read (a create when there was none), retried
// on conflict from a fresh read, and followed by a notification when the
// ACLs changed; every broker loads all ACLs at start and watches both
// change paths (configwatch.go's loop: notifications older than 15
// minutes are purged), re-reading the pattern a notification names.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	gozk "github.com/go-zookeeper/zk"

	"github.com/sluice-io/sluice/security/acl"
)

// ACL znode paths.
const (
	ACLPath                = "/kafka-acl"
	ExtendedACLPath        = "/kafka-acl-extended"
	PrefixedACLPath        = ExtendedACLPath + "/prefixed"
	ACLChangesPath         = "/kafka-acl-changes"
	ExtendedACLChangesPath = "/kafka-acl-extended-changes"
	ACLChangePrefix        = "acl_changes_"
)

// aclUpdateRetries bounds the attempts of a conditional ACL write (Kafka's
// maxUpdateRetries is 10).
const aclUpdateRetries = 10

// aclTypes are the resource types that hold ACLs (AclEntry.RESOURCE_TYPES).
var aclTypes = []acl.ResourceType{acl.ResourceTopic, acl.ResourceGroup, acl.ResourceCluster,
	acl.ResourceTransactionalID, acl.ResourceDelegationToken, acl.ResourceUser}

// aclRoot is the znode under which a pattern type's ACLs live.
func aclRoot(p acl.PatternType) string {
	if p == acl.PatternPrefixed {
		return PrefixedACLPath
	}
	return ACLPath
}

// ACLResourcePath is the znode of a resource pattern's ACLs.
func ACLResourcePath(r acl.Resource) string {
	return aclRoot(r.Pattern) + "/" + r.Type.Name() + "/" + r.Name
}

// aclChangesPath is where a change of a pattern of type p is announced.
func aclChangesPath(p acl.PatternType) string {
	if p == acl.PatternLiteral {
		return ACLChangesPath
	}
	return ExtendedACLChangesPath
}

// CreateACLPaths creates the ACL roots, their resource-type children and
// the change paths, where missing (KafkaZkClient.createAclPaths).
func (c *Client) CreateACLPaths() error {
	var paths []string
	for _, root := range []string{ACLPath, PrefixedACLPath} {
		for _, t := range aclTypes {
			paths = append(paths, root+"/"+t.Name())
		}
	}
	for _, p := range append(paths, ACLChangesPath, ExtendedACLChangesPath) {
		if err := c.createParents(p, false); err != nil {
			return fmt.Errorf("zk: create %s: %w", p, err)
		}
	}
	return nil
}

// LoadACLs reads every resource pattern's ACLs.
func (c *Client) LoadACLs() (map[acl.Resource][]acl.Entry, error) {
	out := map[acl.Resource][]acl.Entry{}
	for _, pat := range []acl.PatternType{acl.PatternLiteral, acl.PatternPrefixed} {
		root := aclRoot(pat)
		typeNames, err := c.children(root)
		if err != nil {
			return nil, err
		}
		for _, tn := range typeNames {
			t, ok := acl.ParseResourceType(tn)
			if !ok || !t.Known() || t.Name() != tn {
				c.log.Warn("ignoring a znode that is not a resource type", "znode", root+"/"+tn)
				continue
			}
			names, err := c.children(root + "/" + tn)
			if err != nil {
				return nil, err
			}
			for _, name := range names {
				r := acl.Resource{Type: t, Name: name, Pattern: pat}
				entries, _, err := c.resourceACLs(r)
				if err != nil {
					return nil, err
				}
				if len(entries) > 0 {
					out[r] = entries
				}
			}
		}
	}
	return out, nil
}

// ACLs reads one resource pattern's ACLs; none when it has no znode.
func (c *Client) ACLs(r acl.Resource) ([]acl.Entry, error) {
	entries, _, err := c.resourceACLs(r)
	return entries, err
}

// resourceACLs reads r's ACLs and its znode's version, -1 for no znode.
func (c *Client) resourceACLs(r acl.Resource) ([]acl.Entry, int32, error) {
	p := ACLResourcePath(r)
	data, stat, err := c.conn.Get(c.abs(p))
	if errors.Is(err, gozk.ErrNoNode) {
		return nil, -1, nil
	} else if err != nil {
		return nil, -1, fmt.Errorf("zk: read %s: %w", p, err)
	}
	entries, err := acl.DecodeEntries(data, p)
	if err != nil {
		return nil, -1, fmt.Errorf("%w: %v", ErrBadZnode, err)
	}
	return entries, stat.Version, nil
}

// UpdateACLs replaces r's ACLs with what change returns for the current
// ones (an empty result deletes the znode), conditionally on the version
// read and retried from a fresh read on conflict, then, if they changed,
// announces the change. It returns the stored ACLs.
func (c *Client) UpdateACLs(r acl.Resource, change func([]acl.Entry) ([]acl.Entry, error)) ([]acl.Entry, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	if strings.Contains(r.Name, "/") {
		return nil, fmt.Errorf("%w: resource name %q holds a /, which a znode name cannot", acl.ErrInvalid, r.Name)
	}
	p := ACLResourcePath(r)
	for range aclUpdateRetries {
		cur, version, err := c.resourceACLs(r)
		if err != nil {
			return nil, err
		}
		next, err := change(slices.Clone(cur))
		if err != nil {
			return nil, err
		}
		if slices.Equal(next, cur) {
			return next, nil
		}
		switch {
		case len(next) == 0:
			err = c.conn.Delete(c.abs(p), version)
			if errors.Is(err, gozk.ErrNoNode) {
				err = nil
			}
		case version < 0:
			if err = c.createParents(p[:strings.LastIndexByte(p, '/')], false); err != nil {
				return nil, fmt.Errorf("zk: create the parents of %s: %w", p, err)
			}
			_, err = c.conn.Create(c.abs(p), acl.EncodeEntries(next), 0, openACL)
		default:
			_, err = c.conn.Set(c.abs(p), acl.EncodeEntries(next), version)
		}
		switch {
		case errors.Is(err, gozk.ErrNodeExists), errors.Is(err, gozk.ErrBadVersion), errors.Is(err, gozk.ErrNoNode):
			continue // another writer: read again
		case err != nil:
			return nil, fmt.Errorf("zk: write %s: %w", p, err)
		}
		if err := c.announceACLChange(r); err != nil {
			return nil, err
		}
		return next, nil
	}
	return nil, fmt.Errorf("zk: write %s: the znode kept changing; gave up after %d attempts", p, aclUpdateRetries)
}

// announceACLChange creates r's change notification.
func (c *Client) announceACLChange(r acl.Resource) error {
	parent := aclChangesPath(r.Pattern)
	if err := c.createParents(parent, false); err != nil {
		return fmt.Errorf("zk: create %s: %w", parent, err)
	}
	p := parent + "/" + ACLChangePrefix
	if _, err := c.conn.Create(c.abs(p), acl.EncodeChange(r), gozk.FlagSequence, openACL); err != nil {
		return fmt.Errorf("zk: create %s<seq>: %w", p, err)
	}
	return nil
}

// ACLWatcher follows both ACL change paths.
type ACLWatcher struct{ literal, extended *ChangeWatcher }

// WatchACLChanges starts watchers of /kafka-acl-changes and
// /kafka-acl-extended-changes that call fn with the resource pattern each
// notification names, in sequence order per path, beginning with the
// notifications that exist already (so a broker that loaded its ACLs
// before starting the watchers misses no change made meanwhile). fn runs
// on the watchers' goroutines, one call at a time per path.
func WatchACLChanges(ctx context.Context, c *Client, fn func(acl.Resource)) *ACLWatcher {
	return startACLWatcher(ctx, c, fn, ConfigChangeExpiration, time.Now)
}

func startACLWatcher(ctx context.Context, c *Client, fn func(acl.Resource), expiration time.Duration, now func() time.Time) *ACLWatcher {
	handle := func(extended bool) func(string, []byte) {
		return func(p string, data []byte) {
			r, err := acl.DecodeChange(data, extended, p)
			if err != nil {
				// As Kafka: logged and passed over.
				c.log.Error("ignoring an ACL change notification", "err", err)
				return
			}
			fn(r)
		}
	}
	return &ACLWatcher{
		literal:  startChangeWatcher(ctx, c, ACLChangesPath, ACLChangePrefix, handle(false), expiration, now),
		extended: startChangeWatcher(ctx, c, ExtendedACLChangesPath, ACLChangePrefix, handle(true), expiration, now),
	}
}

// Close stops both watchers and waits for them.
func (w *ACLWatcher) Close() {
	w.literal.Close()
	w.extended.Close()
}
