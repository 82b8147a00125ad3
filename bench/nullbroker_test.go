package bench

import (
	"bufio"
	"encoding/binary"
	"errors"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/wire"
)

// nullBroker is the ceiling of the comparisons: a Kafka broker that answers
// ApiVersions, Metadata and Produce with success and stores nothing. Every
// topic asked about exists with its partition count, led by itself (node 0).
// It reads and decodes requests as sluice does (wire's framing, kmsg's
// decoding, one goroutine per connection, responses in order), so what it
// costs beyond the client and loopback is only that decoding.
type nullBroker struct {
	ln         net.Listener
	partitions int32
	host       string
	port       int32
	offset     atomic.Int64 // one offset counter for every partition: nothing reads them
	wg         sync.WaitGroup

	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

// The versions it serves (those sluice serves for these keys).
var nullVersions = []struct{ key, min, max int16 }{
	{0, 3, 11}, // Produce
	{3, 0, 12}, // Metadata
	{18, 0, 4}, // ApiVersions
}

// startNullBroker serves on a new loopback listener until Close.
func startNullBroker(partitions int32) (*nullBroker, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	host, port, _ := net.SplitHostPort(ln.Addr().String())
	p, _ := strconv.Atoi(port)
	nb := &nullBroker{ln: ln, partitions: partitions, host: host, port: int32(p), conns: map[net.Conn]struct{}{}}
	nb.wg.Add(1)
	go nb.accept()
	return nb, nil
}

func (nb *nullBroker) Addr() string { return nb.ln.Addr().String() }

// Close stops the listener and every connection and waits for them.
func (nb *nullBroker) Close() {
	nb.ln.Close()
	nb.mu.Lock()
	for c := range nb.conns {
		c.Close()
	}
	nb.mu.Unlock()
	nb.wg.Wait()
}

func (nb *nullBroker) accept() {
	defer nb.wg.Done()
	for {
		c, err := nb.ln.Accept()
		if err != nil {
			return
		}
		nb.mu.Lock()
		nb.conns[c] = struct{}{}
		nb.mu.Unlock()
		nb.wg.Add(1)
		go func() {
			defer nb.wg.Done()
			nb.serve(c)
			c.Close()
			nb.mu.Lock()
			delete(nb.conns, c)
			nb.mu.Unlock()
		}()
	}
}

func (nb *nullBroker) serve(c net.Conn) {
	r := bufio.NewReaderSize(c, 64<<10)
	var buf, out []byte
	for {
		frame, err := wire.ReadFrame(r, buf, wire.DefaultMaxFrame)
		if err != nil {
			return
		}
		buf = frame[:0]
		resp, err := nb.handle(frame)
		if err != nil {
			return
		}
		if resp == nil {
			continue // acks=0
		}
		h, _ := wire.ParseHeader(frame)
		out = wire.AppendResponse(out[:0], h.CorrelationID, resp)
		if _, err := c.Write(out); err != nil {
			return
		}
	}
}

var errNullUnsupported = errors.New("null broker: request not served")

// handle answers one request frame; a nil response (acks=0 produce) sends
// nothing.
func (nb *nullBroker) handle(frame []byte) (kmsg.Response, error) {
	h, err := wire.ParseHeader(frame)
	if err != nil {
		return nil, err
	}
	served := false
	for _, v := range nullVersions {
		if v.key == h.Key && h.Version >= v.min && h.Version <= v.max {
			served = true
		}
	}
	if !served {
		if h.Key == wire.ApiVersionsKey { // answered at v0, as Kafka does
			resp := kmsg.NewPtrApiVersionsResponse()
			resp.ErrorCode = kerr.UnsupportedVersion.Code
			resp.ApiKeys = nullApiKeys()
			return resp, nil
		}
		return nil, errNullUnsupported
	}
	_, req, err := wire.ParseRequest(frame)
	if err != nil {
		return nil, err
	}
	switch req := req.(type) {
	case *kmsg.ApiVersionsRequest:
		resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
		resp.ApiKeys = nullApiKeys()
		return resp, nil
	case *kmsg.MetadataRequest:
		return nb.metadata(req), nil
	case *kmsg.ProduceRequest:
		return nb.produce(req), nil
	}
	return nil, errNullUnsupported
}

func nullApiKeys() []kmsg.ApiVersionsResponseApiKey {
	var keys []kmsg.ApiVersionsResponseApiKey
	for _, v := range nullVersions {
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = v.key, v.min, v.max
		keys = append(keys, k)
	}
	return keys
}

func (nb *nullBroker) metadata(req *kmsg.MetadataRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	br := kmsg.NewMetadataResponseBroker()
	br.NodeID, br.Host, br.Port = 0, nb.host, nb.port
	resp.Brokers = append(resp.Brokers, br)
	cluster := "null"
	resp.ClusterID = &cluster
	resp.ControllerID = 0
	for _, rt := range req.Topics {
		mt := kmsg.NewMetadataResponseTopic()
		if rt.Topic == nil {
			mt.TopicID = rt.TopicID
			mt.ErrorCode = kerr.UnknownTopicID.Code
			resp.Topics = append(resp.Topics, mt)
			continue
		}
		mt.Topic = rt.Topic
		copy(mt.TopicID[:], *rt.Topic+"................") // any stable non-zero id
		for p := range nb.partitions {
			mp := kmsg.NewMetadataResponseTopicPartition()
			mp.Partition = p
			mp.Leader = 0
			mp.Replicas = []int32{0}
			mp.ISR = []int32{0}
			mt.Partitions = append(mt.Partitions, mp)
		}
		resp.Topics = append(resp.Topics, mt)
	}
	return resp
}

// produce acknowledges every batch without looking at more than its last
// offset delta.
func (nb *nullBroker) produce(req *kmsg.ProduceRequest) kmsg.Response {
	if req.Acks == 0 {
		return nil
	}
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewProduceResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewProduceResponseTopicPartition()
			sp.Partition = rp.Partition
			n := int64(1)
			if len(rp.Records) >= 27 {
				n = int64(int32(binary.BigEndian.Uint32(rp.Records[23:]))) + 1 // lastOffsetDelta + 1
			}
			sp.BaseOffset = nb.offset.Add(n) - n
			sp.LogAppendTime, sp.LogStartOffset = -1, 0
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

func TestNullBrokerApiVersions(t *testing.T) {
	nb, err := startNullBroker(3)
	if err != nil {
		t.Fatal(err)
	}
	defer nb.Close()
	c, err := net.Dial("tcp", nb.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)

	// v3 request: the served keys, no error.
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(3)
	req.ClientSoftwareName, req.ClientSoftwareVersion = "test", "1.0"
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(3)
	roundTrip(t, c, r, req, resp, 7)
	if resp.ErrorCode != 0 {
		t.Fatalf("error code %d", resp.ErrorCode)
	}
	got := map[int16][2]int16{}
	for _, k := range resp.ApiKeys {
		got[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
	}
	want := map[int16][2]int16{0: {3, 11}, 3: {0, 12}, 18: {0, 4}}
	if len(got) != len(want) {
		t.Fatalf("keys %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("key %d: versions %v, want %v", k, got[k], v)
		}
	}

	// A version above 4 is answered at v0 with UNSUPPORTED_VERSION.
	req.SetVersion(9)
	resp0 := kmsg.NewPtrApiVersionsResponse()
	resp0.SetVersion(0)
	roundTrip(t, c, r, req, resp0, 8)
	if resp0.ErrorCode != kerr.UnsupportedVersion.Code || len(resp0.ApiKeys) != 3 {
		t.Fatalf("v9 request: error %d, %d keys", resp0.ErrorCode, len(resp0.ApiKeys))
	}
}

func TestNullBrokerMetadataAndProduce(t *testing.T) {
	nb, err := startNullBroker(4)
	if err != nil {
		t.Fatal(err)
	}
	defer nb.Close()
	c, err := net.Dial("tcp", nb.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)

	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(12)
	rt := kmsg.NewMetadataRequestTopic()
	name := "t"
	rt.Topic = &name
	md.Topics = append(md.Topics, rt)
	mresp := kmsg.NewPtrMetadataResponse()
	mresp.SetVersion(12)
	roundTrip(t, c, r, md, mresp, 1)
	if len(mresp.Brokers) != 1 || mresp.Brokers[0].Port != nb.port || len(mresp.Topics) != 1 || len(mresp.Topics[0].Partitions) != 4 {
		t.Fatalf("metadata: %+v", mresp)
	}

	pr := kmsg.NewPtrProduceRequest()
	pr.SetVersion(9)
	pr.Acks = 1
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic = name
	for p := range int32(2) {
		pp := kmsg.NewProduceRequestTopicPartition()
		pp.Partition = p
		batch := make([]byte, 61)
		binary.BigEndian.PutUint32(batch[23:], 9) // 10 records
		pp.Records = batch
		pt.Partitions = append(pt.Partitions, pp)
	}
	pr.Topics = append(pr.Topics, pt)
	presp := kmsg.NewPtrProduceResponse()
	presp.SetVersion(9)
	roundTrip(t, c, r, pr, presp, 2)
	ps := presp.Topics[0].Partitions
	if len(ps) != 2 || ps[0].ErrorCode != 0 || ps[0].BaseOffset != 0 || ps[1].BaseOffset != 10 {
		t.Fatalf("produce: %+v", presp)
	}
}

// roundTrip sends req with correlation id corr and decodes the answer into
// resp.
func roundTrip(t *testing.T, c net.Conn, r *bufio.Reader, req kmsg.Request, resp kmsg.Response, corr int32) {
	t.Helper()
	b := []byte{0, 0, 0, 0}
	b = binary.BigEndian.AppendUint16(b, uint16(req.Key()))
	b = binary.BigEndian.AppendUint16(b, uint16(req.GetVersion()))
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	b = binary.BigEndian.AppendUint16(b, 0xffff) // null client id
	if req.IsFlexible() {
		b = append(b, 0)
	}
	b = req.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	if _, err := c.Write(b); err != nil {
		t.Fatal(err)
	}
	frame, err := wire.ReadFrame(r, nil, wire.DefaultMaxFrame)
	if err != nil {
		t.Fatal(err)
	}
	if got := int32(binary.BigEndian.Uint32(frame)); got != corr {
		t.Fatalf("correlation id %d, want %d", got, corr)
	}
	body := frame[4:]
	if resp.IsFlexible() && resp.Key() != wire.ApiVersionsKey {
		body = body[1:] // empty header tags
	}
	if err := resp.ReadFrom(body); err != nil {
		t.Fatalf("decode %T: %v", resp, err)
	}
}
