package replication

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
)

// The errors the Replica decides, as franz-go's kerr values so that a
// broker answers kerr's Code for each unchanged:
//
//   - kerr.FencedLeaderEpoch: a fetch whose CurrentLeaderEpoch is below
//     the leader's (the follower is behind), or an AlterPartition answer.
//   - kerr.UnknownLeaderEpoch: a fetch whose CurrentLeaderEpoch is above
//     the leader's (this broker has not heard of the new epoch yet).
//   - kerr.NotLeaderForPartition: a fetch from a replica while not leader, or
//     a waiting produce whose leader stepped down.
//   - kerr.OffsetOutOfRange: a follower fetch below the log start or past
//     the log end.
//   - kerr.ReplicaNotAvailable: a fetch from a broker that is not a replica.
//   - kerr.NotEnoughReplicas: an acks=all produce refused before its
//     append, the ISR being below min.insync.replicas.
//   - kerr.NotEnoughReplicasAfterAppend: an acks=all produce whose records
//     the high watermark passed while the ISR was below it.
//   - kerr.RequestTimedOut: an acks=all produce past its deadline.
//
// AlterPartitionResult.Err takes the controller's kerr errors
// (kerr.InvalidUpdateVersion, kerr.FencedLeaderEpoch,
// kerr.OperationNotAttempted, kerr.IneligibleReplica, ...); FetchResult.Err
// any kerr error of the leader's answer, or ErrUnreachable.
var (
	// ErrUnreachable is a fetch or AlterPartition that got no answer (the
	// connection failed or the request timed out).
	ErrUnreachable = errors.New("replication: no answer")
	// ErrRecordsRefused, in FetchAppended.Err, is a fetched batch the
	// log refused as damaged (Kafka's CorruptRecordException and
	// InvalidRecordException): fetched again after the backoff.
	ErrRecordsRefused = errors.New("replication: the log refused the fetched records")
	// ErrLogMismatch is a follower's log that does not continue where the
	// replica's view of it ends (Replica.Failed's reason): something
	// appended to it or truncated it behind the replica's back.
	ErrLogMismatch = errors.New("replication: the log and the replica's view of it disagree")
)

// Code returns the Kafka error code of err (0 for nil, -1, UNKNOWN_SERVER_ERROR,
// for an error that is not Kafka's).
func Code(err error) int16 {
	if err == nil {
		return 0
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return kerr.UnknownServerError.Code
}
