package group

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func txnCommitReq(group string, pid int64, epoch int16, offset int64, partitions ...int32) *kmsg.TxnOffsetCommitRequest {
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.Version = 3
	req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = "tx", group, pid, epoch
	rt := kmsg.NewTxnOffsetCommitRequestTopic()
	rt.Topic = "t"
	for _, p := range partitions {
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch = p, offset, 3
		md := fmt.Sprintf("txn%d", p)
		rp.Metadata = &md
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

func txnCodes(resp *kmsg.TxnOffsetCommitResponse) map[int32]int16 {
	out := map[int32]int16{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			out[p.Partition] = p.ErrorCode
		}
	}
	return out
}

func mustTxnCommit(t *testing.T, c *Coordinator, req *kmsg.TxnOffsetCommitRequest) {
	t.Helper()
	for p, ec := range txnCodes(c.TxnOffsetCommit(req)) {
		if ec != 0 {
			t.Fatalf("TxnOffsetCommit partition %d: %v", p, kerr.ErrorForCode(ec))
		}
	}
}

// fetchStable is fetch with RequireStable (v8).
func fetchStable(c *Coordinator, group string, partitions ...int32) map[int32]kmsg.OffsetFetchResponseGroupTopicPartition {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version, req.RequireStable = 8, true
	rg := kmsg.NewOffsetFetchRequestGroup()
	rg.Group = group
	rt := kmsg.NewOffsetFetchRequestGroupTopic()
	rt.Topic, rt.Partitions = "t", partitions
	rg.Topics = append(rg.Topics, rt)
	req.Groups = append(req.Groups, rg)
	out := map[int32]kmsg.OffsetFetchResponseGroupTopicPartition{}
	for _, t := range c.OffsetFetch(req).Groups[0].Topics {
		for _, p := range t.Partitions {
			out[p.Partition] = p
		}
	}
	return out
}

// TestTxnOffsetCommitVisibleAfterCommit: pending offsets are invisible,
// unstable for RequireStable, committed by the producer's COMMIT marker on
// the group's partition, dropped by an ABORT.
func TestTxnOffsetCommitVisibleAfterCommit(t *testing.T) {
	f := newFixture(t)
	p := PartitionFor("g", 50)
	mustTxnCommit(t, f.c, txnCommitReq("g", 9, 0, 100, 0, 1))
	if got := fetch(f.c, "g", 0, 1); got[0].Offset != -1 || got[1].Offset != -1 || got[0].ErrorCode != 0 {
		t.Fatalf("pending offsets visible: %+v", got)
	}
	if got := fetchStable(f.c, "g", 0, 2); got[0].ErrorCode != kerr.UnstableOffsetCommit.Code || got[2].ErrorCode != 0 {
		t.Fatalf("RequireStable: %v, %v", kerr.ErrorForCode(got[0].ErrorCode), kerr.ErrorForCode(got[2].ErrorCode))
	}
	f.c.CompleteTxn(p+1, 9, true) // another partition's marker: nothing
	if got := fetch(f.c, "g", 0); got[0].Offset != -1 {
		t.Fatalf("completed by another partition's marker: %+v", got)
	}
	f.store.mark(p, 9, true)
	f.c.CompleteTxn(p, 9, true)
	if got := fetchStable(f.c, "g", 0, 1); got[0].Offset != 100 || got[1].Offset != 100 || got[0].ErrorCode != 0 || *got[0].Metadata != "txn0" || got[0].LeaderEpoch != 3 {
		t.Fatalf("after COMMIT: %+v", got)
	}
	// An aborted transaction's offsets never show.
	mustTxnCommit(t, f.c, txnCommitReq("g", 9, 0, 200, 0))
	f.store.mark(p, 9, false)
	f.c.CompleteTxn(p, 9, false)
	if got := fetchStable(f.c, "g", 0); got[0].Offset != 100 || got[0].ErrorCode != 0 {
		t.Fatalf("after ABORT: %+v", got)
	}
	// Reloading the partition replays the same: 100 committed.
	b, gs := f.partitioned()
	b.load(gs, p, 1)
	if got := fetchStable(b.c, "g", 0, 1); got[0].Offset != 100 || got[1].Offset != 100 {
		t.Fatalf("reloaded: %+v", got)
	}
}

// TestTxnOffsetCommitLaterCommitWins: a plain commit written after the
// transactional one keeps its offset when the transaction commits (Kafka's
// olderThan); one written before is replaced. Loading replays the same.
func TestTxnOffsetCommitLaterCommitWins(t *testing.T) {
	f := newFixture(t)
	p := PartitionFor("g", 50)
	commit := func(offset int64, partition int32) {
		t.Helper()
		for _, tp := range f.c.OffsetCommit(commitReq("g", "", -1, offset, partition)).Topics[0].Partitions {
			code(t, "commit", tp.ErrorCode, nil)
		}
	}
	commit(5, 0)                                             // before: replaced
	mustTxnCommit(t, f.c, txnCommitReq("g", 4, 0, 50, 0, 1)) // 0 and 1 pending
	commit(7, 1)                                             // after: kept
	f.store.mark(p, 4, true)
	f.c.CompleteTxn(p, 4, true)
	want := func(c *Coordinator, what string) {
		t.Helper()
		if got := fetch(c, "g", 0, 1); got[0].Offset != 50 || got[1].Offset != 7 {
			t.Fatalf("%s: 0 at %d (want 50), 1 at %d (want 7)", what, got[0].Offset, got[1].Offset)
		}
	}
	want(f.c, "completed")
	b, gs := f.partitioned()
	b.load(gs, p, 1)
	want(b.c, "reloaded")
}

// TestTxnOffsetCommitPendingAcrossLoad: offsets whose marker is not in the
// log stay pending after a load, and the marker completes them then; a
// marker reported while the partition loads is applied when it is loaded.
func TestTxnOffsetCommitPendingAcrossLoad(t *testing.T) {
	f := newFixture(t)
	p := PartitionFor("g", 50)
	mustTxnCommit(t, f.c, txnCommitReq("g", 8, 2, 30, 0))
	mustTxnCommit(t, f.c, txnCommitReq("g", 6, 1, 60, 1))
	b, gs := f.partitioned()
	b.load(gs, p, 1)
	if got := fetchStable(b.c, "g", 0, 1); got[0].ErrorCode != kerr.UnstableOffsetCommit.Code || got[1].ErrorCode != kerr.UnstableOffsetCommit.Code {
		t.Fatalf("loaded pending: %+v", got)
	}
	f.store.mark(p, 8, true)
	b.c.CompleteTxn(p, 8, true)
	if got := fetchStable(b.c, "g", 0, 1); got[0].Offset != 30 || got[0].ErrorCode != 0 || got[1].ErrorCode != kerr.UnstableOffsetCommit.Code {
		t.Fatalf("after 8's COMMIT: %+v", got)
	}
	// 6's marker lands while a third coordinator loads the partition,
	// after its read.
	c3, gs3 := f.partitioned()
	c3.c.Load(p, 2)
	read := gs3.nextRead(t)
	f.store.mark(p, 6, true)
	c3.c.CompleteTxn(p, 6, true)
	close(read)
	if err := waitLoaded(c3.c, p); err != nil {
		t.Fatal(err)
	}
	if got := fetchStable(c3.c, "g", 0, 1); got[0].Offset != 30 || got[1].Offset != 60 || got[1].ErrorCode != 0 {
		t.Fatalf("marker during the load: %+v", got)
	}
}

// TestTxnOffsetCommitErrors: Kafka's validation order and codes.
func TestTxnOffsetCommitErrors(t *testing.T) {
	f := newFixture(t)
	ids, gen := f.stableGroup("g", 1)

	req := txnCommitReq("", 1, 0, 1, 0)
	if got := txnCodes(f.c.TxnOffsetCommit(req)); got[0] != kerr.InvalidGroupID.Code {
		t.Errorf("empty group id: %v", kerr.ErrorForCode(got[0]))
	}
	req = txnCommitReq("g", 1, 0, 1, 0, 99)
	req.Topics[0].Partitions[0].Metadata = new(string)
	*req.Topics[0].Partitions[0].Metadata = string(make([]byte, 5000))
	if got := txnCodes(f.c.TxnOffsetCommit(req)); got[0] != kerr.OffsetMetadataTooLarge.Code || got[99] != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("too large / unknown partition: %v / %v", kerr.ErrorForCode(got[0]), kerr.ErrorForCode(got[99]))
	}
	// v3 member checks (validateMember, shared with OffsetCommit, whose
	// tests cover static members).
	other := "other"
	for _, tc := range []struct {
		name   string
		member string
		gen    int32
		inst   *string
		want   *kerr.Error
	}{
		{"stale generation", ids[0], gen - 1, nil, kerr.IllegalGeneration},
		{"unknown member", "nobody", gen, nil, kerr.UnknownMemberID},
		{"unknown instance", ids[0], gen, &other, kerr.UnknownMemberID},
		{"member", ids[0], gen, nil, nil},
		{"no member (v0-2 style) in a stable group", "", -1, nil, nil},
	} {
		req := txnCommitReq("g", 1, 0, 1, 0)
		req.MemberID, req.Generation, req.InstanceID = tc.member, tc.gen, tc.inst
		code(t, tc.name, txnCodes(f.c.TxnOffsetCommit(req))[0], tc.want)
	}
	// An unknown group is created, whatever the generation is not.
	if got := txnCodes(f.c.TxnOffsetCommit(txnCommitReq("fresh", 1, 0, 1, 0))); got[0] != 0 {
		t.Errorf("unknown group: %v", kerr.ErrorForCode(got[0]))
	}
	// A fenced producer epoch at the partition.
	f.store.fail = fmt.Errorf("x: %w", ErrInvalidProducerEpoch)
	if got := txnCodes(f.c.TxnOffsetCommit(txnCommitReq("g", 1, 0, 1, 0))); got[0] != kerr.InvalidProducerEpoch.Code {
		t.Errorf("fenced epoch: %v", kerr.ErrorForCode(got[0]))
	}
	f.store.fail = fmt.Errorf("x: %w", ErrNotLeader)
	if got := txnCodes(f.c.TxnOffsetCommit(txnCommitReq("g", 1, 0, 1, 0))); got[0] != kerr.NotCoordinator.Code {
		t.Errorf("not leader: %v", kerr.ErrorForCode(got[0]))
	}
	f.store.fail = nil
	// Not served: another coordinator's partition.
	b, _ := f.partitioned()
	if got := txnCodes(b.c.TxnOffsetCommit(txnCommitReq("g", 1, 0, 1, 0))); got[0] != kerr.NotCoordinator.Code {
		t.Errorf("not coordinator: %v", kerr.ErrorForCode(got[0]))
	}
}

// TestExpiryKeepsGroupWithPendingTxn: an Empty group whose only offsets are
// pending in a transaction is not deleted by expiry.
func TestExpiryKeepsGroupWithPendingTxn(t *testing.T) {
	f := newFixture(t)
	mustTxnCommit(t, f.c, txnCommitReq("g", 3, 0, 10, 0))
	f.c.ExpireOffsets()
	p := PartitionFor("g", 50)
	f.c.CompleteTxn(p, 3, true)
	if got := fetch(f.c, "g", 0); got[0].Offset != 10 {
		t.Fatalf("after expiry and COMMIT: %+v", got)
	}
}

// TestTxnOffsetsOfDeletedTopic: a deleted topic's pending offsets go with
// its committed ones (Kafka's removeOffsets): a later COMMIT brings
// nothing back.
func TestTxnOffsetsOfDeletedTopic(t *testing.T) {
	f := newFixture(t)
	p := PartitionFor("g", 50)
	mustTxnCommit(t, f.c, txnCommitReq("g", 5, 0, 10, 0))
	for _, tp := range f.c.OffsetCommit(commitReq("g", "", -1, 3, 1)).Topics[0].Partitions {
		code(t, "commit", tp.ErrorCode, nil)
	}
	if n := f.c.DeleteTopicOffsets("t"); n != 1 {
		t.Errorf("removed %d offsets, want 1 (the committed one)", n)
	}
	f.c.CompleteTxn(p, 5, true)
	if got := fetch(f.c, "g", 0, 1); got[0].Offset != -1 || got[1].Offset != -1 {
		t.Fatalf("after the topic's deletion and COMMIT: %+v", got)
	}
}

// TestUnloadForgetsTxnGroups: unloading a partition forgets which of its
// groups held a producer's pending offsets.
func TestUnloadForgetsTxnGroups(t *testing.T) {
	f := newFixture(t)
	b, gs := f.partitioned()
	p := PartitionFor("g", 50)
	b.load(gs, p, 1)
	mustTxnCommit(t, b.c, txnCommitReq("g", 5, 0, 10, 0))
	b.c.Unload(p, 2)
	b.c.mu.Lock()
	n := len(b.c.mu.txnGroups)
	b.c.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d producers still mapped after the unload", n)
	}
}

// TestTxnOffsetCommitVerification: a failed verification of the group's
// partition answers every valid partition with the converted code
// (NETWORK_EXCEPTION is COORDINATOR_LOAD_IN_PROGRESS, INVALID_TXN_STATE as
// it is), writes nothing and leaves nothing pending; unknown partitions
// keep their own code.
func TestTxnOffsetCommitVerification(t *testing.T) {
	f := newFixture(t)
	p := PartitionFor("g", 50)
	for _, tc := range []struct{ verify, want int16 }{
		{kerr.InvalidTxnState.Code, kerr.InvalidTxnState.Code},
		{kerr.NetworkException.Code, kerr.CoordinatorLoadInProgress.Code},
		{kerr.NotEnoughReplicas.Code, kerr.CoordinatorNotAvailable.Code},
		{kerr.NotLeaderForPartition.Code, kerr.NotCoordinator.Code},
		{kerr.InvalidProducerEpoch.Code, kerr.InvalidProducerEpoch.Code},
	} {
		f.store.mu.Lock()
		f.store.verifyCode = tc.verify
		before := len(f.store.parts[p])
		f.store.mu.Unlock()
		got := txnCodes(f.c.TxnOffsetCommit(txnCommitReq("g", 9, 0, 100, 0, 99)))
		if got[0] != tc.want || got[99] != kerr.UnknownTopicOrPartition.Code {
			t.Fatalf("verification %v: partition 0 %v, 99 %v; want %v", kerr.ErrorForCode(tc.verify),
				kerr.ErrorForCode(got[0]), kerr.ErrorForCode(got[99]), kerr.ErrorForCode(tc.want))
		}
		f.store.mu.Lock()
		after := len(f.store.parts[p])
		f.store.mu.Unlock()
		if after != before {
			t.Fatalf("verification %v: %d records written", kerr.ErrorForCode(tc.verify), after-before)
		}
		if st := fetchStable(f.c, "g", 0); st[0].ErrorCode != 0 || st[0].Offset != -1 {
			t.Fatalf("verification %v: fetch %+v, want nothing pending", kerr.ErrorForCode(tc.verify), st[0])
		}
	}
	f.store.mu.Lock()
	f.store.verifyCode = 0
	f.store.mu.Unlock()
	mustTxnCommit(t, f.c, txnCommitReq("g", 9, 0, 100, 0))
	if st := fetchStable(f.c, "g", 0); st[0].ErrorCode != kerr.UnstableOffsetCommit.Code {
		t.Fatalf("verified: %v, want UNSTABLE_OFFSET_COMMIT", kerr.ErrorForCode(st[0].ErrorCode))
	}
}
