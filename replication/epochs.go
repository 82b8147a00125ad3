package replication

// The replica's copy of its log's leader-epoch cache (Kafka's
// LeaderEpochFileCache): the first offset of each leader epoch present in
// the log, ascending in both epoch and offset. The broker's log keeps the
// durable one (engine's leader-epoch checkpoint); this one is handed in by
// BecomeLeader and BecomeFollower and kept in step by the appends and
// truncations the Replica decides or is told of, so that the state machine
// answers divergence questions without reading the log.

// EpochStart is an entry of the leader-epoch cache: Epoch's records start
// at offset Start.
type EpochStart struct {
	Epoch int32
	Start int64
}

// EpochEnd is the answer to "where does epoch E end": the largest epoch
// at most E that the log holds, and the offset one past its last record
// (the start of the next epoch, or the log end). Kafka's EpochEndOffset;
// {NoEpoch, -1} is its UNDEFINED_EPOCH / UNDEFINED_EPOCH_OFFSET.
type EpochEnd struct {
	Epoch     int32
	EndOffset int64
}

// undefinedEnd is Kafka's (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET).
var undefinedEnd = EpochEnd{Epoch: NoEpoch, EndOffset: -1}

type epochCache []EpochStart

// assign records that epoch's records start at start. An epoch not above
// the latest is ignored; entries the new one contradicts (a higher or
// equal epoch, or a start at or past start) are removed first, as Kafka's
// assign does.
func (c *epochCache) assign(epoch int32, start int64) {
	es := *c
	if n := len(es); n > 0 && es[n-1].Epoch == epoch {
		return
	}
	for len(es) > 0 && (es[len(es)-1].Epoch >= epoch || es[len(es)-1].Start >= start) {
		es = es[:len(es)-1]
	}
	*c = append(es, EpochStart{Epoch: epoch, Start: start})
}

// latest returns the latest epoch, or NoEpoch for an empty cache.
func (c epochCache) latest() int32 {
	if len(c) == 0 {
		return NoEpoch
	}
	return c[len(c)-1].Epoch
}

// startOf returns the start offset of epoch, or -1 if it is not cached.
func (c epochCache) startOf(epoch int32) int64 {
	for i := len(c) - 1; i >= 0; i-- {
		if c[i].Epoch == epoch {
			return c[i].Start
		}
	}
	return -1
}

// endFor is Kafka's endOffsetFor: the latest epoch answers the log end;
// an older one the largest cached epoch at most it, ending where the next
// cached epoch starts; one below every cached epoch is answered as itself,
// ending at the first cached start (the older records are gone); one above
// the latest, or NoEpoch, is undefined.
func (c epochCache) endFor(epoch int32, logEnd int64) EpochEnd {
	if epoch == NoEpoch || len(c) == 0 {
		return undefinedEnd
	}
	if epoch == c.latest() {
		return EpochEnd{Epoch: epoch, EndOffset: logEnd}
	}
	hi := -1 // first entry above epoch
	for i, e := range c {
		if e.Epoch > epoch {
			hi = i
			break
		}
	}
	switch {
	case hi < 0:
		return undefinedEnd
	case hi == 0:
		return EpochEnd{Epoch: epoch, EndOffset: c[0].Start}
	}
	return EpochEnd{Epoch: c[hi-1].Epoch, EndOffset: c[hi].Start}
}

// truncateFromEnd removes the entries of offsets at or past end: the log
// was truncated to [.., end).
func (c *epochCache) truncateFromEnd(end int64) {
	es := *c
	for len(es) > 0 && es[len(es)-1].Start >= end {
		es = es[:len(es)-1]
	}
	*c = es
}

// truncateFromStart drops the entries wholly below start and moves the
// one that covers it to start: the log start moved to start.
func (c *epochCache) truncateFromStart(start int64) {
	es := *c
	i := 0
	for i+1 < len(es) && es[i+1].Start <= start {
		i++
	}
	if len(es) == 0 {
		return
	}
	es = append(es[:0], es[i:]...)
	if es[0].Start < start {
		es[0].Start = start
	}
	*c = es
}
