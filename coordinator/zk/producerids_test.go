package zk

import (
	"errors"
	"math"
	"slices"
	"sync"
	"testing"

	"github.com/sluice-io/sluice/coordinator"
	"github.com/sluice-io/sluice/coordinator/zk/zktest"
)

// Brokers allocating blocks at once never get overlapping ones, each
// broker's blocks increase, and together they cover the ids from 0 without
// a gap; the znode records the last block in Kafka's payload.
func TestAllocateProducerIDBlock(t *testing.T) {
	chroot := zktest.Chroot()
	const brokers, each, size = 4, 50, ProducerIDBlockSize
	firsts := make([][]int64, brokers)
	errs := make([]error, brokers)
	clients := make([]*Client, brokers)
	for b := range clients {
		clients[b] = connect(t, chroot)
	}
	// One chroot starts empty (no znode), as a fresh cluster.
	var wg sync.WaitGroup
	for b, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				first, err := c.AllocateProducerIDBlock(int32(b), size)
				if err != nil {
					errs[b] = err
					return
				}
				firsts[b] = append(firsts[b], first)
			}
		}()
	}
	wg.Wait()
	var all []int64
	for b := range brokers {
		if errs[b] != nil {
			t.Fatalf("broker %d: %v", b, errs[b])
		}
		if !slices.IsSorted(firsts[b]) {
			t.Fatalf("broker %d's blocks do not increase: %v", b, firsts[b])
		}
		all = append(all, firsts[b]...)
	}
	slices.Sort(all)
	for i, first := range all {
		if first != int64(i)*size {
			t.Fatalf("block %d starts at %d, want %d (blocks overlap or leave a gap)", i, first, int64(i)*size)
		}
	}
	data, _, err := clients[0].Get(ProducerIDBlockPath)
	if err != nil {
		t.Fatal(err)
	}
	got, ok, err := DecodeProducerIDBlock(data)
	if err != nil || !ok || got.First != int64(brokers*each-1)*size || got.Last != got.First+size-1 {
		t.Fatalf("%s holds %s (%+v, %v, %v)", ProducerIDBlockPath, data, got, ok, err)
	}
}

// The empty znode Kafka creates at start is no block yet; a block that
// would pass the largest id is refused and leaves the znode as it was.
func TestAllocateProducerIDBlockEnds(t *testing.T) {
	c := connect(t, zktest.Chroot())
	if err := c.EnsurePersistentPaths(); err != nil {
		t.Fatal(err)
	}
	if first, err := c.AllocateProducerIDBlock(1, 10); err != nil || first != 0 {
		t.Fatalf("first block from the empty znode: %d, %v", first, err)
	}
	if data, _, err := c.Get(ProducerIDBlockPath); err != nil ||
		string(data) != `{"version":1,"broker":1,"block_start":"0","block_end":"9"}` {
		t.Fatalf("%s holds %s, %v", ProducerIDBlockPath, data, err)
	}
	near := EncodeProducerIDBlock(ProducerIDBlock{Broker: 2, First: math.MaxInt64 - 1999, Last: math.MaxInt64 - 1000})
	if _, err := c.conn.Set(c.abs(ProducerIDBlockPath), near, -1); err != nil {
		t.Fatal(err)
	}
	if first, err := c.AllocateProducerIDBlock(1, 1000); err != nil || first != math.MaxInt64-999 {
		t.Fatalf("the last whole block: %d, %v", first, err)
	}
	for _, size := range []int64{1, 1000} {
		if _, err := c.AllocateProducerIDBlock(1, size); !errors.Is(err, coordinator.ErrProducerIDsExhausted) {
			t.Fatalf("a block of %d past the largest id: %v", size, err)
		}
	}
	data, _, err := c.Get(ProducerIDBlockPath)
	if b, _, _ := DecodeProducerIDBlock(data); err != nil || b.Last != math.MaxInt64 {
		t.Fatalf("%s after refusals: %s, %v", ProducerIDBlockPath, data, err)
	}
	for _, size := range []int64{0, -1, math.MaxInt32 + 1} {
		if _, err := c.AllocateProducerIDBlock(1, size); err == nil {
			t.Errorf("a block of %d ids was accepted", size)
		}
	}
}
