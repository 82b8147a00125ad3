package controller

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Errors of placement and of the checks of explicit assignments. Each is
// returned wrapped with Kafka's message for the case, so that
//
//	errors.Is(err, ErrInvalidReplicationFactor)
//	Code(err)    == kerr.InvalidReplicationFactor.Code
//	Message(err) == "Replication factor: 4 larger than available brokers: 3."
//
// and a broker answers with Code and Message as Kafka 3.9 would.
var (
	// ErrInvalidPartitions is a partition count below 1, or one that does
	// not grow the topic (INVALID_PARTITIONS).
	ErrInvalidPartitions = errors.New("controller: invalid partitions")
	// ErrInvalidReplicationFactor is a replication factor below 1 or above
	// the number of live brokers (INVALID_REPLICATION_FACTOR).
	ErrInvalidReplicationFactor = errors.New("controller: invalid replication factor")
	// ErrInvalidReplicaAssignment is an explicit replica assignment Kafka
	// refuses (INVALID_REPLICA_ASSIGNMENT).
	ErrInvalidReplicaAssignment = errors.New("controller: invalid replica assignment")
	// ErrInvalidRequest is a CreateTopics topic with both counts and an
	// explicit assignment (INVALID_REQUEST).
	ErrInvalidRequest = errors.New("controller: invalid request")
	// ErrIncompleteRacks is rack-aware placement over brokers of which some
	// have no rack. Kafka throws an AdminOperationException, which reaches
	// clients as UNKNOWN_SERVER_ERROR with its message.
	ErrIncompleteRacks = errors.New("controller: not all brokers have a rack")
)

// Errors a WriteResult wraps (the driver's translation of ZooKeeper's).
var (
	// ErrControllerMoved is a write that failed the check of
	// /controller_epoch's version: another controller was elected, and this
	// one must stop.
	ErrControllerMoved = errors.New("controller: controller moved")
	// ErrConflict is a state znode that was not as the write expected it:
	// BADVERSION on an update, NODEEXISTS on a create, NONODE on an update.
	ErrConflict = errors.New("controller: partition state changed")
)

var codes = map[error]int16{
	ErrInvalidPartitions:        kerr.InvalidPartitions.Code,
	ErrInvalidReplicationFactor: kerr.InvalidReplicationFactor.Code,
	ErrInvalidReplicaAssignment: kerr.InvalidReplicaAssignment.Code,
	ErrInvalidRequest:           kerr.InvalidRequest.Code,
	ErrIncompleteRacks:          kerr.UnknownServerError.Code,
}

// kafkaError is one of the sentinels above with Kafka's message.
type kafkaError struct {
	kind error
	msg  string
}

func (e *kafkaError) Error() string { return e.kind.Error() + ": " + e.msg }
func (e *kafkaError) Unwrap() error { return e.kind }

func fail(kind error, format string, args ...any) error {
	return &kafkaError{kind, fmt.Sprintf(format, args...)}
}

// Code returns the Kafka error code to answer err with: its sentinel's,
// UNKNOWN_SERVER_ERROR for any other error, 0 for nil.
func Code(err error) int16 {
	if err == nil {
		return 0
	}
	var ke *kafkaError
	if errors.As(err, &ke) {
		return codes[ke.kind]
	}
	return kerr.UnknownServerError.Code
}

// Message returns the text for the response's ErrorMessage: Kafka's message
// for the case, or err's text for any other error, "" for nil.
func Message(err error) string {
	if err == nil {
		return ""
	}
	var ke *kafkaError
	if errors.As(err, &ke) {
		return ke.msg
	}
	return err.Error()
}

// Fail returns an error of kind (one of the errors above) with Kafka's
// message for the case, which Code and Message give: for backends that
// refuse requests the placement would take (the single node's).
func Fail(kind error, format string, args ...any) error { return fail(kind, format, args...) }
