package broker

import (
	"os/exec"
	"strings"
	"testing"
)

// layers are the project's packages from the bottom up (README.md's "The
// house"): a package imports only packages of lower layers, so every
// arrow runs down. A package missing here fails the test: place it.
var layers = [][]string{
	{"engine", "wire", "metrics", "replication", "coordinator/group", "coordinator/zk/zkserver", "cmd/sluice/reassign",
		"security/acl", "security/jaas", "security/plain", "security/scram", "security/tlsconf"},
	{"coordinator/controller", "coordinator/txn", "wire/interbroker", "security/tlsconf/tlstest", "coordinator/zk/zktest"},
	{"coordinator"},
	{"security/quota"},
	{"config"},
	{"coordinator/zk", "replication/host", "config/dynamic"},
	{"coordinator/group/host", "coordinator/txn/host", "broker/server", "broker/cluster"},
	{"broker"},
	{"bench"},
	{"cmd/sluice", "fuzz"},
}

// TestImportsRunDown: no package imports one of its own layer or above.
func TestImportsRunDown(t *testing.T) {
	const module = "github.com/sluice-io/sluice/"
	layer := map[string]int{}
	for i, ps := range layers {
		for _, p := range ps {
			layer[p] = i
		}
	}
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", module+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(fields[0], module)
		l, ok := layer[pkg]
		if !ok {
			t.Errorf("package %s is in no layer of broker/imports_test.go", pkg)
			continue
		}
		for _, imp := range fields[1:] {
			dep, ours := strings.CutPrefix(imp, module)
			if !ours {
				continue
			}
			if d, ok := layer[dep]; ok && d >= l {
				t.Errorf("%s (layer %d) imports %s (layer %d): an arrow that does not run down", pkg, l, dep, d)
			}
		}
	}
}
