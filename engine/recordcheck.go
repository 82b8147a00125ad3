package engine

// The produce path's record walk has two tiers. recordsWellFormed is the fast
// one: it only decides that a batch's records are well formed, reading 1- and
// 2-byte varints inline and writing no recordFrame or defect. Whatever it
// cannot decide (a longer varint, a defect) goes to the detailed tier,
// scanRecord, which stays the one definition of a well-formed record; and
// walkRecords, built on scanRecord, writes every error message. The fast tier
// accepts exactly what walkRecords accepts (FuzzRecordsWellFormed checks it),
// so ValidateBatch's decisions and errors do not depend on which tier ran.

// recordsWellFormed reports whether b, a whole uncompressed batch whose
// header ValidateBatch has checked, holds exactly n records in
// [BatchHeaderSize, len(b)), the i-th with offset delta i, each framed as
// scanRecord requires: exactly when walkRecords(b, n) returns nil. It does
// not allocate.
func recordsWellFormed(b []byte, n int32) bool {
	p := BatchHeaderSize
	for i := range n {
		next, ok := quickRecord(b, p, i)
		if !ok {
			// Not decided: a varint longer than 2 bytes, or a defect.
			var f recordFrame
			var d defect
			if p >= len(b) || !scanRecord(b, p, &f, &d) || f.offsetDelta != i {
				return false
			}
			next = f.end
		}
		p = next
	}
	return p == len(b)
}

// quickRecord checks the record at b[p:] as scanRecord does, requiring its
// offset delta to be i, and returns the position after it. ok false means
// only "not decided here": the record may be malformed, or may hold a varint
// longer than 2 bytes. Every record quickRecord accepts, scanRecord accepts
// with the same end and offset delta i. With 2-byte varints it decides
// records and fields of up to 8,191 bytes, timestamp deltas within ±8.191 s
// and the first 8,192 records of a batch.
//
// Varints are read as their raw zig-zag bits z: a length or count is z>>1
// when z is even, -1 when z is 1, and below -1 for any other odd z.
func quickRecord(b []byte, p int, i int32) (next int, ok bool) {
	zl, n := uvarint2(b, p)
	q, length := p+n, int(zl>>1)
	if n == 0 || zl&1 != 0 || length > len(b)-q {
		return 0, false
	}
	r := b[q : q+length] // attributes, then the fields; r[0] is not read
	k := 1
	if _, n = uvarint2(r, k); n == 0 { // timestamp delta: any value
		return 0, false
	}
	k += n
	zo, n := uvarint2(r, k)
	if n == 0 || zo != uint32(i)<<1 { // i >= 0
		return 0, false
	}
	k += n
	if k = skipBytes2(r, k, true); k < 0 { // key
		return 0, false
	}
	if k = skipBytes2(r, k, true); k < 0 { // value
		return 0, false
	}
	zc, n := uvarint2(r, k)
	if n == 0 || zc&1 != 0 {
		return 0, false
	}
	k += n
	for range zc >> 1 {
		if k = skipBytes2(r, k, false); k < 0 { // header key
			return 0, false
		}
		if k = skipBytes2(r, k, true); k < 0 { // header value
			return 0, false
		}
	}
	return q + length, k == len(r)
}

// uvarint2 decodes the varint at r[p:] when it takes 1 or 2 bytes inside r,
// and returns its raw bits z and its size n. z has at most 14 bits, so it
// reads the same whether scanRecord expects the varint of an int32 or of an
// int64. n is 0 when r ends first or the varint is longer.
func uvarint2(r []byte, p int) (z uint32, n int) {
	if uint(p) < uint(len(r)) {
		if z = uint32(r[p]); z < 0x80 {
			return z, 1
		}
		if uint(p+1) < uint(len(r)) && r[p+1] < 0x80 {
			return z&0x7f | uint32(r[p+1])<<7, 2
		}
	}
	return 0, 0
}

// skipBytes2 skips a length varint of 1 or 2 bytes at r[p:] and the bytes it
// counts, as recordScanner.bytes reads them (a length of -1 is a null, with
// no bytes, only when nullable), and returns the position after them, or -1
// when not decided here.
func skipBytes2(r []byte, p int, nullable bool) int {
	z, n := uvarint2(r, p)
	p += n
	if l := int(z >> 1); n != 0 && z&1 == 0 && l <= len(r)-p {
		return p + l
	}
	if z == 1 && nullable { // -1; z == 1 implies n == 1
		return p
	}
	return -1
}
