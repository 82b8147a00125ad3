package broker

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// kcat runs kcat (librdkafka, an independent client) against the broker.
func kcat(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "kcat", args...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kcat %s: %v (ctx %v)\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, ctx.Err(), stdout.String(), stderr.String())
	}
	return stdout.String()
}

// requireKcat fails the test when kcat is missing and $CI is set, and
// skips it otherwise.
func requireKcat(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("kcat"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("kcat is not installed (apt-get install kcat): %v", err)
		}
		t.Skipf("kcat is not installed: %v", err)
	}
}

// TestKcat lists metadata, produces and consumes with kcat. Without kcat
// the test fails when $CI is set, and is skipped otherwise.
func TestKcat(t *testing.T) {
	requireKcat(t)
	tb := startBroker(t, t.TempDir(), nil)
	tb.createTopic(t, "kcat-topic", 3)

	// Metadata.
	out := kcat(t, "", "-b", tb.addr, "-L")
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^ 1 brokers:$`),
		regexp.MustCompile(`(?m)^  broker 0 at ` + regexp.QuoteMeta(tb.addr) + ` \(controller\)$`),
		regexp.MustCompile(`(?m)^  topic "kcat-topic" with 3 partitions:$`),
		regexp.MustCompile(`(?m)^    partition 2, leader 0, replicas: 0, isrs: 0$`),
	} {
		if !want.MatchString(out) {
			t.Errorf("kcat -L output lacks %q:\n%s", want, out)
		}
	}

	// Produce lines with keys, then consume them back.
	var lines, want []string
	for i := range 50 {
		lines = append(lines, fmt.Sprintf("key%d:value %d", i, i))
		want = append(want, fmt.Sprintf("key%d=value %d", i, i))
	}
	kcat(t, strings.Join(lines, "\n")+"\n", "-b", tb.addr, "-P", "-t", "kcat-topic", "-K:")
	var total int64
	for _, p := range tb.topic("kcat-topic").Partitions {
		total += p.HighWatermark()
	}
	if total != 50 {
		t.Fatalf("the topic holds %d records after kcat -P, want 50", total)
	}
	out = kcat(t, "", "-b", tb.addr, "-C", "-t", "kcat-topic", "-o", "beginning", "-e", "-f", `%k=%s\n`)
	got := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	// Order holds within a partition (keys hash to partitions); compare
	// the sets, then the order of each key's partition.
	slices.Sort(got)
	sorted := slices.Clone(want)
	slices.Sort(sorted)
	if !slices.Equal(got, sorted) {
		t.Errorf("kcat -C returned %d lines:\n%s\nwant the %d produced", len(got), out, len(want))
	}

	// One partition: kcat returns exactly the lines produced, in order.
	tb.createTopic(t, "kcat-one", 1)
	kcat(t, strings.Join(lines, "\n")+"\n", "-b", tb.addr, "-P", "-t", "kcat-one", "-K:")
	out = kcat(t, "", "-b", tb.addr, "-C", "-t", "kcat-one", "-o", "beginning", "-e", "-f", `%k=%s\n`)
	if out != strings.Join(want, "\n")+"\n" {
		t.Errorf("kcat -C of one partition:\n%s\nwant:\n%s", out, strings.Join(want, "\n"))
	}
}

// TestKcatGroup consumes as a librdkafka consumer group member (kcat -G):
// another client's take on JoinGroup, SyncGroup, heartbeats and commits.
// A second run of the same group finds the committed offsets and reads
// only what came after.
func TestKcatGroup(t *testing.T) {
	requireKcat(t)
	tb := startBroker(t, t.TempDir(), groupTimeouts)
	tb.createTopic(t, "kg", 2)
	cl := tb.client(t)
	produceN(t, tb, "kg", 20)
	group := func() []string {
		out := kcat(t, "", "-b", tb.addr, "-G", "kgroup", "-X", "auto.offset.reset=earliest", "-e", "-q", "-f", "%s\n", "kg")
		vals := strings.Fields(out)
		slices.Sort(vals)
		return vals
	}
	first := group()
	if len(first) != 20 {
		t.Fatalf("first group run read %d records: %v", len(first), first)
	}
	offs, err := tb.admin(t).FetchOffsets(ctxTimeout(t, 10*time.Second), "kgroup")
	if err != nil {
		t.Fatal(err)
	}
	var committed int64
	offs.Each(func(o kadm.OffsetResponse) { committed += o.At })
	if committed != 20 {
		t.Errorf("kcat committed offsets summing to %d, want 20", committed)
	}
	produceSync(t, cl, "kg", 0, "late")
	if second := group(); !slices.Equal(second, []string{"late"}) {
		t.Errorf("second group run read %v, want only the record produced after the first", second)
	}
}
