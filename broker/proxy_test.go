package broker

// A TCP proxy between Kafka clients and the broker that can lose a
// response: it forwards a request, lets the broker handle it, and closes
// the client's connection instead of passing the answer on. The client
// cannot tell whether the request took effect and retries it, which is
// what the idempotent producer exists for.
//
// The broker must advertise the proxy's address (Config.Advertise), or
// clients connect to it directly after their first Metadata request.
//
// When a response is dropped, the proxy reads and discards the broker's
// answers to every request it had already forwarded on that connection
// before it lets any client connect again, so a client's retry never races
// the broker still handling the originals on the old connection (which a
// real network allows, and which would make the test depend on timing).
// Every forwarded request must therefore be answered: no acks=0 Produce.

import (
	"encoding/binary"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

type kafkaProxy struct {
	ln net.Listener
	// drop says whether to lose the answer to a request of API key, the
	// nth answer of that key the proxy has seen (from 1), across
	// connections.
	drop func(key int16, n int) bool
	// hold keeps clients from connecting after a drop until release.
	hold bool
	// dropped receives one value per drop, once the broker has answered
	// everything forwarded on the dropped connection.
	dropped chan struct{}
	nDrops  atomic.Int64

	mu struct {
		sync.Mutex
		target   string
		seen     map[int16]int
		draining int  // dropped connections not drained yet
		held     bool // a drop happened with hold set; release clears it
		closed   bool
		changed  chan struct{} // closed and replaced when the fields above change
		conns    map[net.Conn]struct{}
	}
	wg sync.WaitGroup
}

// startProxy listens on a loopback port; setTarget must name the broker
// before clients connect.
func startProxy(t testing.TB, drop func(key int16, n int) bool, hold bool) *kafkaProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &kafkaProxy{ln: ln, drop: drop, hold: hold, dropped: make(chan struct{}, 1000)}
	p.mu.seen = map[int16]int{}
	p.mu.changed = make(chan struct{})
	p.mu.conns = map[net.Conn]struct{}{}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *kafkaProxy) addr() string { return p.ln.Addr().String() }

// setTarget points new connections at addr.
func (p *kafkaProxy) setTarget(addr string) {
	p.mu.Lock()
	p.mu.target = addr
	p.changedLocked()
	p.mu.Unlock()
}

// release lets clients connect again after a drop with hold set.
func (p *kafkaProxy) release() {
	p.mu.Lock()
	p.mu.held = false
	p.changedLocked()
	p.mu.Unlock()
}

// drops is how many answers were lost so far.
func (p *kafkaProxy) drops() int64 { return p.nDrops.Load() }

// answers is how many answers to requests of key the proxy has seen,
// passed on or not.
func (p *kafkaProxy) answers(key int16) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.seen[key]
}

// waitDropped waits for the next drop to have drained.
func (p *kafkaProxy) waitDropped(t testing.TB, timeout time.Duration) {
	t.Helper()
	select {
	case <-p.dropped:
	case <-time.After(timeout):
		t.Fatalf("no response was dropped within %v", timeout)
	}
}

func (p *kafkaProxy) changedLocked() {
	close(p.mu.changed)
	p.mu.changed = make(chan struct{})
}

func (p *kafkaProxy) close() {
	p.mu.Lock()
	p.mu.closed = true
	p.changedLocked()
	for c := range p.mu.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.ln.Close()
	p.wg.Wait()
}

// track registers c to be closed by close; false if the proxy is closed.
func (p *kafkaProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.closed {
		return false
	}
	p.mu.conns[c] = struct{}{}
	return true
}

func (p *kafkaProxy) untrack(c net.Conn) {
	c.Close()
	p.mu.Lock()
	delete(p.mu.conns, c)
	p.mu.Unlock()
}

func (p *kafkaProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		if !p.track(c) {
			c.Close()
			return
		}
		p.wg.Add(1)
		go p.serve(c)
	}
}

// waitOpen waits until no dropped connection is draining and no hold is
// in force, and returns the target; false once the proxy closes.
func (p *kafkaProxy) waitOpen() (string, bool) {
	for {
		p.mu.Lock()
		if p.mu.closed {
			p.mu.Unlock()
			return "", false
		}
		if p.mu.draining == 0 && !p.mu.held && p.mu.target != "" {
			target := p.mu.target
			p.mu.Unlock()
			return target, true
		}
		ch := p.mu.changed
		p.mu.Unlock()
		<-ch
	}
}

// shouldDrop counts an answer to key and asks the policy; a drop starts
// draining (and holding) at once, so no client connects in between.
func (p *kafkaProxy) shouldDrop(key int16) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mu.seen[key]++
	if p.drop == nil || !p.drop(key, p.mu.seen[key]) {
		return false
	}
	p.mu.draining++
	if p.hold {
		p.mu.held = true
	}
	p.changedLocked()
	return true
}

func (p *kafkaProxy) drained() {
	p.mu.Lock()
	p.mu.draining--
	p.changedLocked()
	p.mu.Unlock()
	p.nDrops.Add(1)
	p.dropped <- struct{}{}
}

// readKafkaFrame reads one size-prefixed frame, prefix included.
func readKafkaFrame(r io.Reader) ([]byte, error) {
	var sz [4]byte
	if _, err := io.ReadFull(r, sz[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(sz[:])
	if n < 4 || n > 128<<20 {
		return nil, io.ErrUnexpectedEOF
	}
	b := make([]byte, 4+n)
	copy(b, sz[:])
	_, err := io.ReadFull(r, b[4:])
	return b, err
}

// serve proxies one client connection: requests (size, key, version,
// correlation id, …) one way, responses (size, correlation id, …) the
// other.
func (p *kafkaProxy) serve(client net.Conn) {
	defer p.wg.Done()
	defer p.untrack(client)
	target, ok := p.waitOpen()
	if !ok {
		return
	}
	up, err := net.DialTimeout("tcp", target, 5*time.Second)
	if err != nil {
		return // the client sees its connection close and retries
	}
	if !p.track(up) {
		up.Close()
		return
	}
	defer p.untrack(up)

	var (
		mu       sync.Mutex
		pending  = map[int32]int16{} // forwarded, unanswered: correlation id → key
		dropping atomic.Bool
		reqDone  = make(chan struct{})
	)
	go func() {
		defer close(reqDone)
		for {
			frame, err := readKafkaFrame(client)
			if err != nil || len(frame) < 12 {
				break
			}
			key := int16(binary.BigEndian.Uint16(frame[4:]))
			corr := int32(binary.BigEndian.Uint32(frame[8:]))
			mu.Lock()
			pending[corr] = key
			mu.Unlock()
			if _, err := up.Write(frame); err != nil {
				break
			}
		}
		if !dropping.Load() {
			up.Close() // the client went away: so does the broker connection
		}
	}()
	answered := func(frame []byte) (int16, bool) {
		if len(frame) < 8 {
			return 0, false
		}
		corr := int32(binary.BigEndian.Uint32(frame[4:]))
		mu.Lock()
		defer mu.Unlock()
		key, ok := pending[corr]
		delete(pending, corr)
		return key, ok
	}
	for {
		frame, err := readKafkaFrame(up)
		if err != nil {
			break
		}
		key, ok := answered(frame)
		if ok && p.shouldDrop(key) {
			dropping.Store(true)
			client.Close()
			<-reqDone // nothing more is forwarded
			for {
				mu.Lock()
				n := len(pending)
				mu.Unlock()
				if n == 0 {
					break
				}
				frame, err := readKafkaFrame(up)
				if err != nil {
					break
				}
				answered(frame)
			}
			p.drained()
			return
		}
		if _, err := client.Write(frame); err != nil {
			break
		}
	}
	client.Close()
	<-reqDone
}
