package group

import (
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// state is a group's state (Kafka's GroupState).
type state int8

const (
	empty state = iota
	preparingRebalance
	completingRebalance
	stable
	dead
)

// String is the state's name as Kafka reports it.
func (s state) String() string {
	switch s {
	case empty:
		return "Empty"
	case preparingRebalance:
		return "PreparingRebalance"
	case completingRebalance:
		return "CompletingRebalance"
	case stable:
		return "Stable"
	}
	return "Dead"
}

// newMemberJoinTimeout bounds how long a new member's JoinGroup may stay
// parked: it cannot heartbeat before it has its member id (Kafka's
// NewMemberJoinTimeoutMs).
const newMemberJoinTimeout = 5 * time.Minute

type protocol struct {
	name     string
	metadata []byte
}

type member struct {
	id               string
	instanceID       *string
	clientID         string
	clientHost       string
	rebalanceTimeout time.Duration
	sessionTimeout   time.Duration
	protocolType     string
	protocols        []protocol
	assignment       []byte

	isNew bool
	// joinCh and syncCh are set while the member's JoinGroup or SyncGroup
	// is parked; each is buffered 1 and receives exactly one result.
	joinCh chan joinResult
	syncCh chan syncResult
	// heartbeat expiry: the timer and the sequence it was armed with.
	hbTimer Timer
	hbSeq   uint64
}

func (m *member) static() bool { return m.instanceID != nil }

// matches reports whether protocols are the member's, in order, with the
// same metadata (Kafka's MemberMetadata.matches).
func (m *member) matches(protocols []protocol) bool {
	if len(protocols) != len(m.protocols) {
		return false
	}
	for i, p := range protocols {
		if p.name != m.protocols[i].name || string(p.metadata) != string(m.protocols[i].metadata) {
			return false
		}
	}
	return true
}

func (m *member) metadata(protocol string) []byte {
	for _, p := range m.protocols {
		if p.name == protocol {
			return p.metadata
		}
	}
	return nil
}

// pendingMember is a member id handed out with MEMBER_ID_REQUIRED (KIP-394)
// that expires unless it joins within its session timeout.
type pendingMember struct{ timer Timer }

// joinResult is a JoinGroup answer.
type joinResult struct {
	err            int16
	memberID       string
	generation     int32
	protocolType   string
	protocolName   string
	leader         string
	members        []kmsg.JoinGroupResponseMember
	skipAssignment bool
}

func joinError(memberID string, code int16) joinResult {
	return joinResult{err: code, memberID: memberID, generation: -1}
}

// syncResult is a SyncGroup answer.
type syncResult struct {
	err          int16
	protocolType string
	protocolName string
	assignment   []byte
}

// topicPartition names a committed offset.
type topicPartition struct {
	topic     string
	partition int32
}

// committed is a committed offset.
type committed struct {
	offset      int64
	leaderEpoch int32
	metadata    string
	commitTime  int64 // ms
	expireTime  int64 // ms; -1 unless committed with an explicit retention (v1 records)
	// order is where the offset was written in its partition, relative
	// to the group's other offsets (Coordinator.order): Kafka compares the
	// offsets of their batches in the log.
	order int64
}

// group is one group's state, guarded by mu.
type group struct {
	id        string
	partition int32 // of __consumer_offsets
	mu        sync.Mutex

	state        state
	stateTime    time.Time
	generation   int32
	protocolType string // "" until the first member joins
	protocolName string // "" outside a generation
	leader       string
	members      map[string]*member
	order        []string                  // member ids in join order (the leader is elected from it)
	static       map[string]string         // instance id -> member id
	supported    map[string]int            // protocol -> number of members supporting it
	awaitingJoin int                       // members whose JoinGroup is parked
	pending      map[string]*pendingMember // member ids handed out with MEMBER_ID_REQUIRED, not yet joined
	pendingSync  map[string]bool           // members of the new generation that have not sent SyncGroup
	subscribed   map[string]bool           // consumer protocol: topics the members subscribe to; nil if unknown

	// Rebalance timers: the join deadline (or initial delay) and the sync
	// deadline. seq invalidates a timer that fired after it was replaced.
	seq            uint64
	joinTimer      Timer
	initialDelay   bool // the join timer is Kafka's InitialDelayedJoin
	delay          time.Duration
	remaining      time.Duration
	newMemberAdded bool
	syncTimer      Timer

	offsets map[topicPartition]committed
	// pendingTxn holds offsets committed in transactions not yet ended, by
	// producer id (Kafka's pendingTransactionalOffsetCommits): written to
	// the log, invisible to OffsetFetch until the producer's COMMIT marker
	// (CompleteTxn), dropped at its ABORT.
	pendingTxn map[int64]map[topicPartition]committed
}

func newGroup(id string, partition int32, now time.Time) *group {
	return &group{
		id:         id,
		partition:  partition,
		state:      empty,
		stateTime:  now,
		members:    map[string]*member{},
		static:     map[string]string{},
		supported:  map[string]int{},
		pending:    map[string]*pendingMember{},
		offsets:    map[topicPartition]committed{},
		pendingTxn: map[int64]map[topicPartition]committed{},
	}
}

func (g *group) transition(s state, now time.Time) {
	g.state, g.stateTime = s, now
}

// add adds m; ch, if not nil, is its parked JoinGroup.
func (g *group) add(m *member, ch chan joinResult) {
	if m.instanceID != nil {
		g.static[*m.instanceID] = m.id
	}
	if len(g.members) == 0 {
		g.protocolType = m.protocolType
	}
	if g.leader == "" {
		g.leader = m.id
	}
	g.members[m.id] = m
	g.order = append(g.order, m.id)
	for _, p := range m.protocols {
		g.supported[p.name]++
	}
	if ch != nil {
		m.joinCh = ch
		g.awaitingJoin++
	}
	delete(g.pending, m.id)
}

// remove removes a member (or a pending member id), electing a new leader
// if it led.
func (g *group) remove(id string) {
	if m := g.members[id]; m != nil {
		for _, p := range m.protocols {
			g.supported[p.name]--
		}
		if m.joinCh != nil {
			g.awaitingJoin--
		}
		if m.instanceID != nil {
			delete(g.static, *m.instanceID)
		}
		if m.hbTimer != nil {
			m.hbTimer.Stop()
		}
		delete(g.members, id)
		for i, o := range g.order {
			if o == id {
				g.order = append(g.order[:i:i], g.order[i+1:]...)
				break
			}
		}
	}
	if g.leader == id {
		g.leader = ""
		if len(g.order) > 0 {
			g.leader = g.order[0]
		}
	}
	if p := g.pending[id]; p != nil && p.timer != nil {
		p.timer.Stop()
	}
	delete(g.pending, id)
	delete(g.pendingSync, id)
}

// rename gives static member m a new member id in every index of the
// group (Kafka's replaceStaticMember).
func (g *group) rename(m *member, newID string) {
	oldID := m.id
	delete(g.members, oldID)
	m.id = newID
	g.members[newID] = m
	for i, o := range g.order {
		if o == oldID {
			g.order[i] = newID
		}
	}
	g.static[*m.instanceID] = newID
	if g.leader == oldID {
		g.leader = newID
	}
	if g.pendingSync[oldID] {
		delete(g.pendingSync, oldID)
		g.pendingSync[newID] = true
	}
}

// update replaces a member's protocols and timeouts; ch, if not nil,
// parks its JoinGroup.
func (g *group) update(m *member, protocols []protocol, rebalance, session time.Duration, ch chan joinResult) {
	for _, p := range m.protocols {
		g.supported[p.name]--
	}
	for _, p := range protocols {
		g.supported[p.name]++
	}
	m.protocols, m.rebalanceTimeout, m.sessionTimeout = protocols, rebalance, session
	if ch != nil {
		if m.joinCh == nil {
			g.awaitingJoin++
		}
		m.joinCh = ch
	}
}

// stop stops the group's timers and answers its parked JoinGroup and
// SyncGroup requests NOT_COORDINATOR (Kafka's onGroupUnloaded), on Close
// and Unload.
func (g *group) stop() {
	g.seq++
	for _, t := range []Timer{g.joinTimer, g.syncTimer} {
		if t != nil {
			t.Stop()
		}
	}
	for _, m := range g.members {
		if m.hbTimer != nil {
			m.hbTimer.Stop()
		}
		g.answerJoin(m, joinError(m.id, errNotCoordinator))
		g.answerSync(m, syncResult{err: errNotCoordinator})
	}
	for _, p := range g.pending {
		if p.timer != nil {
			p.timer.Stop()
		}
	}
}

// answerJoin sends m's parked JoinGroup its result, if it has one parked.
func (g *group) answerJoin(m *member, r joinResult) bool {
	if m.joinCh == nil {
		return false
	}
	m.joinCh <- r
	m.joinCh = nil
	m.isNew = false
	g.awaitingJoin--
	return true
}

// answerSync sends m's parked SyncGroup its result, if it has one parked.
func (g *group) answerSync(m *member, r syncResult) bool {
	if m.syncCh == nil {
		return false
	}
	m.syncCh <- r
	m.syncCh = nil
	return true
}

// supports is Kafka's supportsProtocols: an empty group takes any
// non-empty protocol type and list; otherwise the type must match and one
// of the protocols be supported by every member.
func (g *group) supports(protocolType string, protocols []protocol) bool {
	if g.state == empty {
		return protocolType != "" && len(protocols) > 0
	}
	if g.protocolType != protocolType {
		return false
	}
	for _, p := range protocols {
		if g.supported[p.name] == len(g.members) {
			return true
		}
	}
	return false
}

// selectProtocol is Kafka's selectProtocol: among the protocols every
// member supports, each member votes for the first in its own order; the
// most votes win (ties: the earliest in the leader's order).
func (g *group) selectProtocol() string {
	votes := map[string]int{}
	for _, id := range g.order {
		for _, p := range g.members[id].protocols {
			if g.supported[p.name] == len(g.members) {
				votes[p.name]++
				break
			}
		}
	}
	best, n := "", -1
	if l := g.members[g.leader]; l != nil {
		for _, p := range l.protocols {
			if v, ok := votes[p.name]; ok && v > n {
				best, n = p.name, v
			}
		}
	}
	return best
}

// rebalanceTimeout is the largest rebalance timeout of the members.
func (g *group) rebalanceTimeout() time.Duration {
	var d time.Duration
	for _, m := range g.members {
		d = max(d, m.rebalanceTimeout)
	}
	return d
}

func (g *group) allJoined() bool {
	return len(g.members) == g.awaitingJoin && len(g.pending) == 0
}

// canRebalance: PreparingRebalance may follow Stable, CompletingRebalance
// and Empty.
func (g *group) canRebalance() bool {
	return g.state == stable || g.state == completingRebalance || g.state == empty
}

// currentMembers is what the leader's JoinGroup answer lists.
func (g *group) currentMembers() []kmsg.JoinGroupResponseMember {
	out := make([]kmsg.JoinGroupResponseMember, 0, len(g.order))
	for _, id := range g.order {
		m := g.members[id]
		jm := kmsg.NewJoinGroupResponseMember()
		jm.MemberID, jm.InstanceID, jm.ProtocolMetadata = m.id, m.instanceID, m.metadata(g.protocolName)
		out = append(out, jm)
	}
	return out
}

// computeSubscribed is Kafka's computeSubscribedTopics: for the consumer
// protocol, the union of the members' subscriptions; nil when unknown.
func (g *group) computeSubscribed() map[string]bool {
	if g.protocolType != "consumer" || len(g.members) == 0 || g.protocolName == "" {
		return nil
	}
	out := map[string]bool{}
	for _, m := range g.members {
		var meta kmsg.ConsumerMemberMetadata
		if err := meta.ReadFrom(m.metadata(g.protocolName)); err != nil {
			return nil
		}
		for _, t := range meta.Topics {
			out[t] = true
		}
	}
	return out
}

func (g *group) subscribedTo(topic string) bool {
	return g.subscribed == nil || g.subscribed[topic]
}
