package bench

// The CPU time of another process (ZooKeeper, in the replication
// benchmarks), read from /proc.

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// procCPU is the CPU time (user and system) process pid has used so far,
// every thread's, from /proc/<pid>/stat: fields 14 and 15, in clock ticks
// (USER_HZ, 100 a second on Linux).
func procCPU(pid int) (time.Duration, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces:
	// the fields after it start at the last ')'.
	s := string(raw)
	i := strings.LastIndexByte(s, ')')
	var f []string
	if i >= 0 {
		f = strings.Fields(s[i+1:]) // f[0] is field 3
	}
	if len(f) < 13 {
		return 0, fmt.Errorf("bench: /proc/%d/stat: %d fields after the command name", pid, len(f))
	}
	var ticks int64
	for _, field := range f[11:13] {
		n, err := strconv.ParseInt(field, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("bench: /proc/%d/stat: %w", pid, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * (time.Second / 100), nil
}

// procCPU, which reads another process's CPU time from /proc, agrees with
// getrusage on this process's, to a few clock ticks.
func TestProcCPUAgreesWithGetrusage(t *testing.T) {
	for start := cpuTime(); cpuTime()-start < 200*time.Millisecond; {
	}
	proc, err := procCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	self := cpuTime()
	if proc < 200*time.Millisecond || proc > self+20*time.Millisecond || self-proc > 100*time.Millisecond {
		t.Fatalf("/proc says %v of CPU, getrusage %v just after", proc, self)
	}
	if _, err := procCPU(-1); err == nil {
		t.Fatal("no error for process -1")
	}
}
