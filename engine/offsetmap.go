package engine

// The cleaner's offset map: key -> offset of the key's latest record in the
// dirty section of a log, in a fixed amount of memory, as Kafka's
// SkimpyOffsetMap. Keys are not stored, only a 128-bit hash of each (two
// 64-bit maphash values under independent random seeds): two keys are taken
// for one only if both hashes collide, which for a map of n keys happens with
// probability about n²/2¹²⁹ — nil in practice (Kafka stores 16 bytes of MD5
// for the same reason).
//
// The table is open addressing with linear probing over slots of 24 bytes,
// in memory only (never written to disk):
//
//	offset  size  field
//	     0     8  hash, first half   uint64
//	     8     8  hash, second half  uint64
//	    16     8  offset + 1         int64   0 marks an empty slot
//
// The probe starts at the slot the first half maps to (multiply-shift, no
// modulo). The map accepts new keys until it holds loadFactor × slots of
// them (Kafka's 0.9), so probe sequences stay short; a put of a new key
// beyond that reports the map full and the cleaner maps no further.

import (
	"hash/maphash"
	"math/bits"
)

const offsetMapSlotBytes = 24

type offsetSlot struct {
	h1, h2 uint64
	off    int64 // offset + 1; 0: empty
}

type offsetMap struct {
	slots   []offsetSlot
	seed1   maphash.Seed
	seed2   maphash.Seed
	size    int   // keys held
	maxSize int   // keys accepted: loadFactor × len(slots)
	latest  int64 // last offset of the last batch mapped whole; -1 when none
}

// newOffsetMap makes a map of memBytes (at least 16 slots) that accepts keys
// up to loadFactor of its slots.
func newOffsetMap(memBytes int64, loadFactor float64) *offsetMap {
	n := max(memBytes/offsetMapSlotBytes, 16)
	m := &offsetMap{
		slots: make([]offsetSlot, n),
		seed1: maphash.MakeSeed(),
		seed2: maphash.MakeSeed(),
	}
	m.maxSize = max(int(float64(n)*loadFactor), 1)
	m.latest = -1
	return m
}

// clear empties the map (and takes new seeds, so a pathological key set
// does not stay pathological).
func (m *offsetMap) clear() {
	clear(m.slots)
	m.size = 0
	m.latest = -1
	m.seed1, m.seed2 = maphash.MakeSeed(), maphash.MakeSeed()
}

func (m *offsetMap) hash(key []byte) (uint64, uint64) {
	return maphash.Bytes(m.seed1, key), maphash.Bytes(m.seed2, key)
}

func (m *offsetMap) start(h1 uint64) int {
	hi, _ := bits.Mul64(h1, uint64(len(m.slots)))
	return int(hi)
}

// put records offset as key's latest. It returns false, changing nothing,
// when key is new and the map already holds maxSize keys.
func (m *offsetMap) put(key []byte, offset int64) bool {
	h1, h2 := m.hash(key)
	n := len(m.slots)
	for i := m.start(h1); ; i++ {
		if i == n {
			i = 0
		}
		s := &m.slots[i]
		if s.off == 0 {
			if m.size >= m.maxSize {
				return false
			}
			*s = offsetSlot{h1: h1, h2: h2, off: offset + 1}
			m.size++
			return true
		}
		if s.h1 == h1 && s.h2 == h2 {
			s.off = offset + 1
			return true
		}
	}
}

// get returns key's latest offset, or -1 when the map does not hold it.
func (m *offsetMap) get(key []byte) int64 {
	h1, h2 := m.hash(key)
	n := len(m.slots)
	for i := m.start(h1); ; i++ {
		if i == n {
			i = 0
		}
		s := &m.slots[i]
		if s.off == 0 {
			return -1
		}
		if s.h1 == h1 && s.h2 == h2 {
			return s.off - 1
		}
	}
}

// utilization is the share of slots in use.
func (m *offsetMap) utilization() float64 { return float64(m.size) / float64(len(m.slots)) }
