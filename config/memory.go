package config

import (
	"bufio"
	"math"
	"os"
	"path"
	"runtime/debug"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// AvailableMemory is the memory this process may use: the least of the
// machine's physical memory, the limit of its cgroup and every ancestor
// cgroup (v2 memory.max, or v1 memory.limit_in_bytes), and GOMEMLIMIT when
// it is set. It is what the default of queued.max.request.bytes is a
// fraction of.
func AvailableMemory() int64 {
	limit := int64(math.MaxInt64)
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) == nil && si.Totalram > 0 {
		limit = int64(si.Totalram) * int64(max(si.Unit, 1))
	}
	if n := cgroupMemoryLimit(); n > 0 {
		limit = min(limit, n)
	}
	if n := debug.SetMemoryLimit(-1); n > 0 && n < math.MaxInt64 {
		limit = min(limit, n)
	}
	return limit
}

// cgroupMemoryLimit is the least memory limit of this process's cgroup and
// its ancestors, or 0 if none is set or it cannot be read.
func cgroupMemoryLimit() int64 {
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return 0
	}
	defer f.Close()
	var least int64
	keep := func(n int64) {
		if n > 0 && (least == 0 || n < least) {
			least = n
		}
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// hierarchy-id:controllers:path; v2 is "0::path".
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			for dir := parts[2]; ; dir = path.Dir(dir) {
				keep(readLimit(path.Join("/sys/fs/cgroup", dir, "memory.max")))
				if dir == "/" || dir == "." {
					break
				}
			}
		case strings.Contains(","+parts[1]+",", ",memory,"):
			keep(readLimit(path.Join("/sys/fs/cgroup/memory", parts[2], "memory.limit_in_bytes")))
		}
	}
	return least
}

// readLimit reads a cgroup memory limit file: a number of bytes, or "max".
// Absent, unlimited or unreadable is 0. (cgroup v1 shows no limit as a
// number near 2^63.)
func readLimit(file string) int64 {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || n >= math.MaxInt64/2 {
		return 0
	}
	return n
}
