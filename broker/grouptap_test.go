package broker

// groupTap is a TCP proxy between Kafka clients and the broker that
// decodes the group protocol passing through it: the protocol metadata each
// member sent in JoinGroup, the assignments each leader sent in SyncGroup,
// and the assignment each member received back. Tests of other clients
// (kafka-go, sarama) compare what the broker handed out, and what
// DescribeGroups reports, byte for byte with what the clients sent.
//
// The broker must advertise the tap's address (Config.Advertise), or
// clients connect to it directly after their first Metadata request.

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/wire"
)

type groupTap struct {
	ln     net.Listener
	target atomic.Pointer[string] // the broker's address, set once it listens
	wg     sync.WaitGroup

	mu struct {
		sync.Mutex
		// joined is each member's protocol metadata by protocol name,
		// from its last JoinGroup that the broker answered without error.
		joined map[string]map[string][]byte
		// assigned is the leader's assignments of each generation.
		assigned map[int32]map[string][]byte
		// received is every assignment a SyncGroup answered without error.
		received []syncAnswer
		conns    map[net.Conn]struct{}
		closed   bool
	}
}

type syncAnswer struct {
	member     string
	generation int32
	assignment []byte
}

func startGroupTap(t testing.TB) *groupTap {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := &groupTap{ln: ln}
	g.mu.joined = map[string]map[string][]byte{}
	g.mu.assigned = map[int32]map[string][]byte{}
	g.mu.conns = map[net.Conn]struct{}{}
	g.wg.Add(1)
	go g.accept()
	t.Cleanup(g.close)
	return g
}

func (g *groupTap) addr() string { return g.ln.Addr().String() }

func (g *groupTap) close() {
	g.mu.Lock()
	g.mu.closed = true
	for c := range g.mu.conns {
		c.Close()
	}
	g.mu.Unlock()
	g.ln.Close()
	g.wg.Wait()
}

func (g *groupTap) track(c net.Conn) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.mu.closed {
		c.Close()
		return false
	}
	g.mu.conns[c] = struct{}{}
	return true
}

func (g *groupTap) accept() {
	defer g.wg.Done()
	for {
		client, err := g.ln.Accept()
		if err != nil {
			return
		}
		target := g.target.Load()
		if target == nil {
			client.Close()
			continue
		}
		server, err := net.Dial("tcp", *target)
		if err != nil {
			client.Close()
			continue
		}
		if !g.track(client) || !g.track(server) {
			client.Close()
			server.Close()
			return
		}
		pending := make(chan tapRequest, 1024)
		g.wg.Add(2)
		go func() {
			defer g.wg.Done()
			defer server.Close()
			defer close(pending)
			g.forwardRequests(client, server, pending)
		}()
		go func() {
			defer g.wg.Done()
			defer client.Close()
			g.forwardResponses(server, client, pending)
		}()
	}
}

// tapRequest is a forwarded request whose answer the tap decodes.
type tapRequest struct {
	corr int32
	req  kmsg.Request // nil: a request the tap does not decode
}

// readFrame reads one size-prefixed frame, prefix included.
func readFrame(r io.Reader) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, err
	}
	frame := make([]byte, 4+binary.BigEndian.Uint32(size[:]))
	copy(frame, size[:])
	_, err := io.ReadFull(r, frame[4:])
	return frame, err
}

func (g *groupTap) forwardRequests(client, server net.Conn, pending chan<- tapRequest) {
	for {
		frame, err := readFrame(client)
		if err != nil {
			return
		}
		tr := tapRequest{corr: -1}
		if h, err := wire.ParseHeader(frame[4:]); err == nil {
			tr.corr = h.CorrelationID
			if h.Key == 11 || h.Key == 14 {
				if _, req, err := wire.ParseRequest(slices.Clone(frame[4:])); err == nil {
					tr.req = req
					g.leaderSync(req)
				}
			}
		}
		pending <- tr
		if _, err := server.Write(frame); err != nil {
			return
		}
	}
}

func (g *groupTap) forwardResponses(server, client net.Conn, pending <-chan tapRequest) {
	for {
		frame, err := readFrame(server)
		if err != nil {
			return
		}
		// Responses come in request order; an acks=0 Produce has none,
		// but group clients do not send those through this tap.
		if len(frame) >= 8 {
			corr := int32(binary.BigEndian.Uint32(frame[4:]))
			for tr := range pending {
				if tr.corr == corr {
					if tr.req != nil {
						g.observe(tr.req, frame[8:])
					}
					break
				}
			}
		}
		if _, err := client.Write(frame); err != nil {
			return
		}
	}
}

// leaderSync records a leader's assignments as the tap forwards them, so
// that they are known before any member can receive one.
func (g *groupTap) leaderSync(req kmsg.Request) {
	sync, ok := req.(*kmsg.SyncGroupRequest)
	if !ok || len(sync.GroupAssignment) == 0 {
		return
	}
	as := map[string][]byte{}
	for _, a := range sync.GroupAssignment {
		as[a.MemberID] = a.MemberAssignment
	}
	g.mu.Lock()
	g.mu.assigned[sync.Generation] = as
	g.mu.Unlock()
}

// observe records a JoinGroup or SyncGroup exchange from the request and
// the body of its response (after the correlation id).
func (g *groupTap) observe(req kmsg.Request, body []byte) {
	resp := req.ResponseKind()
	if resp.IsFlexible() {
		if len(body) == 0 || body[0] != 0 {
			return // the broker writes no response header tags
		}
		body = body[1:]
	}
	if err := resp.ReadFrom(slices.Clone(body)); err != nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	switch req := req.(type) {
	case *kmsg.JoinGroupRequest:
		resp := resp.(*kmsg.JoinGroupResponse)
		if resp.ErrorCode != 0 {
			return
		}
		ps := map[string][]byte{}
		for _, p := range req.Protocols {
			ps[p.Name] = p.Metadata
		}
		g.mu.joined[resp.MemberID] = ps
	case *kmsg.SyncGroupRequest:
		resp := resp.(*kmsg.SyncGroupResponse)
		if resp.ErrorCode != 0 {
			return
		}
		g.mu.received = append(g.mu.received, syncAnswer{req.MemberID, req.Generation, resp.MemberAssignment})
	}
}

// checkReceived reports the first assignment a member received that is
// not, byte for byte, what its generation's leader assigned it, and how
// many assignments were checked.
func (g *groupTap) checkReceived() (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, r := range g.mu.received {
		as, ok := g.mu.assigned[r.generation]
		if !ok {
			return 0, fmt.Errorf("member %s received an assignment for generation %d, whose leader sent none", r.member, r.generation)
		}
		if want := as[r.member]; !bytes.Equal(r.assignment, want) {
			return 0, fmt.Errorf("member %s of generation %d received assignment %x, the leader sent %x", r.member, r.generation, r.assignment, want)
		}
	}
	return len(g.mu.received), nil
}

// checkDescribed compares a Stable group's DescribeGroups answer with what
// its members sent: each member's metadata for the group's protocol, and
// the assignment its generation's leader gave it.
func (g *groupTap) checkDescribed(d kmsg.DescribeGroupsResponseGroup) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	var latest int32 = -1
	for gen := range g.mu.assigned {
		latest = max(latest, gen)
	}
	for _, m := range d.Members {
		ps, ok := g.mu.joined[m.MemberID]
		if !ok {
			return fmt.Errorf("DescribeGroups names member %s, which never joined", m.MemberID)
		}
		if want := ps[d.Protocol]; !bytes.Equal(m.ProtocolMetadata, want) {
			return fmt.Errorf("member %s: DescribeGroups metadata %x, the member sent %x", m.MemberID, m.ProtocolMetadata, want)
		}
		if want := g.mu.assigned[latest][m.MemberID]; !bytes.Equal(m.MemberAssignment, want) {
			return fmt.Errorf("member %s: DescribeGroups assignment %x, generation %d's leader sent %x", m.MemberID, m.MemberAssignment, latest, want)
		}
	}
	return nil
}
