package main

// A broker run as a child process of a sluice binary, as `sluice
// local-cluster` runs its brokers (and the cluster tests theirs): its
// output appended to a log file, its exit observed, stopped by SIGTERM and
// then SIGKILL.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// brokerChild is one running broker process.
type brokerChild struct {
	id      int32
	addr    string // where it listens, host:port
	logPath string // its standard output and error, appended
	cmd     *exec.Cmd
	// exited is closed once the process has exited and been reaped; err is
	// then its exit status.
	exited chan struct{}
	err    error
}

// startBrokerChild runs bin with args (["broker", ...]) as broker id
// listening on addr, its output appended to logPath. The process runs in a
// process group of its own, so a terminal's Ctrl-C reaches the parent
// alone, which stops it; deathSig is sent to it if the parent's thread
// that started it dies first.
func startBrokerChild(bin string, args []string, id int32, addr, logPath string, deathSig syscall.Signal) (*brokerChild, error) {
	return startBrokerChildEnv(bin, nil, args, id, addr, logPath, deathSig)
}

// startBrokerChildEnv is startBrokerChild with env added to the process's
// environment.
func startBrokerChildEnv(bin string, env, args []string, id int32, addr, logPath string, deathSig syscall.Signal) (*brokerChild, error) {
	log, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(log, "--- %s: %s %q\n", time.Now().Format(time.RFC3339), bin, args)
	cmd := exec.Command(bin, args...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: deathSig}
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("start broker %d: %w", id, err)
	}
	p := &brokerChild{id: id, addr: addr, logPath: logPath, cmd: cmd, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		log.Close()
		close(p.exited)
	}()
	return p, nil
}

// pid is the process id.
func (p *brokerChild) pid() int { return p.cmd.Process.Pid }

// signal sends sig to the process; a process that has exited is not an
// error.
func (p *brokerChild) signal(sig syscall.Signal) error {
	err := p.cmd.Process.Signal(sig)
	if errors.Is(err, os.ErrProcessDone) {
		return nil
	}
	return err
}

// running reports whether the process has not exited yet.
func (p *brokerChild) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// stop sends SIGTERM, waits up to timeout for the broker to shut down,
// then SIGKILLs it. It returns the exit status, or errKilled.
func (p *brokerChild) stop(timeout time.Duration) error {
	p.signal(syscall.SIGTERM)
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-p.exited:
		return p.err
	case <-t.C:
	}
	p.signal(syscall.SIGKILL)
	<-p.exited
	return errKilled
}

var errKilled = errors.New("did not stop in time: killed")

// tailFile returns the last n lines of the file at path, or a line saying
// why it cannot be read.
func tailFile(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error() + "\n"
	}
	defer f.Close()
	const window = 64 << 10
	if st, err := f.Stat(); err == nil && st.Size() > window {
		f.Seek(st.Size()-window, io.SeekStart)
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return err.Error() + "\n"
	}
	b = bytes.TrimRight(b, "\n")
	for i, cut := len(b)-1, 0; i >= 0; i-- {
		if b[i] == '\n' {
			if cut++; cut == n {
				b = b[i+1:]
				break
			}
		}
	}
	return string(b) + "\n"
}

// metadataOf asks the broker at addr alone for the metadata of every topic.
func metadataOf(ctx context.Context, addr string, opts ...kgo.Opt) (*kmsg.MetadataResponse, error) {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.DialTimeout(dialTimeout)}, opts...)...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	seeds := cl.SeedBrokers()
	if len(seeds) != 1 {
		return nil, fmt.Errorf("%s: not one broker address", addr)
	}
	resp, err := seeds[0].Request(ctx, kmsg.NewPtrMetadataRequest())
	if err != nil {
		return nil, err
	}
	return resp.(*kmsg.MetadataResponse), nil
}
