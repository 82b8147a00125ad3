package zk

// Encoders and decoders of the znode payloads doc.go describes (the
// broker registration in broker.go, configs in config.go). Encoders
// write what Kafka 3.9 writes, byte for byte (order.go); decoders accept
// what Kafka 2.x to 3.9 brokers and tools write (older payload versions,
// unknown fields, whitespace) and refuse anything else with an
// ErrBadZnode error naming the znode. Every function is pure: no
// ZooKeeper connection, no clock.

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/sluice-io/sluice/engine"
)

// unmarshal decodes data, a JSON object, into v, which holds pointer or
// nil-able fields so that a missing field can be told from a zero one.
// Unknown fields are ignored, as Kafka's readers ignore them. (One
// leniency beyond Kafka's: encoding/json matches field names without
// regard to case.)
func unmarshal(path string, data []byte, v any) error {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' {
		return bad(path, "not a JSON object: %.40q", data)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return bad(path, "%v", err)
	}
	return nil
}

// parseMillis parses a timestamp field: Kafka writes milliseconds as a
// decimal string; a number is accepted too (Kafka never reads these
// fields). Absent or null is 0.
func parseMillis(path, field string, raw json.RawMessage) (int64, error) {
	s := string(raw)
	if s == "" || s == "null" {
		return 0, nil
	}
	if strings.HasPrefix(s, `"`) {
		if err := json.Unmarshal(raw, &s); err != nil {
			return 0, bad(path, "%q: %v", field, err)
		}
	}
	ms, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, bad(path, "%q is not a timestamp: %s", field, raw)
	}
	return ms, nil
}

// checkReplicas checks a list of broker ids as Kafka's controller writes
// them: at least one, none negative, none twice.
func checkReplicas(path, what string, ids []int32) error {
	if len(ids) == 0 {
		return bad(path, "%s: no replicas", what)
	}
	for i, id := range ids {
		if id < 0 {
			return bad(path, "%s: broker id %d", what, id)
		}
		for _, prev := range ids[:i] {
			if prev == id {
				return bad(path, "%s: broker %d listed twice", what, id)
			}
		}
	}
	return nil
}

// ---- /cluster/id

type clusterIDJSON struct {
	Version string `json:"version"` // "1", a string (ClusterIdZNode)
	ID      string `json:"id"`
}

// EncodeClusterID returns /cluster/id's payload.
func EncodeClusterID(id string) []byte {
	return marshal(clusterIDJSON{Version: "1", ID: id})
}

// DecodeClusterID returns the cluster id from /cluster/id's payload.
func DecodeClusterID(data []byte) (string, error) {
	var v struct {
		ID *string `json:"id"`
	}
	if err := unmarshal(ClusterIDPath, data, &v); err != nil {
		return "", err
	}
	if v.ID == nil || *v.ID == "" {
		return "", bad(ClusterIDPath, `"id" missing`)
	}
	return *v.ID, nil
}

// ---- /controller and /controller_epoch

// ControllerVersion is the /controller payload version Kafka 3.9 writes.
const ControllerVersion = 2

// NoKRaftControllerEpoch is /controller's kraftControllerEpoch when a
// ZooKeeper-mode broker is the controller.
const NoKRaftControllerEpoch = -1

// InitialControllerEpoch is the value Kafka creates /controller_epoch with;
// the first controller elected makes it 1.
const InitialControllerEpoch = 0

// Controller is the payload of the ephemeral /controller znode.
type Controller struct {
	// BrokerID is the controller's broker id.
	BrokerID int32
	// Timestamp is when it was elected, in Unix milliseconds.
	Timestamp int64
	// KRaftControllerEpoch is NoKRaftControllerEpoch (-1) for a ZooKeeper
	// mode controller, and absent (decoded as -1) in version 1 payloads;
	// anything else means a KRaft controller holds /controller during a
	// ZooKeeper-to-KRaft migration (KIP-866), which a ZooKeeper-mode broker
	// must not try to replace.
	KRaftControllerEpoch int32
}

type controllerJSON struct {
	Version              int    `json:"version"`
	BrokerID             int32  `json:"brokerid"`
	Timestamp            string `json:"timestamp"`
	KRaftControllerEpoch int32  `json:"kraftControllerEpoch"`
}

// EncodeController returns /controller's payload (version 2).
func EncodeController(c Controller) []byte {
	return marshal(controllerJSON{
		Version:              ControllerVersion,
		BrokerID:             c.BrokerID,
		Timestamp:            strconv.FormatInt(c.Timestamp, 10),
		KRaftControllerEpoch: c.KRaftControllerEpoch,
	})
}

// DecodeController decodes /controller's payload, versions 1 and 2.
func DecodeController(data []byte) (Controller, error) {
	var v struct {
		BrokerID             *int32          `json:"brokerid"`
		Timestamp            json.RawMessage `json:"timestamp"`
		KRaftControllerEpoch *int32          `json:"kraftControllerEpoch"`
	}
	if err := unmarshal(ControllerPath, data, &v); err != nil {
		return Controller{}, err
	}
	if v.BrokerID == nil {
		return Controller{}, bad(ControllerPath, `"brokerid" missing`)
	}
	c := Controller{BrokerID: *v.BrokerID, KRaftControllerEpoch: NoKRaftControllerEpoch}
	if v.KRaftControllerEpoch != nil {
		c.KRaftControllerEpoch = *v.KRaftControllerEpoch
	}
	var err error
	c.Timestamp, err = parseMillis(ControllerPath, "timestamp", v.Timestamp)
	return c, err
}

// EncodeControllerEpoch returns /controller_epoch's payload: the epoch in
// decimal, not JSON.
func EncodeControllerEpoch(epoch int32) []byte {
	return strconv.AppendInt(nil, int64(epoch), 10)
}

// DecodeControllerEpoch decodes /controller_epoch's payload. The znode's
// version (not its data) is what controller writes are fenced on.
func DecodeControllerEpoch(data []byte) (int32, error) {
	e, err := strconv.ParseInt(string(data), 10, 32)
	if err != nil || e < 0 {
		return 0, bad(ControllerEpochPath, "not a controller epoch: %.40q", data)
	}
	return int32(e), nil
}

// ---- /brokers/topics/<topic>

// TopicVersion is the topic assignment payload version Kafka 3.9 writes
// (2.8+: with topic_id; 2.4-2.7 wrote 2 with adding/removing replicas,
// older brokers 1).
const TopicVersion = 3

// TopicAssignment is the payload of /brokers/topics/<topic>: its id and
// the replicas of each partition.
type TopicAssignment struct {
	// ID is the topic id; zero for topics created before Kafka 2.8 (or with
	// inter.broker.protocol.version below 2.8), which have none.
	ID engine.TopicID
	// Replicas holds partition p's replicas at index p, the preferred
	// leader first. During a reassignment (KIP-455) it is the union of the
	// target replicas and the original ones.
	Replicas [][]int32
	// Adding and Removing are the replicas a reassignment adds and removes,
	// by partition; nil or without the partition when none.
	Adding, Removing map[int32][]int32
}

type topicJSON struct {
	Partitions replicaMap `json:"partitions"`
	TopicID    string     `json:"topic_id,omitempty"`
	Adding     replicaMap `json:"adding_replicas"`
	Removing   replicaMap `json:"removing_replicas"`
	Version    int        `json:"version"`
}

// EncodeTopic returns /brokers/topics/<topic>'s payload (version 3); the
// topic_id field is left out for a zero ID, as Kafka does for topics
// without one.
func EncodeTopic(t TopicAssignment) []byte {
	v := topicJSON{
		Partitions: make(replicaMap, len(t.Replicas)),
		Adding:     replicaMap{},
		Removing:   replicaMap{},
		Version:    TopicVersion,
	}
	if t.ID != (engine.TopicID{}) {
		v.TopicID = t.ID.String()
	}
	for p, rs := range t.Replicas {
		v.Partitions[int32(p)] = rs
	}
	for p, rs := range t.Adding {
		if len(rs) > 0 {
			v.Adding[p] = rs
		}
	}
	for p, rs := range t.Removing {
		if len(rs) > 0 {
			v.Removing[p] = rs
		}
	}
	return marshal(v)
}

// DecodeTopic decodes a topic's assignment, payload versions 1 to 3. The
// partitions must be numbered 0 to n-1 (Kafka validates this when a topic
// is created or grows); adding and removing replicas must name existing
// partitions.
func DecodeTopic(topic string, data []byte) (TopicAssignment, error) {
	path := TopicPath(topic)
	var v struct {
		TopicID    *string            `json:"topic_id"`
		Partitions map[string][]int32 `json:"partitions"`
		Adding     map[string][]int32 `json:"adding_replicas"`
		Removing   map[string][]int32 `json:"removing_replicas"`
	}
	if err := unmarshal(path, data, &v); err != nil {
		return TopicAssignment{}, err
	}
	if len(v.Partitions) == 0 {
		return TopicAssignment{}, bad(path, `"partitions" missing or empty`)
	}
	var t TopicAssignment
	if v.TopicID != nil {
		id, err := parseTopicID(path, *v.TopicID)
		if err != nil {
			return TopicAssignment{}, err
		}
		t.ID = id
	}
	t.Replicas = make([][]int32, len(v.Partitions))
	for key, rs := range v.Partitions {
		p, err := strconv.ParseInt(key, 10, 32)
		if err != nil || p < 0 || int(p) >= len(t.Replicas) || t.Replicas[p] != nil {
			return TopicAssignment{}, bad(path, "partitions are not numbered 0 to %d: %q", len(t.Replicas)-1, key)
		}
		if err := checkReplicas(path, "partition "+key, rs); err != nil {
			return TopicAssignment{}, err
		}
		t.Replicas[p] = rs
	}
	var err error
	if t.Adding, err = decodeReassigning(path, "adding_replicas", v.Adding, len(t.Replicas)); err != nil {
		return TopicAssignment{}, err
	}
	if t.Removing, err = decodeReassigning(path, "removing_replicas", v.Removing, len(t.Replicas)); err != nil {
		return TopicAssignment{}, err
	}
	return t, nil
}

func decodeReassigning(path, field string, m map[string][]int32, partitions int) (map[int32][]int32, error) {
	if len(m) == 0 {
		return nil, nil
	}
	out := make(map[int32][]int32, len(m))
	for key, rs := range m {
		p, err := strconv.ParseInt(key, 10, 32)
		if err != nil || p < 0 || int(p) >= partitions {
			return nil, bad(path, "%s: no partition %q", field, key)
		}
		if err := checkReplicas(path, field+" "+key, rs); err != nil {
			return nil, err
		}
		out[int32(p)] = rs
	}
	return out, nil
}

// parseTopicID parses Kafka's Uuid string: URL-safe base64 of 16 bytes,
// unpadded as Kafka writes it (padding is accepted, as Java's decoder
// does).
func parseTopicID(path, s string) (engine.TopicID, error) {
	var id engine.TopicID
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimSuffix(s, "=="))
	if err != nil || len(b) != len(id) {
		return id, bad(path, "topic_id %q is not a base64 UUID", s)
	}
	copy(id[:], b)
	return id, nil
}

// ---- /brokers/topics/<topic>/partitions/<p>/state

// Leader recovery states (KIP-704).
const (
	// Recovered: the leader was elected from the ISR, or has recovered
	// from an unclean election. Not written (the field is left out).
	Recovered int8 = 0
	// Recovering: the leader came from an unclean election and has not
	// yet recovered.
	Recovering int8 = 1
)

// NoLeader is a partition state's leader when no replica leads.
const NoLeader = -1

// PartitionState is the payload of a partition's state znode: leader,
// leader epoch and ISR, written by the controller (and by leaders shrinking
// or expanding the ISR, with a version check). The partition epoch is not
// in it: it is the znode's version, which every update checks.
type PartitionState struct {
	// Leader is the leader's broker id, NoLeader (-1) when offline.
	Leader int32
	// LeaderEpoch rises with every leader change.
	LeaderEpoch int32
	// ISR is the in-sync replicas.
	ISR []int32
	// ControllerEpoch is the epoch of the controller that last wrote the
	// state (or of the one that elected its leader, for ISR updates by the
	// leader).
	ControllerEpoch int32
	// LeaderRecoveryState is Recovered or Recovering.
	LeaderRecoveryState int8
}

// partitionStateJSON is version 1, in Kafka's field order.
type partitionStateJSON struct {
	ControllerEpoch     int32   `json:"controller_epoch"`
	Leader              int32   `json:"leader"`
	Version             int     `json:"version"`
	LeaderRecoveryState *int8   `json:"leader_recovery_state,omitempty"`
	LeaderEpoch         int32   `json:"leader_epoch"`
	ISR                 []int32 `json:"isr"`
}

// EncodePartitionState returns a partition state znode's payload (version
// 1; leader_recovery_state only when Recovering, as Kafka writes it).
func EncodePartitionState(s PartitionState) []byte {
	v := partitionStateJSON{
		ControllerEpoch: s.ControllerEpoch,
		Leader:          s.Leader,
		Version:         1,
		LeaderEpoch:     s.LeaderEpoch,
		ISR:             s.ISR,
	}
	if v.ISR == nil {
		v.ISR = []int32{}
	}
	if s.LeaderRecoveryState != Recovered {
		v.LeaderRecoveryState = &s.LeaderRecoveryState
	}
	return marshal(v)
}

// DecodePartitionState decodes a partition's state znode.
func DecodePartitionState(topic string, partition int32, data []byte) (PartitionState, error) {
	path := PartitionStatePath(topic, partition)
	var v struct {
		ControllerEpoch     *int32   `json:"controller_epoch"`
		Leader              *int32   `json:"leader"`
		LeaderEpoch         *int32   `json:"leader_epoch"`
		ISR                 *[]int32 `json:"isr"`
		LeaderRecoveryState *int8    `json:"leader_recovery_state"`
	}
	if err := unmarshal(path, data, &v); err != nil {
		return PartitionState{}, err
	}
	switch {
	case v.ControllerEpoch == nil || v.Leader == nil || v.LeaderEpoch == nil || v.ISR == nil:
		return PartitionState{}, bad(path, "needs controller_epoch, leader, leader_epoch and isr")
	case *v.Leader < NoLeader:
		return PartitionState{}, bad(path, "leader %d", *v.Leader)
	case *v.LeaderEpoch < 0 || *v.ControllerEpoch < 0:
		return PartitionState{}, bad(path, "negative epoch")
	}
	s := PartitionState{
		Leader:          *v.Leader,
		LeaderEpoch:     *v.LeaderEpoch,
		ISR:             *v.ISR,
		ControllerEpoch: *v.ControllerEpoch,
	}
	if s.ISR == nil {
		s.ISR = []int32{}
	}
	if len(s.ISR) > 0 {
		if err := checkReplicas(path, "isr", s.ISR); err != nil {
			return PartitionState{}, err
		}
	}
	if v.LeaderRecoveryState != nil {
		s.LeaderRecoveryState = *v.LeaderRecoveryState
		if s.LeaderRecoveryState != Recovered && s.LeaderRecoveryState != Recovering {
			return PartitionState{}, bad(path, "leader_recovery_state %d", s.LeaderRecoveryState)
		}
	}
	return s, nil
}

// ---- /latest_producer_id_block

// ProducerIDBlockSize is the number of producer ids a broker takes at a
// time (ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE).
const ProducerIDBlockSize = 1000

// ProducerIDBlock is the last block of producer ids handed out: ids
// [First, Last], both inclusive as Kafka's block_start and block_end, to
// broker Broker. The next block starts at Last+1; brokers take blocks with a
// conditional update (the znode's version), so no two get the same one.
type ProducerIDBlock struct {
	Broker      int32
	First, Last int64
}

// producerIDBlockJSON is version 1; the ids are decimal strings.
type producerIDBlockJSON struct {
	Version    int    `json:"version"`
	Broker     int32  `json:"broker"`
	BlockStart string `json:"block_start"`
	BlockEnd   string `json:"block_end"`
}

// EncodeProducerIDBlock returns /latest_producer_id_block's payload.
func EncodeProducerIDBlock(b ProducerIDBlock) []byte {
	return marshal(producerIDBlockJSON{
		Version:    1,
		Broker:     b.Broker,
		BlockStart: strconv.FormatInt(b.First, 10),
		BlockEnd:   strconv.FormatInt(b.Last, 10),
	})
}

// DecodeProducerIDBlock decodes /latest_producer_id_block's payload. An
// empty znode (as Kafka creates it at startup) is no block yet: ok false.
func DecodeProducerIDBlock(data []byte) (b ProducerIDBlock, ok bool, err error) {
	const path = ProducerIDBlockPath
	if len(data) == 0 {
		return ProducerIDBlock{}, false, nil
	}
	var v struct {
		Broker     *int32  `json:"broker"`
		BlockStart *string `json:"block_start"`
		BlockEnd   *string `json:"block_end"`
	}
	if err := unmarshal(path, data, &v); err != nil {
		return ProducerIDBlock{}, false, err
	}
	if v.Broker == nil || v.BlockStart == nil || v.BlockEnd == nil {
		return ProducerIDBlock{}, false, bad(path, "needs broker, block_start and block_end")
	}
	b.Broker = *v.Broker
	b.First, err = strconv.ParseInt(*v.BlockStart, 10, 64)
	if err == nil {
		b.Last, err = strconv.ParseInt(*v.BlockEnd, 10, 64)
	}
	// Kafka's block size is an int: Math.toIntExact(end - start + 1).
	if err != nil || b.First < 0 || b.Last < b.First || b.Last-b.First >= math.MaxInt32 {
		return ProducerIDBlock{}, false, bad(path, "bad block [%s, %s]", *v.BlockStart, *v.BlockEnd)
	}
	return b, true, nil
}

// ---- /admin/reassign_partitions

// PartitionReassignment is one partition's target replicas in the legacy
// /admin/reassign_partitions znode (deprecated since Kafka 2.4 in favour of
// AlterPartitionReassignments, still read by 3.9's controller).
type PartitionReassignment struct {
	Topic     string
	Partition int32
	Replicas  []int32
}

type reassignmentJSON struct {
	Version    int                `json:"version"`
	Partitions []reassignPartJSON `json:"partitions"`
}

type reassignPartJSON struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Replicas  []int32 `json:"replicas"`
}

// EncodeReassignment returns /admin/reassign_partitions's payload (version
// 1), partitions sorted by topic and partition.
func EncodeReassignment(rs []PartitionReassignment) []byte {
	v := reassignmentJSON{Version: 1, Partitions: make([]reassignPartJSON, len(rs))}
	for i, r := range rs {
		replicas := r.Replicas
		if replicas == nil {
			replicas = []int32{}
		}
		v.Partitions[i] = reassignPartJSON{r.Topic, r.Partition, replicas}
	}
	sort.Slice(v.Partitions, func(i, j int) bool {
		a, b := v.Partitions[i], v.Partitions[j]
		return a.Topic < b.Topic || a.Topic == b.Topic && a.Partition < b.Partition
	})
	return marshal(v)
}

// DecodeReassignment decodes /admin/reassign_partitions's payload. Each
// partition may appear once.
func DecodeReassignment(data []byte) ([]PartitionReassignment, error) {
	const path = ReassignPartitionsPath
	var v struct {
		Partitions *[]struct {
			Topic     *string  `json:"topic"`
			Partition *int32   `json:"partition"`
			Replicas  *[]int32 `json:"replicas"`
		} `json:"partitions"`
	}
	if err := unmarshal(path, data, &v); err != nil {
		return nil, err
	}
	if v.Partitions == nil {
		return nil, bad(path, `"partitions" missing`)
	}
	out := make([]PartitionReassignment, 0, len(*v.Partitions))
	seen := make(map[engine.Partition]bool, len(*v.Partitions))
	for _, p := range *v.Partitions {
		if p.Topic == nil || *p.Topic == "" || p.Partition == nil || *p.Partition < 0 || p.Replicas == nil {
			return nil, bad(path, "each partition needs topic, partition and replicas")
		}
		tp := engine.Partition{Topic: *p.Topic, Partition: *p.Partition}
		what := *p.Topic + "-" + strconv.Itoa(int(*p.Partition))
		if seen[tp] {
			return nil, bad(path, "%s listed twice", what)
		}
		seen[tp] = true
		if err := checkReplicas(path, what, *p.Replicas); err != nil {
			return nil, err
		}
		out = append(out, PartitionReassignment{*p.Topic, *p.Partition, *p.Replicas})
	}
	return out, nil
}
