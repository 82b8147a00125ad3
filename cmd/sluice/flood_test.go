package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The flood of issue 13, against the broker binary: 300 connections each
// declare a 90 MB request, send its first MiB as fast as the broker reads
// it, then a few bytes at a time. (Before request memory was bounded, 30
// such connections sending all but the last byte raised the broker's
// resident memory to 3 GB.) The broker's peak resident memory grows by less
// than queued.max.request.bytes, a franz-go client produces and consumes
// meanwhile, and every trickling connection is closed once
// socket.request.receive.timeout.ms has passed, not before.
func TestBrokerBinaryBoundsRequestMemory(t *testing.T) {
	const (
		pool     = 128 << 20
		bound    = 4 * time.Second
		conns    = 300
		declared = 90_000_000
		burst    = 1 << 20
	)
	bin := buildSluice(t)
	dir := t.TempDir()
	props := filepath.Join(dir, "server.properties")
	err := os.WriteFile(props, []byte(fmt.Sprintf("queued.max.request.bytes=%d\nsocket.request.max.bytes=%d\nsocket.request.receive.timeout.ms=%d\n",
		pool, 90<<20, bound.Milliseconds())), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	addr, cmd := startBrokerProcess(t, bin, filepath.Join(dir, "data"), "--config", props)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DisableIdempotentWrite(), kgo.ProducerLinger(0),
		kgo.ConsumeTopics("flood"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "flood"); err != nil {
		t.Fatal(err)
	}
	// Warm up (metadata, the partition, the consumer's position), so that
	// the part under the flood is quick.
	produceConsume := func(n int) error {
		for i := range n {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "flood", Value: []byte("v" + strconv.Itoa(i))}).FirstErr(); err != nil {
				return fmt.Errorf("produce: %w", err)
			}
		}
		for got := 0; got < n; {
			fs := cl.PollFetches(ctx)
			if err := fs.Err0(); err != nil {
				return fmt.Errorf("consume: %w", err)
			}
			got += fs.NumRecords()
		}
		return nil
	}
	if err := produceConsume(1); err != nil {
		t.Fatal(err)
	}
	baseline := procStatusKB(t, cmd.Process.Pid, "VmRSS")

	// The flood. Each connection writes its size prefix, then the burst in
	// 4 KiB writes (they block while the broker does not read it), then 8
	// bytes every 50 ms; a reader notes when the broker closes it.
	chunk := make([]byte, 4<<10)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var started, finished sync.WaitGroup
	closedAfter := make([]time.Duration, conns)
	closeErr := make([]error, conns)
	for i := range conns {
		nc, err := net.DialTimeout("tcp", addr, 10*time.Second)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		defer nc.Close()
		started.Add(1)
		finished.Add(1)
		go func() {
			start := time.Now()
			closed := make(chan struct{})
			go func() {
				defer finished.Done()
				defer close(closed)
				nc.SetReadDeadline(time.Now().Add(bound + 40*time.Second))
				var b [1]byte
				n, err := nc.Read(b[:])
				closedAfter[i] = time.Since(start)
				if n > 0 || !(errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF)) {
					closeErr[i] = fmt.Errorf("read %d bytes, %v; want the broker to close the connection", n, err)
				}
			}()
			nc.SetWriteDeadline(time.Now().Add(bound + 40*time.Second))
			if _, err := nc.Write(binary.BigEndian.AppendUint32(nil, declared)); err != nil {
				started.Done()
				return
			}
			started.Done()
			for sent := 0; sent < burst; sent += len(chunk) {
				if _, err := nc.Write(chunk); err != nil {
					return
				}
			}
			for {
				select {
				case <-closed:
					return
				case <-tick.C:
					if _, err := nc.Write(chunk[:8]); err != nil {
						return
					}
				}
			}
		}()
	}
	started.Wait()
	floodStart := time.Now()

	if err := produceConsume(100); err != nil {
		t.Fatalf("a franz-go client under the flood: %v", err)
	}
	servedAfter := time.Since(floodStart)
	peakDuring := procStatusKB(t, cmd.Process.Pid, "VmHWM")
	finished.Wait()
	peak := procStatusKB(t, cmd.Process.Pid, "VmHWM")

	first := closedAfter[0]
	for i := range conns {
		if closeErr[i] != nil {
			t.Errorf("connection %d: %v", i, closeErr[i])
		}
		if closedAfter[i] < bound {
			t.Errorf("connection %d closed %v after its first byte, before socket.request.receive.timeout.ms (%v)", i, closedAfter[i], bound)
		}
		first = min(first, closedAfter[i])
	}
	if servedAfter >= first {
		t.Errorf("the franz-go client finished %v into the flood, after the first trickling connection was closed (%v): not meanwhile", servedAfter, first)
	}
	growth := (peak - baseline) << 10
	t.Logf("broker RSS %d MiB before the flood, peak %d MiB (%d MiB while the client was served); growth %d MiB, bound %d MiB; client served in %v; connections closed %v to %v after their first byte",
		baseline>>10, peak>>10, peakDuring>>10, growth>>20, pool>>20, servedAfter.Round(time.Millisecond), first.Round(time.Millisecond), maxOf(closedAfter).Round(time.Millisecond))
	if growth > pool {
		t.Errorf("the broker's resident memory grew by %d MiB under the flood, more than queued.max.request.bytes (%d MiB)", growth>>20, pool>>20)
	}
}

// procStatusKB reads a kB field (VmRSS, VmHWM) of /proc/PID/status.
func procStatusKB(t *testing.T, pid int, field string) int64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("%s: %q", field, v)
			}
			return n
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

func maxOf(ds []time.Duration) time.Duration {
	var m time.Duration
	for _, d := range ds {
		m = max(m, d)
	}
	return m
}
