package zk

import (
	"errors"
	"fmt"
)

// ErrBadZnode marks a znode whose data is not a payload Kafka's ZooKeeper
// mode writes: not JSON, a field missing or of the wrong type, a value out
// of range. The error names the znode's path:
//
//	zk: bad znode data: /brokers/ids/1: "jmx_port" missing
//
// Callers treat it as corruption of that znode, never as a transient
// failure: reading it again gives the same bytes.
var ErrBadZnode = errors.New("zk: bad znode data")

// bad returns an ErrBadZnode error naming path.
func bad(path, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrBadZnode, path, fmt.Sprintf(format, args...))
}

// Errors of the topic administration any broker does (admin.go). Each is
// returned wrapped with Kafka's message for the case, which Message gives:
//
//	errors.Is(err, ErrTopicExists)
//	err.Error()  == "zk: topic already exists: Topic 'orders' already exists."
//	Message(err) == "Topic 'orders' already exists."
var (
	// ErrTopicExists is a topic created again, or while it is being
	// deleted (TOPIC_ALREADY_EXISTS).
	ErrTopicExists = errors.New("zk: topic already exists")
	// ErrTopicCollision is a topic whose name differs from an existing
	// one only by '.' and '_', which collide in metric names
	// (INVALID_TOPIC_EXCEPTION).
	ErrTopicCollision = errors.New("zk: topic collides with an existing topic")
	// ErrTopicDeleting is partitions added to a topic being deleted
	// (INVALID_TOPIC_EXCEPTION).
	ErrTopicDeleting = errors.New("zk: topic is being deleted")
	// ErrUnknownTopic is the deletion or growth of a topic that does not exist
	// (UNKNOWN_TOPIC_OR_PARTITION).
	ErrUnknownTopic = errors.New("zk: unknown topic")
)

// kafkaError is one of the sentinels above with Kafka's message.
type kafkaError struct {
	kind error
	msg  string
}

func (e *kafkaError) Error() string { return e.kind.Error() + ": " + e.msg }
func (e *kafkaError) Unwrap() error { return e.kind }

func kafkaFail(kind error, format string, args ...any) error {
	return &kafkaError{kind, fmt.Sprintf(format, args...)}
}

// Message returns the text for a response's ErrorMessage: Kafka's message
// for one of the errors above, or err's text for any other, "" for nil.
func Message(err error) string {
	var ke *kafkaError
	switch {
	case err == nil:
		return ""
	case errors.As(err, &ke):
		return ke.msg
	}
	return err.Error()
}
