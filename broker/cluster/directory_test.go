package cluster

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/coordinator"
	"github.com/sluice-io/sluice/coordinator/controller"
	"github.com/sluice-io/sluice/coordinator/group"
)

// fakeTopics is a metadata backend whose controller acts at once: a topic
// it creates is put in the cache, led by the first live broker, unless
// hold is set (the controller is slow).
type fakeTopics struct {
	cache   *Cache
	brokers []int32
	hold    bool
	created map[string]controller.TopicRequest
}

func (f *fakeTopics) ClusterID() string { return "c1" }

func (f *fakeTopics) CreateTopic(name string, req controller.TopicRequest, _ map[string]string) (coordinator.Assignment, error) {
	if _, ok := f.created[name]; ok {
		return coordinator.Assignment{}, coordinator.ErrTopicExists
	}
	f.created[name] = req
	if !f.hold {
		u := update(f.brokers)
		ts := kmsg.NewUpdateMetadataRequestTopicState()
		ts.Topic, ts.TopicID = name, [16]byte{9}
		for i := range req.NumPartitions {
			ps := kmsg.NewUpdateMetadataRequestTopicPartition()
			ps.Partition, ps.Leader, ps.ISR, ps.Replicas = i, f.brokers[0], []int32{f.brokers[0]}, []int32{f.brokers[0]}
			ts.PartitionStates = append(ts.PartitionStates, ps)
		}
		u.TopicStates = append(u.TopicStates, ts)
		f.cache.Update(u)
	}
	return coordinator.Assignment{ID: [16]byte{9}}, nil
}

func (f *fakeTopics) AddPartitions(string, int32, [][]int32) (coordinator.Assignment, error) {
	return coordinator.Assignment{}, coordinator.ErrUnknownTopic
}

func (f *fakeTopics) DeleteTopic(name string) error {
	if _, ok := f.cache.Load().Topics[name]; !ok {
		return coordinator.ErrUnknownTopic
	}
	return nil
}

func (f *fakeTopics) AwaitDeleted(context.Context, string) error { return nil }

// newDirectory is broker 1's directory over brokers 1-3 (PLAINTEXT) and
// topic t led by broker 2 (partition 0) and by a dead broker 7
// (partition 1).
func newDirectory(t *testing.T, o DirectoryOptions) (*Directory, *fakeTopics) {
	t.Helper()
	cache := NewCache()
	cache.Update(update([]int32{1, 2, 3}, 2, 7))
	f := &fakeTopics{cache: cache, brokers: []int32{1, 2, 3}, created: map[string]controller.TopicRequest{}}
	o.Self, o.Cache, o.Topics = 1, cache, f
	o.SelfEndpoint = func(listener string) (string, int32, bool) { return "self", 1, listener == "PLAINTEXT" }
	return NewDirectory(o), f
}

func everyone() Client {
	return Client{Listener: "PLAINTEXT", Describe: func(string) bool { return true }, Create: func(string) bool { return true }}
}

func metadataOf(version int16, topics ...string) *kmsg.MetadataRequest {
	req := kmsg.NewPtrMetadataRequest()
	req.Version, req.AllowAutoTopicCreation = version, true
	for _, name := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(name)
		req.Topics = append(req.Topics, rt)
	}
	return req
}

// TestDirectoryMetadata: brokers with their address on the client's
// listener (this broker's own advertised one), leaderless partitions
// LEADER_NOT_AVAILABLE with leader -1, a topic the client may not
// describe refused, an invalid name, and a missing topic unknown unless
// auto-created.
func TestDirectoryMetadata(t *testing.T) {
	d, _ := newDirectory(t, DirectoryOptions{})
	resp := d.Metadata(metadataOf(12, "t", "nope", "bad/name"), everyone())
	if len(resp.Brokers) != 3 || resp.Brokers[0].Host != "self" || resp.Brokers[1].Port != 9094 || *resp.ClusterID != "c1" || resp.ControllerID != 1 {
		t.Fatalf("brokers: %+v", resp.Brokers)
	}
	tp := resp.Topics[0]
	if tp.ErrorCode != 0 || len(tp.Partitions) != 2 || tp.Partitions[0].Leader != 2 || tp.Partitions[0].ErrorCode != 0 {
		t.Fatalf("topic t: %+v", tp)
	}
	if p := tp.Partitions[1]; p.Leader != -1 || p.ErrorCode != kerr.LeaderNotAvailable.Code {
		t.Fatalf("a partition led by a dead broker: %+v", p)
	}
	if resp.Topics[1].ErrorCode != kerr.UnknownTopicOrPartition.Code || resp.Topics[2].ErrorCode != kerr.InvalidTopicException.Code {
		t.Fatalf("missing and invalid: %d %d", resp.Topics[1].ErrorCode, resp.Topics[2].ErrorCode)
	}
	if other := d.Metadata(metadataOf(12), Client{Listener: "SSL", Describe: func(string) bool { return true }}); len(other.Brokers) != 0 {
		t.Fatalf("brokers with no SSL listener were listed: %+v", other.Brokers)
	}
	hidden := d.Metadata(metadataOf(12, "t"), Client{Listener: "PLAINTEXT", Describe: func(string) bool { return false }})
	if hidden.Topics[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("undescribable topic: %d", hidden.Topics[0].ErrorCode)
	}
	if all := d.Metadata(metadataOf(12), Client{Listener: "PLAINTEXT", Describe: func(string) bool { return false }}); len(all.Topics) != 0 {
		t.Fatalf("listing all showed a topic the client may not describe: %+v", all.Topics)
	}
}

// TestDirectoryAutoCreate: a missing topic is created with num.partitions
// and default.replication.factor and answered once led; one the client
// may not create is refused; a replication factor above the live brokers
// is INVALID_REPLICATION_FACTOR; the single node creates one copy; a v4+
// request that does not allow it creates nothing.
func TestDirectoryAutoCreate(t *testing.T) {
	d, f := newDirectory(t, DirectoryOptions{AutoCreate: true, NumPartitions: 3, ReplicationFactor: 2})
	resp := d.Metadata(metadataOf(12, "new"), everyone())
	if tp := resp.Topics[0]; tp.ErrorCode != 0 || len(tp.Partitions) != 3 || f.created["new"].ReplicationFactor != 2 {
		t.Fatalf("auto-created: %+v, request %+v", tp, f.created["new"])
	}
	no := everyone()
	no.Create = func(string) bool { return false }
	if resp := d.Metadata(metadataOf(12, "denied"), no); resp.Topics[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("created without Create: %d", resp.Topics[0].ErrorCode)
	}
	req := metadataOf(12, "off")
	req.AllowAutoTopicCreation = false
	if resp := d.Metadata(req, everyone()); resp.Topics[0].ErrorCode != kerr.UnknownTopicOrPartition.Code || len(f.created) != 1 {
		t.Fatalf("created though not allowed: %d", resp.Topics[0].ErrorCode)
	}

	d, f = newDirectory(t, DirectoryOptions{AutoCreate: true, NumPartitions: 1, ReplicationFactor: 4})
	if resp := d.Metadata(metadataOf(12, "wide"), everyone()); resp.Topics[0].ErrorCode != kerr.InvalidReplicationFactor.Code || len(f.created) != 0 {
		t.Fatalf("replication factor above the brokers: %d", resp.Topics[0].ErrorCode)
	}
	d, f = newDirectory(t, DirectoryOptions{AutoCreate: true, NumPartitions: 1, ReplicationFactor: 4, SingleNode: true})
	if resp := d.Metadata(metadataOf(12, "one"), everyone()); resp.Topics[0].ErrorCode != 0 || f.created["one"].ReplicationFactor != 1 {
		t.Fatalf("single node: %d, request %+v", resp.Topics[0].ErrorCode, f.created["one"])
	}
}

// TestDirectoryCoordinator: the internal topic is created on first use
// and the key's partition leader answers with its address; too few
// brokers for its replication factor, or a leaderless partition, is
// COORDINATOR_NOT_AVAILABLE.
func TestDirectoryCoordinator(t *testing.T) {
	d, f := newDirectory(t, DirectoryOptions{})
	it := InternalTopic{Name: "__consumer_offsets", Partitions: 4, Replication: 3, ReplicationKey: "offsets.topic.replication.factor", What: "group"}
	id, host, port, code, msg := d.Coordinator(it, "g", "PLAINTEXT", nil)
	if code != 0 || id != 1 || host != "self" || port != 1 || f.created[it.Name].NumPartitions != 4 {
		t.Fatalf("coordinator: %d %s:%d code %d %q", id, host, port, code, msg)
	}
	if _, _, _, code, _ := d.Coordinator(it, "g", "SSL", nil); code != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("a coordinator without the client's listener: %d", code)
	}
	it.Name, it.Replication = "__transaction_state", 5
	if _, _, _, code, msg := d.Coordinator(it, "g", "PLAINTEXT", nil); code != kerr.CoordinatorNotAvailable.Code || msg == "" {
		t.Fatalf("replication above the brokers: %d %q", code, msg)
	}
	it.Name, it.Partitions = "t", 2 // partition 1 is led by dead broker 7
	key := ""
	for k := range 100 {
		if s := string(rune('a'+k%26)) + string(rune('a'+k/26)); group.PartitionFor(s, 2) == 1 {
			key = s
			break
		}
	}
	if _, _, _, code, _ := d.Coordinator(it, key, "PLAINTEXT", nil); code != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("a leaderless coordinator partition: %d", code)
	}
}

// TestDirectoryAdmin: a deletion of an unknown topic is
// UNKNOWN_TOPIC_OR_PARTITION; one the controller has not carried out is
// REQUEST_TIMED_OUT at the timeout, or as soon as the broker closes;
// answered at once with a timeout of 0.
func TestDirectoryAdmin(t *testing.T) {
	closing := make(chan struct{})
	d, _ := newDirectory(t, DirectoryOptions{Closing: closing})
	if code, _ := d.DeleteTopic("nope", [16]byte{}, 0); code != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("unknown topic: %d", code)
	}
	if code, _ := d.DeleteTopic("t", [16]byte{7}, 0); code != 0 {
		t.Fatalf("a deletion under way with timeout 0: %d", code)
	}
	if code, _ := d.DeleteTopic("t", [16]byte{7}, 50); code != kerr.RequestTimedOut.Code {
		t.Fatalf("a deletion the controller has not done: %d", code)
	}
	close(closing)
	if code, _ := d.DeleteTopic("t", [16]byte{7}, 1<<30); code != kerr.RequestTimedOut.Code {
		t.Fatalf("a wait when the broker closes: %d", code)
	}
	if id, n, ok := d.Topic("t"); !ok || n != 2 || id != ([16]byte{7}) || d.LiveBrokers() != 3 {
		t.Fatalf("topic: %v %d %v", id, n, ok)
	}
	if code, _ := d.GrowTopic("nope", 3, nil, 0); code != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("growing an unknown topic: %d", code)
	}
}
