package coordinator

// The single node's ACLs: one JSON file, <data>/acls.json, replaced
// atomically (temp file, fsync, rename, fsync dir) on every change:
//
//	{"version": 1, "resources": [
//	  {"resource_type": "Topic", "pattern_type": "LITERAL", "name": "orders",
//	   "acls": {"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow","operation":"Read","host":"*"}]}}]}
//
// "acls" is the document Kafka stores in a resource's znode
// (security/acl/json.go); resource_type is its znode path's type name
// ("Topic", "Group", "Cluster", "TransactionalId", "DelegationToken",
// "User"). A missing file is no ACLs.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/sluice-io/sluice/engine"
	"github.com/sluice-io/sluice/security/acl"
)

const aclFile = "acls.json"

type fileACLResource struct {
	ResourceType string          `json:"resource_type"`
	PatternType  string          `json:"pattern_type"`
	Name         string          `json:"name"`
	ACLs         json.RawMessage `json:"acls"`
}

type fileACLs struct {
	Version   int               `json:"version"`
	Resources []fileACLResource `json:"resources"`
}

// FileACLs is the single node's ACLStore.
type FileACLs struct {
	path string
	mu   struct {
		sync.Mutex
		acls map[acl.Resource][]acl.Entry
	}
}

// OpenFileACLs reads dataDir's ACL file (none is no ACLs).
func OpenFileACLs(dataDir string) (*FileACLs, error) {
	f := &FileACLs{path: filepath.Join(dataDir, aclFile)}
	f.mu.acls = map[acl.Resource][]acl.Entry{}
	data, err := os.ReadFile(f.path)
	if errors.Is(err, fs.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return nil, fmt.Errorf("coordinator: %w", err)
	}
	var m fileACLs
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCorruptACLs, f.path, err)
	}
	if m.Version != 1 {
		return nil, fmt.Errorf("%w: %s: version %d, want 1", ErrCorruptACLs, f.path, m.Version)
	}
	for i, fr := range m.Resources {
		where := fmt.Sprintf("%s: resources[%d]", f.path, i)
		rt, ok := acl.ParseResourceType(fr.ResourceType)
		pt, ok2 := acl.ParsePatternType(fr.PatternType)
		r := acl.Resource{Type: rt, Name: fr.Name, Pattern: pt}
		if !ok || !ok2 || r.Validate() != nil {
			return nil, fmt.Errorf("%w: %s: resource %s %s %q", ErrCorruptACLs, where, fr.ResourceType, fr.PatternType, fr.Name)
		}
		entries, err := acl.DecodeEntries(fr.ACLs, where)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrCorruptACLs, err)
		}
		if len(entries) > 0 {
			f.mu.acls[r] = entries
		}
	}
	return f, nil
}

// LoadACLs implements ACLStore.
func (f *FileACLs) LoadACLs() (map[acl.Resource][]acl.Entry, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[acl.Resource][]acl.Entry, len(f.mu.acls))
	for r, e := range f.mu.acls {
		out[r] = slices.Clone(e)
	}
	return out, nil
}

// ACLs implements ACLStore.
func (f *FileACLs) ACLs(r acl.Resource) ([]acl.Entry, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.mu.acls[r]), nil
}

// UpdateACLs implements ACLStore.
func (f *FileACLs) UpdateACLs(r acl.Resource, change func([]acl.Entry) ([]acl.Entry, error)) ([]acl.Entry, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	cur := f.mu.acls[r]
	next, err := change(slices.Clone(cur))
	if err != nil {
		return nil, err
	}
	if slices.Equal(next, cur) {
		return next, nil
	}
	if len(next) == 0 {
		delete(f.mu.acls, r)
	} else {
		f.mu.acls[r] = slices.Clone(next)
	}
	if err := f.saveLocked(); err != nil {
		if len(cur) == 0 {
			delete(f.mu.acls, r)
		} else {
			f.mu.acls[r] = cur
		}
		return nil, err
	}
	return next, nil
}

// OnACLChange implements ACLStore: the single node changes its ACLs only
// itself.
func (f *FileACLs) OnACLChange(func(acl.Resource)) {}

func (f *FileACLs) saveLocked() error {
	m := fileACLs{Version: 1, Resources: []fileACLResource{}}
	for r, e := range f.mu.acls {
		m.Resources = append(m.Resources, fileACLResource{
			ResourceType: r.Type.Name(), PatternType: r.Pattern.String(), Name: r.Name, ACLs: acl.EncodeEntries(e),
		})
	}
	slices.SortFunc(m.Resources, func(a, b fileACLResource) int {
		return strings.Compare(a.ResourceType+"\x00"+a.PatternType+"\x00"+a.Name, b.ResourceType+"\x00"+b.PatternType+"\x00"+b.Name)
	})
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("coordinator: %w", err)
	}
	return engine.WriteFileAtomic(f.path, data)
}
