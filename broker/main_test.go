package broker

import (
	"os"
	"testing"
)

// TestMain runs every test of the package with each request's frame
// overwritten as soon as the request is handled (the requestHandled seam), so
// a handler that keeps a view into request memory past its request - the
// next request on the connection overwrites it in production - fails the
// test that reads it back instead of passing by luck.
func TestMain(m *testing.M) {
	requestHandled = scribble
	code := m.Run()
	stopPackageZK() // cluster_harness_test.go
	os.Exit(code)
}

// scribble overwrites a handled frame with a pattern no test's data
// contains.
func scribble(frame []byte) {
	for i := range frame {
		frame[i] = 0xEE
	}
}
