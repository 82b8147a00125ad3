package zk

// Writing JSON as Kafka's brokers write it, byte for byte.
//
// Kafka builds each payload as a Scala map and serializes it with Jackson
// (compact, no spaces, '/' and '<' unescaped), so the order of a payload's
// keys is the iteration order of that map. Maps of up to four entries keep
// insertion order (Scala's Map1..Map4); larger ones are hash maps, whose
// order follows the keys' hashes. The struct tags in znodes.go list each
// payload's fields in the order Kafka 3.9's Scala 2.13 build writes them
// (worked out from the hashes, and matching what `zookeeper-shell get`
// shows on such clusters). The one map whose keys vary, a topic's
// partition → replicas map, is ordered here as Scala's mutable.HashMap
// iterates it (scalaHashOrder). Kafka's readers do not care about order;
// this is so that an operator comparing a sluice cluster's znodes with a
// Kafka cluster's sees the same bytes.

import (
	"bytes"
	"encoding/json"
	"sort"
	"strconv"
)

// marshal writes v as compact JSON without HTML escaping (Jackson does not
// escape '<', '>' or '&', and "<default>" is a config entity name). Every v
// given is made of strings, integers, slices and maps, which always encode.
func marshal(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic("zk: encoding a znode payload: " + err.Error())
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// replicaMap is a partition → broker ids map, written as a JSON object
// keyed by the partition's decimal number, in scalaHashOrder.
type replicaMap map[int32][]int32

// MarshalJSON implements json.Marshaler.
func (m replicaMap) MarshalJSON() ([]byte, error) {
	keys := make([]string, 0, len(m))
	for p := range m {
		keys = append(keys, strconv.Itoa(int(p)))
	}
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range scalaHashOrder(keys) {
		if i > 0 {
			b.WriteByte(',')
		}
		p, _ := strconv.Atoi(k)
		b.WriteString(strconv.Quote(k))
		b.WriteByte(':')
		b.Write(int32List(m[int32(p)]))
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// int32List writes ids as a JSON array ([] when empty, never null).
func int32List(ids []int32) []byte {
	b := make([]byte, 0, 2+4*len(ids))
	b = append(b, '[')
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(id), 10)
	}
	return append(b, ']')
}

// scalaHashOrder returns ASCII keys in the order Scala 2.13's
// mutable.HashMap iterates them after they were added one by one to an
// empty map (which is how Kafka's TopicZNode.encode builds its partition
// maps). That map is a table of 16 buckets, doubled whenever an insertion
// would reach 3/4 of it, so a map of n keys has the smallest power of two
// L >= 16 with n < 0.75·L buckets; a key's bucket is its improved hash
// h ^ (h >>> 16) masked to L-1, where h is Java's String.hashCode, and each
// bucket keeps its keys in increasing (signed) improved hash. Iteration
// walks the buckets in order. Insertion order does not matter.
func scalaHashOrder(keys []string) []string {
	size := 16
	for len(keys) >= size*3/4 {
		size *= 2
	}
	type entry struct {
		key    string
		hash   int32
		bucket int32
	}
	es := make([]entry, len(keys))
	for i, k := range keys {
		h := javaStringHash(k)
		h ^= int32(uint32(h) >> 16)
		es[i] = entry{k, h, h & int32(size-1)}
	}
	sort.Slice(es, func(i, j int) bool {
		if es[i].bucket != es[j].bucket {
			return es[i].bucket < es[j].bucket
		}
		return es[i].hash < es[j].hash
	})
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.key
	}
	return out
}

// javaStringHash is Java's String.hashCode for an ASCII string (one UTF-16
// unit per byte): s[0]·31^(n-1) + … + s[n-1], in int32 arithmetic.
func javaStringHash(s string) int32 {
	var h int32
	for i := 0; i < len(s); i++ {
		h = 31*h + int32(s[i])
	}
	return h
}
