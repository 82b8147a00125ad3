package zktest

import (
	"os"
	"sync"
	"testing"
)

// Lazy is a test package's one server, started by the first test that
// asks for it (Get) and stopped by the package's TestMain (Stop): for
// packages where most tests need none. The zero value is ready to use.
type Lazy struct {
	once sync.Once
	dir  string
	s    *Server
	err  error
}

// Get starts the server on the first call, with its data in a new
// temporary directory, and returns it; nil and the reason if it could not
// start (ErrNotInstalled without ZooKeeper). Later calls return the same.
func (l *Lazy) Get() (*Server, error) {
	l.once.Do(func() {
		l.dir, l.err = os.MkdirTemp("", "sluice-zk-")
		if l.err == nil {
			l.s, l.err = Start(l.dir, Options{})
		}
	})
	return l.s, l.err
}

// Server is Get for a test: without a server the test fails under CI
// ($CI set) and is skipped elsewhere.
func (l *Lazy) Server(tb testing.TB) *Server {
	tb.Helper()
	s, err := l.Get()
	if s == nil {
		if os.Getenv("CI") != "" {
			tb.Fatalf("ZooKeeper: %v", err)
		}
		tb.Skipf("ZooKeeper: %v", err)
	}
	return s
}

// Stop stops the server, if Get started one, and removes its directory.
func (l *Lazy) Stop() {
	if l.s != nil {
		l.s.Stop()
	}
	if l.dir != "" {
		os.RemoveAll(l.dir)
	}
}
