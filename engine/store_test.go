package engine

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestStoreCreateReopenDelete(t *testing.T) {
	dir := t.TempDir()
	st, err := OpenStore(dir, StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	id := NewTopicID()
	for p := range int32(8) {
		l, err := st.CreateLog(Partition{"orders.eu-west", p}, id)
		if err != nil {
			t.Fatal(err)
		}
		for range int(p) + 1 {
			if _, err := l.Append(testBatch(t, 3, 20, 1)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := st.CreateLog(Partition{"orders.eu-west", 0}, NewTopicID()); !errors.Is(err, ErrTopicIDMismatch) {
		t.Fatalf("creating a log of another topic ID: %v", err)
	}
	if _, err := OpenStore(dir, StoreOptions{}); !errors.Is(err, ErrLocked) {
		t.Fatalf("a second open of the same data dir: %v", err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	st, err = OpenStore(dir, StoreOptions{OpenParallelism: 3})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(st.Partitions()); n != 8 {
		t.Fatalf("reopened store has %d partitions, want 8", n)
	}
	for p := range int32(8) {
		l, gotID, ok := st.Log(Partition{"orders.eu-west", p})
		if !ok || gotID != id {
			t.Fatalf("partition %d: ok %v id %v, want %v", p, ok, gotID, id)
		}
		if l.EndOffset() != int64(p+1)*3 {
			t.Fatalf("partition %d ends at %d, want %d", p, l.EndOffset(), (p+1)*3)
		}
	}

	// Deleting renames first: the live name is gone at once, and a new topic
	// of the same name starts empty.
	l, _, _ := st.Log(Partition{"orders.eu-west", 5})
	v, err := l.Read(0, 1<<20, l.EndOffset())
	if err != nil {
		t.Fatal(err)
	}
	if err := st.DeleteLog(Partition{"orders.eu-west", 5}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "orders.eu-west-5")); !os.IsNotExist(err) {
		t.Fatalf("deleted log's directory still under its name: %v", err)
	}
	if len(viewBytes(t, &v)) == 0 {
		t.Fatal("a view of a deleted log reads nothing")
	}
	v.Release()
	nl, err := st.CreateLog(Partition{"orders.eu-west", 5}, NewTopicID())
	if err != nil {
		t.Fatal(err)
	}
	if nl.EndOffset() != 0 {
		t.Fatalf("re-created log starts at %d", nl.EndOffset())
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), deleteDirSuffix) {
			t.Fatalf("deleted directory %s not removed", e.Name())
		}
	}
}

// A crash after the rename of a deleted log leaves a "-delete" directory:
// the next open removes it and never serves it.
func TestStoreRemovesLeftoverDeleteDirs(t *testing.T) {
	dir := t.TempDir()
	leftover := filepath.Join(dir, "t-0.0123456789abcdef0123456789abcdef-delete")
	if err := os.MkdirAll(leftover, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(leftover, "00000000000000000000.log"), []byte("old"), 0o644)
	st, err := OpenStore(dir, StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(st.Partitions()); n != 0 {
		t.Fatalf("store serves %d partitions from a delete directory", n)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(leftover); !os.IsNotExist(err) {
		t.Fatalf("leftover delete directory still there: %v", err)
	}
}

func TestTopicIDAndPartitionNames(t *testing.T) {
	id := NewTopicID()
	back, err := ParseTopicID(id.String())
	if err != nil || back != id || len(id.String()) != 22 {
		t.Fatalf("topic ID round trip: %q %v %v", id.String(), back, err)
	}
	if _, err := ParseTopicID("not-an-id"); err == nil {
		t.Fatal("parsed a bad topic ID")
	}
	for name, want := range map[string]Partition{
		"a-0":         {"a", 0},
		"my-topic-12": {"my-topic", 12},
	} {
		if got, ok := parsePartitionDir(name); !ok || got != want {
			t.Fatalf("parsePartitionDir(%q) = %v %v", name, got, ok)
		}
	}
	for _, name := range []string{"a", "-1", "a-", "a-01", "a-x", "a-1.abc-delete"} {
		if _, ok := parsePartitionDir(name); ok {
			t.Fatalf("parsePartitionDir(%q) accepted", name)
		}
	}
}

// Topic ids never print with a leading '-' (Kafka's tools would take one
// for an option), as Kafka's Uuid.randomUuid guarantees.
func TestNewTopicIDNoLeadingDash(t *testing.T) {
	for range 20000 {
		if s := NewTopicID().String(); strings.HasPrefix(s, "-") {
			t.Fatalf("topic id %s starts with '-'", s)
		}
	}
}
