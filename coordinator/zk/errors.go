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
