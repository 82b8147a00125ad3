// Package zktest starts a real ZooKeeper server for tests (package
// zkserver's, on a random loopback port with a 200 ms tickTime). One server
// per test package is the intended use (TestMain starts it), with a chroot
// per test (Chroot) so that tests do not see each other's znodes.
package zktest

import (
	"fmt"
	"os"
	"sync/atomic"

	"github.com/sluice-io/sluice/coordinator/zk/zkserver"
)

// Jar is where Debian's zookeeper package installs the server.
const Jar = zkserver.Jar

// ErrNotInstalled is returned by Start when ZooKeeper or java is missing.
var ErrNotInstalled = zkserver.ErrNotInstalled

// Options are a server's settings; the zero value is the defaults.
type Options = zkserver.Options

// Server is a running ZooKeeper.
type Server = zkserver.Server

// Start runs a ZooKeeper server with its data in dir (a test's TempDir)
// and waits until it answers.
func Start(dir string, o Options) (*Server, error) { return zkserver.Start(dir, o) }

var chroots atomic.Int64

// Chroot returns a new chroot path, unique in the process, for one test:
// "/sluice-test-<pid>-<n>". Connect strings take it as a suffix
// (host:port/chroot); the path is created by whoever connects first with
// it (the ZooKeeper backend creates its chroot, as Kafka does).
func Chroot() string {
	return fmt.Sprintf("/sluice-test-%d-%d", os.Getpid(), chroots.Add(1))
}
