package replication

// The Replica: one broker's replica of one partition as a state machine,
// its events, its Ready and the Step, Ready and Advance that drive it, as
// etcd raft's RawNode. doc.go describes the loop and the invariants;
// leader.go and follower.go what each role does on each event.

import "slices"

// NoEpoch is Kafka's -1 for "no epoch": a CurrentLeaderEpoch or
// LastFetchedEpoch not sent, an empty leader-epoch cache.
const NoEpoch int32 = -1

// Defaults of Config, Kafka's.
const (
	// DefaultReplicaLagTimeMaxMs is replica.lag.time.max.ms.
	DefaultReplicaLagTimeMaxMs = 30000
	// DefaultMinInsyncReplicas is min.insync.replicas.
	DefaultMinInsyncReplicas = 1
)

// Config configures a Replica. The zero value of each field is Kafka's
// default, except Self.
type Config struct {
	// Self is this broker's id.
	Self int32
	// MinInsyncReplicas is the topic's min.insync.replicas. Default 1.
	MinInsyncReplicas int
	// ReplicaLagTimeMaxMs is replica.lag.time.max.ms: a follower that has
	// not caught up to the leader's log end for this long leaves the ISR.
	// Default 30000.
	ReplicaLagTimeMaxMs int64
}

// Role is what a Replica is for its partition.
type Role int8

// Roles.
const (
	// Offline: neither leader nor follower (new, or stopped).
	Offline Role = iota
	Leader
	Follower
)

func (r Role) String() string {
	switch r {
	case Leader:
		return "leader"
	case Follower:
		return "follower"
	}
	return "offline"
}

// LogState is the local log as a role change finds it.
type LogState struct {
	// Start and End are the log start and end offsets: records [Start, End).
	Start, End int64
	// HighWatermark is the last one known (the checkpoint's after a
	// restart); it is capped to [Start, End].
	HighWatermark int64
	// Epochs is the leader-epoch cache, ascending; it is copied.
	Epochs []EpochStart
}

// Event is an input of Step: BecomeLeader, BecomeFollower, Stop,
// LiveBrokers, Appended, LogStartAdvanced, FollowerFetch, Tick,
// MinInsyncChanged, AlterPartitionResult, WaitProduce, FetchResult,
// FetchAppended or Resume.
type Event interface{ event() }

// BecomeLeader is a LeaderAndIsr making this broker the leader at Epoch
// (Kafka's makeLeader). One whose Epoch is not above the current one is
// ignored, as Kafka ignores a stale LeaderAndIsr. The leader records
// Epoch at its log end at once (the caller must do the same in its log's
// epoch cache: Ready.AssignEpoch).
type BecomeLeader struct {
	Epoch, PartitionEpoch int32
	ISR, Replicas         []int32
	Log                   LogState
	Now                   int64
}

// BecomeFollower is a LeaderAndIsr making this broker a follower of Leader
// at Epoch (Kafka's makeFollower). Stale epochs are ignored as for
// BecomeLeader. Leader may be -1 (no leader): the replica waits.
type BecomeFollower struct {
	Leader, Epoch, PartitionEpoch int32
	Replicas                      []int32
	Log                           LogState
}

// Appended says the leader appended records [previous end, End) at Epoch
// (its current epoch) to its log.
type Appended struct {
	End   int64
	Epoch int32
}

// LogStartAdvanced says the leader's log start moved to Start (retention,
// DeleteRecords); followers follow it.
type LogStartAdvanced struct{ Start int64 }

// FollowerFetch is a Fetch from a follower (replica id set), at Now.
// Answered in Ready.Answers.
type FollowerFetch struct {
	Replica int32
	// ReplicaEpoch is the follower's broker epoch (Fetch v15's
	// ReplicaState.ReplicaEpoch, KIP-903), -1 if not sent. The leader
	// names it in AlterPartition when the follower joins the ISR, so that
	// the controller refuses a replica that restarted since.
	ReplicaEpoch       int64
	FetchOffset        int64
	LastFetchedEpoch   int32
	CurrentLeaderEpoch int32
	Now                int64
}

// MinInsyncChanged is a new min.insync.replicas for the topic (a config
// change): the high watermark may advance, or stop advancing, at once.
type MinInsyncChanged struct{ MinInsyncReplicas int }

// Tick is the clock: time is Now (milliseconds, any origin, never going
// back). The leader shrinks the ISR and expires produces on it.
type Tick struct{ Now int64 }

// AlterPartitionResult answers Request, a Ready.AlterPartition: the
// controller's new state (ISR, LeaderEpoch, PartitionEpoch), or Err.
type AlterPartitionResult struct {
	Request        AlterPartition
	Err            error
	ISR            []int32
	LeaderEpoch    int32
	PartitionEpoch int32
}

// WaitProduce registers an acks=all produce whose last record is at
// Offset-1: it completes once the high watermark reaches Offset, fails
// at Deadline (a Now of Tick), or when the leader steps down. Ref is the
// caller's.
type WaitProduce struct {
	Ref      uint64
	Offset   int64
	Deadline int64
}

// FetchResult is the leader's answer to the follower's FetchRequest Seq,
// or Err (ErrUnreachable, or the answer's error). Batches are the record
// batches it carried, in order; the Replica keeps a reference to none.
type FetchResult struct {
	Seq            uint64
	Err            error
	Diverged       bool
	Diverging      EpochEnd
	HighWatermark  int64
	LeaderLogStart int64
	LeaderLogEnd   int64
	Batches        []Batch
}

// FetchAppended is the log's outcome of the Ready.Append of fetch Seq:
// End is the log end after it (the first batch's Base if the log took
// none, a batch's End if it took the batches up to that one: a partial
// append), Err nil if it took them all. Err wrapping ErrRecordsRefused
// says the log refused a batch as damaged (a CRC mismatch, an invalid
// batch): it is fetched again from End after the backoff. Any other Err
// (a storage error, a log that does not end where the replica's view of
// it does) fails the follower until Resume or a role change.
type FetchAppended struct {
	Seq uint64
	End int64
	Err error
}

// Resume starts a follower that failed (Replica.Failed) again, from its
// log as Log describes it (reopened, or read again): the driver's retry,
// after a backoff.
type Resume struct{ Log LogState }

// Batch is a record batch as a leader wrote it: offsets [Base, End) of
// leader epoch Epoch.
type Batch struct {
	Base, End int64
	Epoch     int32
}

// Stop makes the replica neither leader nor follower (StopReplica without
// deletion: a controlled shutdown's partitions it does not lead, or a
// replica moving away): waiting produces fail, no fetch is asked. A later
// BecomeLeader or BecomeFollower, at any epoch, starts it again.
type Stop struct{}

func (Stop) event() {}

// LiveBrokers is the broker ids the broker's metadata says are live (an
// UpdateMetadata's live brokers). A leader counts a caught-up follower
// outside the ISR as about to join it, bounding the high watermark, only
// if its broker is live; it proposes no dead one for the ISR.
type LiveBrokers struct{ IDs []int32 }

func (LiveBrokers) event()          {}
func (BecomeLeader) event()         {}
func (BecomeFollower) event()       {}
func (Appended) event()             {}
func (LogStartAdvanced) event()     {}
func (FollowerFetch) event()        {}
func (Tick) event()                 {}
func (MinInsyncChanged) event()     {}
func (AlterPartitionResult) event() {}
func (WaitProduce) event()          {}
func (FetchResult) event()          {}
func (FetchAppended) event()        {}
func (Resume) event()               {}

// AlterPartition is an ISR change the leader asks the controller for
// (Kafka's AlterPartition request for one partition).
type AlterPartition struct {
	Leader, LeaderEpoch, PartitionEpoch int32
	ISR                                 []int32
	// BrokerEpochs are the ISR members' broker epochs as their last fetch
	// gave them (-1 unknown), parallel to ISR (AlterPartition v3's
	// NewIsrWithEpochs, KIP-903).
	BrokerEpochs []int64
	// Seq numbers the proposals of this replica: an answer is matched to
	// its request by it, as Kafka's AlterPartitionManager matches its
	// in-flight request, so a late duplicate answer is ignored.
	Seq uint64
}

// FetchAnswer is the leader's answer to a FollowerFetch of Replica: Err;
// or a DivergingEpoch (Diverged, no records); or the records [From,
// LogEnd) (as many as the fetch's byte limits allow; none if From ==
// LogEnd). HighWatermark and LogStart go in every answer that has no Err.
type FetchAnswer struct {
	Replica       int32
	Err           error
	Diverged      bool
	Diverging     EpochEnd
	From          int64
	LogEnd        int64
	HighWatermark int64
	LogStart      int64
}

// Completion is the outcome of a WaitProduce: Err nil (acknowledged),
// kerr.NotEnoughReplicasAfterAppend, kerr.RequestTimedOut or
// kerr.NotLeaderForPartition.
type Completion struct {
	Ref uint64
	Err error
}

// FetchRequest is the follower's next fetch from Leader: Fetch's
// FetchOffset, LastFetchedEpoch and CurrentLeaderEpoch. It is answered by
// one FetchResult carrying Seq.
type FetchRequest struct {
	Seq                uint64
	Leader             int32
	Offset             int64
	LastFetchedEpoch   int32
	CurrentLeaderEpoch int32
	// Backoff says the last fetch's records were refused: this one waits
	// replica.fetch.backoff.ms before it is sent.
	Backoff bool
}

// Truncation is a follower's truncation: the log to [.., Offset); or,
// Fully, every record dropped and the log restarted empty at Offset.
type Truncation struct {
	Offset int64
	Fully  bool
}

// Ready is what the Replica decided since the last Advance, to perform in
// this order: Truncate, then Append, then the rest. Slices are valid until
// the next Step.
type Ready struct {
	// Truncate is the follower's truncation, if Truncated.
	Truncated bool
	Truncate  Truncation
	// Append are the batches of the FetchResult to append as they are;
	// the log's outcome is stepped back as FetchAppended (Seq AppendSeq)
	// before the follower fetches again.
	Append    []Batch
	AppendSeq uint64
	// AssignEpoch, if NewEpoch, is the entry a new leader records in its
	// log's epoch cache: its epoch, starting at its log end.
	AssignEpoch EpochStart
	NewEpoch    bool
	// HighWatermark is the new high watermark, if HighWatermarkChanged.
	HighWatermark        int64
	HighWatermarkChanged bool
	// LogStart is the follower's new log start offset, if LogStartChanged.
	LogStart        int64
	LogStartChanged bool
	// AlterPartition is the ISR change to send, if any. After an error
	// worth retrying the same one (same Seq) is handed out at every Tick
	// and follower fetch until an answer to it is stepped: the driver sends
	// a Seq it has in flight once.
	AlterPartition *AlterPartition
	// Answers are the answers to FollowerFetch events, in order.
	Answers []FetchAnswer
	// Completed are the WaitProduce outcomes.
	Completed []Completion
	// Fetch is the follower's next fetch, if Fetching.
	Fetch    FetchRequest
	Fetching bool
}

// Empty reports whether rd asks for nothing.
func (rd *Ready) Empty() bool {
	return !rd.Truncated && len(rd.Append) == 0 && !rd.NewEpoch && !rd.HighWatermarkChanged && !rd.LogStartChanged &&
		rd.AlterPartition == nil && len(rd.Answers) == 0 && len(rd.Completed) == 0 && !rd.Fetching
}

// Replica is one broker's replica of one partition. It is not safe for
// concurrent use.
type Replica struct {
	cfg  Config
	role Role

	leader         int32
	epoch          int32
	partitionEpoch int32
	replicas       []int32

	// The local log as this replica knows it: [start, end), hw, epochs.
	start, end, hw int64
	epochs         epochCache

	leaderState
	followerState

	rd     Ready
	handed bool
}

// New returns an Offline replica.
func New(cfg Config) *Replica {
	if cfg.MinInsyncReplicas <= 0 {
		cfg.MinInsyncReplicas = DefaultMinInsyncReplicas
	}
	if cfg.ReplicaLagTimeMaxMs <= 0 {
		cfg.ReplicaLagTimeMaxMs = DefaultReplicaLagTimeMaxMs
	}
	return &Replica{cfg: cfg, leader: -1, epoch: NoEpoch}
}

// Step feeds the replica one event. It panics if called between a
// non-empty Ready and its Advance: a bug of the caller.
func (r *Replica) Step(ev Event) {
	if r.handed {
		panic("replication: Step before Advance")
	}
	switch ev := ev.(type) {
	case BecomeLeader:
		r.becomeLeader(ev)
	case BecomeFollower:
		r.becomeFollower(ev)
	case LiveBrokers:
		r.liveBrokers(ev)
	case Stop:
		if r.role != Offline {
			r.changeRole(Offline, -1, r.epoch, r.partitionEpoch, r.replicas)
		}
	case Appended:
		r.appended(ev)
	case LogStartAdvanced:
		r.logStartAdvanced(ev)
	case FollowerFetch:
		r.followerFetch(ev)
	case Tick:
		r.tick(ev.Now)
	case MinInsyncChanged:
		r.cfg.MinInsyncReplicas = max(ev.MinInsyncReplicas, 1)
		r.maybeAdvanceHighWatermark()
	case AlterPartitionResult:
		r.alterPartitionResult(ev)
	case WaitProduce:
		r.waitProduce(ev)
	case FetchResult:
		r.fetchResult(ev)
	case FetchAppended:
		r.fetchAppended(ev)
	case Resume:
		r.resume(ev)
	default:
		panic("replication: unknown event")
	}
}

// Ready returns what the replica decided since the last Advance. Called
// again before Advance, it returns the same.
func (r *Replica) Ready() Ready {
	if !r.rd.Empty() {
		r.handed = true
	}
	return r.rd
}

// Advance acknowledges the last Ready: everything it asked for was done
// (the log truncated and appended, the epoch assigned) or is under way
// (the fetch and AlterPartition sent, the answers and completions
// delivered).
func (r *Replica) Advance() {
	r.handed = false
	r.rd = Ready{Answers: r.rd.Answers[:0], Completed: r.rd.Completed[:0]}
}

// Role returns the replica's role.
func (r *Replica) Role() Role { return r.role }

// LeaderEpoch returns the leader epoch of the last role change.
func (r *Replica) LeaderEpoch() int32 { return r.epoch }

// Leader returns the leader's id (-1 if none or offline).
func (r *Replica) Leader() int32 { return r.leader }

// HighWatermark returns the high watermark.
func (r *Replica) HighWatermark() int64 { return r.hw }

// LogEnd returns the log end offset as the replica knows it.
func (r *Replica) LogEnd() int64 { return r.end }

// LogStart returns the log start offset as the replica knows it.
func (r *Replica) LogStart() int64 { return r.start }

// Epochs returns a copy of the replica's leader-epoch cache.
func (r *Replica) Epochs() []EpochStart { return slices.Clone(r.epochs) }

// Replicas returns the assigned replicas (shared: do not modify).
func (r *Replica) Replicas() []int32 { return r.replicas }

// setLog takes a role change's view of the log.
func (r *Replica) setLog(l LogState) {
	r.start, r.end = l.Start, l.End
	r.hw = min(max(l.HighWatermark, l.Start), l.End)
	r.epochs = append(r.epochs[:0], l.Epochs...)
}

// setHighWatermark records a new high watermark for the Ready.
func (r *Replica) setHighWatermark(hw int64) {
	if hw == r.hw {
		return
	}
	r.hw = hw
	r.rd.HighWatermark, r.rd.HighWatermarkChanged = hw, true
}

// changeRole leaves the current role: waiting produces fail, fetch state
// is dropped.
func (r *Replica) changeRole(role Role, leader, epoch, partitionEpoch int32, replicas []int32) {
	if r.role == Leader && role != Leader {
		r.failWaiters()
	}
	r.role, r.leader, r.epoch, r.partitionEpoch = role, leader, epoch, partitionEpoch
	r.replicas = append(r.replicas[:0], replicas...)
	r.leaderState.reset(role == Leader)
	r.followerState.reset()
}
