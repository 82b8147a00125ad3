package bench

import (
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// rawCopyFloor is the raw cost, on the benchmark's file system and
// loopback, of what a new replica's copy does at least: every file of
// files sent over one loopback TCP connection with sendfile(2) (as a
// leader answers a fetch) and, on the other side, read into a 1 MiB
// buffer and written to a new file under dir (as a follower appends the
// answer). One stream, no protocol, no index, no fallocate: the same-run
// baseline of a move's MB/s. The copies are removed before it returns.
func rawCopyFloor(b *testing.B, files []string, dir string) (int64, time.Duration) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	sizes := make([]int64, len(files))
	for i, name := range files {
		fi, err := os.Stat(name)
		if err != nil {
			b.Fatal(err)
		}
		sizes[i] = fi.Size()
	}
	sent := make(chan error, 1)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			sent <- err
			return
		}
		defer conn.Close()
		for _, name := range files {
			f, err := os.Open(name)
			if err != nil {
				sent <- err
				return
			}
			_, err = io.Copy(conn, f) // *net.TCPConn.ReadFrom(*os.File): sendfile
			f.Close()
			if err != nil {
				sent <- err
				return
			}
		}
		sent <- nil
	}()
	out, err := os.MkdirTemp(dir, "rawcopy")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(out)
	buf := make([]byte, 1<<20)
	start := time.Now()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	var total int64
	for i, size := range sizes {
		f, err := os.Create(filepath.Join(out, filepath.Base(filepath.Dir(files[i]))+"-"+filepath.Base(files[i])))
		if err != nil {
			b.Fatal(err)
		}
		for left := size; left > 0; {
			n, err := io.ReadFull(conn, buf[:min(left, int64(len(buf)))])
			if err == nil {
				_, err = f.Write(buf[:n])
			}
			if err != nil {
				b.Fatalf("raw copy of %s: %v", files[i], err)
			}
			left -= int64(n)
		}
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
		total += size
	}
	took := time.Since(start)
	if err := <-sent; err != nil {
		b.Fatalf("raw copy: sending: %v", err)
	}
	return total, took
}
