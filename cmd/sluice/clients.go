package main

// What the console tools (topic, produce, consume) share: the --brokers
// and --command-config flags (commandconfig.go), flag parsing that lets flags follow the positional arguments, the
// franz-go client tuned to fail fast, and one-line error messages.

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// brokersEnv names the environment variable that replaces the default of
// --brokers; the flag, when given, wins.
const brokersEnv = "SLUICE_BROKERS"

// Timeouts of the console tools. A console tool should tell its user at
// once that a broker is down, not retry for the half minute a long-running
// client would.
const (
	// dialTimeout bounds every TCP connect, the probe's and franz-go's.
	dialTimeout = 3 * time.Second
	// retryTimeout bounds the retries of one admin request (franz-go's
	// default is 30s).
	retryTimeout = 5 * time.Second
	// adminTimeout bounds a whole topic command.
	adminTimeout = 30 * time.Second
)

// clientFlags are the flags every console tool has.
type clientFlags struct {
	brokers       string
	commandConfig string // --command-config: a Kafka client properties file
}

// addClientFlags registers --brokers and --command-config on fs.
func addClientFlags(fs *flag.FlagSet) *clientFlags {
	c := &clientFlags{}
	def := "localhost:9092"
	if env := strings.TrimSpace(os.Getenv(brokersEnv)); env != "" {
		def = env
	}
	fs.StringVar(&c.brokers, "brokers", def, "comma-separated seed brokers (the default comes from $"+brokersEnv+" when set)")
	fs.StringVar(&c.commandConfig, "command-config", "", "Kafka client properties `file`: security.protocol, sasl.*, ssl.* (PEM)")
	return c
}

// seeds returns the seed brokers as host:port, Kafka's port 9092 added
// where none is given (as franz-go does).
func (c *clientFlags) seeds() ([]string, error) {
	var out []string
	for s := range strings.SplitSeq(c.brokers, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(s); err != nil {
			s = net.JoinHostPort(strings.Trim(s, "[]"), "9092")
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return nil, errors.New("--brokers names no broker")
	}
	return out, nil
}

// client probes the seed brokers and returns a franz-go client for them
// with opts added. The probe turns the common failure, no broker listening,
// into one line at once, where franz-go alone would retry for seconds and
// then report a wrapped dial error.
func (c *clientFlags) client(ctx context.Context, opts ...kgo.Opt) (*kgo.Client, error) {
	seeds, err := c.seeds()
	if err != nil {
		return nil, err
	}
	cc := &commandConfig{}
	if c.commandConfig != "" {
		if cc, err = loadCommandConfig(c.commandConfig); err != nil {
			return nil, err
		}
	}
	if err := probe(ctx, seeds, cc.tls); err != nil {
		return nil, err
	}
	base := []kgo.Opt{
		kgo.SeedBrokers(seeds...),
		kgo.DialTimeout(dialTimeout),
		kgo.RetryTimeout(retryTimeout),
		kgo.ClientID("sluice-cli"),
	}
	base = append(base, cc.opts()...)
	return kgo.NewClient(append(base, opts...)...)
}

// probe dials every seed at once and returns nil as soon as one answers,
// or an error naming each seed, in the order given, and why it could not
// be reached. With tlsCfg it completes a TLS handshake too, so a broker
// that is not TLS or a certificate that does not verify is told at once.
func probe(ctx context.Context, seeds []string, tlsCfg *tls.Config) error {
	ctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	type answer struct {
		seed int
		err  error
	}
	answers := make(chan answer, len(seeds))
	for i, s := range seeds {
		go func() {
			var d net.Dialer
			conn, err := d.DialContext(ctx, "tcp", s)
			if err == nil && tlsCfg != nil {
				err = tlsProbe(ctx, conn, s, tlsCfg)
			}
			if err == nil {
				conn.Close()
			}
			answers <- answer{i, err}
		}()
	}
	failed := make([]string, len(seeds))
	for range seeds {
		a := <-answers
		if a.err == nil {
			return nil
		}
		failed[a.seed] = seeds[a.seed] + ": " + dialReason(a.err)
	}
	if len(failed) == 1 {
		return errors.New("cannot reach broker " + failed[0])
	}
	return errors.New("cannot reach any broker: " + strings.Join(failed, "; "))
}

// tlsProbe completes a TLS handshake on conn to seed; it closes conn on
// failure.
func tlsProbe(ctx context.Context, conn net.Conn, seed string, cfg *tls.Config) error {
	cfg = cfg.Clone()
	if cfg.ServerName == "" {
		host, _, _ := net.SplitHostPort(seed)
		cfg.ServerName = host
	}
	tc := tls.Client(conn, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		conn.Close()
		return &tlsError{err}
	}
	return nil
}

// tlsError is a failed TLS handshake of the probe.
type tlsError struct{ err error }

func (e *tlsError) Error() string { return "TLS handshake failed: " + e.err.Error() }
func (e *tlsError) Unwrap() error { return e.err }

// dialReason is the short cause of a failed dial: "connection refused",
// "no such host", "timed out after 3s".
func dialReason(err error) string {
	var te *tlsError
	if errors.As(err, &te) {
		return te.Error()
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		if dns.IsNotFound {
			return "no such host"
		}
		return dns.Err
	}
	if errors.Is(err, context.DeadlineExceeded) || os.IsTimeout(err) {
		return fmt.Sprintf("timed out after %v", dialTimeout)
	}
	var sys *os.SyscallError
	if errors.As(err, &sys) {
		return sys.Err.Error()
	}
	return err.Error()
}

// errorText is err as one line for a user: a failed dial as "cannot reach
// broker ADDR: REASON"; Kafka error codes by name and message, as kerr
// writes them (UNKNOWN_TOPIC_OR_PARTITION: This server does not host this
// topic-partition.).
func errorText(err error) string {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		addr := ""
		if op.Addr != nil {
			addr = op.Addr.String()
		}
		return fmt.Sprintf("cannot reach broker %s: %s", addr, dialReason(err))
	}
	var shards *kadm.ShardErrors
	if errors.As(err, &shards) && len(shards.Errs) > 0 {
		// "request X has 1 separate shard errors, first: ..." says less
		// than the first error with the request's name.
		err = fmt.Errorf("%s: %w", shards.Name, shards.Errs[0].Err)
	}
	s := strings.ReplaceAll(err.Error(), "\n", " ")
	return strings.Replace(s, brokerTooOld, "the broker does not serve this request", 1)
}

// brokerTooOld is the text of franz-go's (unexported) error for a request
// the broker's ApiVersions answer does not list.
const brokerTooOld = "broker is too old; the broker has already indicated it will not know how to handle the request"

// kafkaError is a Kafka error code's error with the broker's message, if
// any and not already the same text.
func kafkaError(err error, message string) error {
	if err == nil {
		return nil
	}
	var ke *kerr.Error
	if message == "" || !errors.As(err, &ke) || message == ke.Description {
		return err
	}
	return fmt.Errorf("%w (%s)", err, message)
}

// dialWarner is a franz-go hook that reports, once per address, a broker
// the client cannot connect to. Producers and consumers keep retrying such
// a broker; without the warning the user would only see them hang.
type dialWarner struct {
	name string // the command, the prefix of the warning
	out  io.Writer
	mu   sync.Mutex
	seen map[string]bool
}

func newDialWarner(name string, out io.Writer) *dialWarner {
	return &dialWarner{name: name, out: out, seen: map[string]bool{}}
}

// OnBrokerConnect implements kgo.HookBrokerConnect.
func (w *dialWarner) OnBrokerConnect(meta kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	if err == nil {
		return
	}
	addr := net.JoinHostPort(meta.Host, fmt.Sprint(meta.Port))
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.seen[addr] {
		return
	}
	w.seen[addr] = true
	fmt.Fprintf(w.out, "%s: warning: cannot reach broker %s: %s (retrying)\n", w.name, addr, dialReason(err))
}

// parseArgs parses fs's flags wherever they stand among args, so that
// `sluice topic create NAME --partitions 3` works as Kafka's tools do, and
// returns the positional arguments in order. "--" ends the flags (a flag
// value "--" must be written --flag=--).
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			return append(positional, rest...), nil
		}
		if len(rest) == 0 {
			return positional, nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

// command is what a console tool needs to parse its flags and report.
type command struct {
	name   string // "sluice topic create"
	usage  string // the text before the flag list
	fs     *flag.FlagSet
	stdout io.Writer
	stderr io.Writer
}

// newCommand returns a command whose flag set reports nothing itself:
// parse prints help to stdout and errors to stderr.
func newCommand(name, usage string, stdout, stderr io.Writer) *command {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return &command{name: name, usage: usage, fs: fs, stdout: stdout, stderr: stderr}
}

// printUsage writes the usage text and the flags to w.
func (c *command) printUsage(w io.Writer) {
	fmt.Fprint(w, c.usage)
	var flags strings.Builder
	c.fs.SetOutput(&flags)
	c.fs.PrintDefaults()
	c.fs.SetOutput(io.Discard)
	if flags.Len() > 0 {
		fmt.Fprintf(w, "\nflags:\n%s", flags.String())
	}
}

// parse parses args. It returns the positional arguments and, when the
// command is to stop here, the exit code: 0 after -h, 2 after a bad flag.
func (c *command) parse(args []string) ([]string, int, bool) {
	pos, err := parseArgs(c.fs, args)
	if errors.Is(err, flag.ErrHelp) {
		c.printUsage(c.stdout)
		return nil, 0, true
	}
	if err != nil {
		return nil, c.usageError("%v", err), true
	}
	return pos, 0, false
}

// usageError reports a misuse with the usage text; it returns exit code 2.
func (c *command) usageError(format string, a ...any) int {
	fmt.Fprintf(c.stderr, "%s: %s\n\n", c.name, fmt.Sprintf(format, a...))
	c.printUsage(c.stderr)
	return 2
}

// fail reports err in one line; it returns exit code 1.
func (c *command) fail(err error) int {
	fmt.Fprintf(c.stderr, "%s: %s\n", c.name, errorText(err))
	return 1
}

// warn reports a problem that does not stop the command.
func (c *command) warn(format string, a ...any) {
	fmt.Fprintf(c.stderr, "%s: warning: %s\n", c.name, fmt.Sprintf(format, a...))
}

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, " ") }

func (l *listFlag) Set(s string) error {
	*l = append(*l, s)
	return nil
}

// keyValues parses k=v items; a key must not be empty, the value may be.
func keyValues(items []string, flagName string) ([][2]string, error) {
	out := make([][2]string, 0, len(items))
	for _, it := range items {
		k, v, ok := strings.Cut(it, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--%s %q: want key=value", flagName, it)
		}
		out = append(out, [2]string{k, v})
	}
	return out, nil
}

// runSubcommand runs the subcommand args[0] of the command name: usage on
// stdout for -h, on stderr (exit 2) for none or an unknown one.
func runSubcommand(name, usage string, sub map[string]func([]string, io.Writer, io.Writer) int, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	if f, ok := sub[args[0]]; ok {
		return f(args[1:], stdout, stderr)
	}
	switch args[0] {
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "sluice %s: unknown command %q\n\n%s", name, args[0], usage)
	return 2
}
