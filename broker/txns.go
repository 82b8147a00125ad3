package broker

// The transaction coordinators' place in the broker: __transaction_state,
// created on the first FindCoordinator of a transactional id (key type 1),
// as Kafka creates it, and the drivers of coordinator/txn/host, one for
// each of its partitions this broker leads (replication/host/hosting.go moves them as it
// moves the groups: the partition's leader epoch is the coordinator epoch
// its markers carry).
//
// __transaction_state has Kafka's internal topic configs
// (config.TxnStateTopicConfigs). Its replication factor is
// transaction.state.log.replication.factor (3), clamped to 1 on the
// single node, as is its min.insync.replicas.

import (
	"context"

	"github.com/sluice-io/sluice/broker/cluster"
	"github.com/sluice-io/sluice/config"
	txnhost "github.com/sluice-io/sluice/coordinator/txn/host"
	"github.com/sluice-io/sluice/wire/interbroker"
)

// txnStateTopic is Kafka's internal topic of transaction states.
const txnStateTopic = txnhost.StateTopic

// newTxns builds the transaction coordinators over this broker's
// partitions, metadata cache and connections.
func (b *Broker) newTxns() *txnhost.Coordinators {
	opts := txnhost.Options{
		Self: b.cfg.ID, Config: b.cfg.Txns, Logger: b.log, Closing: b.life.closing,
		Leader:            b.leaderPartition,
		Metadata:          func() txnhost.Metadata { return txnMetadata{b.plane.state.Cache.Load()} },
		WriteMarkers:      b.writeTxnMarkers, // 27_write_txn_markers.go
		NewProducerID:     b.coords.pids.ID,
		OffsetsPartitions: func() int32 { return b.coords.groups.Existing().Partitions() },
		StatePartitions:   b.txnPartitions,
	}
	if b.plane.zk != nil {
		opts.Dial = func(o interbroker.Options) interbroker.Sender { return b.openInterBroker(b.plane.zk.Client(), o) }
	}
	return txnhost.New(opts)
}

// txnMetadata is the metadata cache as the markers read it.
type txnMetadata struct{ snap *cluster.Snapshot }

func (m txnMetadata) Leader(topic string, partition int32) (int32, bool) {
	t := m.snap.Topics[topic]
	if t == nil {
		return -1, false
	}
	cp, ok := t.Partitions[partition]
	if !ok {
		return -1, false
	}
	if cp.Leader < 0 || m.snap.LiveBroker(cp.Leader) == nil {
		return -1, true
	}
	return cp.Leader, true
}

// TopicDeleted reports that the metadata has no topic name although it
// has the topics of the cluster: it has __transaction_state, which the
// coordinator's own partition belongs to, so it has had the full update
// that names every topic. (A broker that just started may be made a
// leader before it learns the topics, and a marker dropped then would
// leave its transaction open in the partition forever.)
func (m txnMetadata) TopicDeleted(topic string) bool {
	return m.snap.Topics[topic] == nil && m.snap.Topics[txnStateTopic] != nil
}

// txnPartitions is the partition count of __transaction_state: as the
// metadata has it once created (Kafka reads the topic's count too), else
// transaction.state.log.num.partitions.
func (b *Broker) txnPartitions() int32 {
	if t := b.plane.state.Cache.Load().Topics[txnStateTopic]; t != nil && t.Count > 0 {
		return t.Count
	}
	return b.cfg.Txns.WithDefaults().StatePartitions
}

// txnCoordinator finds a transactional id's coordinator for
// FindCoordinator, creating __transaction_state first if needed.
func (b *Broker) txnCoordinator(key, listener string) (id int32, host string, port int32, code int16, msg string) {
	tc := b.cfg.Txns.WithDefaults()
	return b.plane.dir.Coordinator(cluster.InternalTopic{Name: txnStateTopic, Partitions: b.txnPartitions(),
		Replication: tc.StateReplication, ReplicationKey: "transaction.state.log.replication.factor",
		Configs: config.TxnStateTopicConfigs(tc, b.plane.zk == nil), What: "transactional id"}, key, listener,
		func(ctx context.Context, p int32) {
			if d := b.coords.txns.Driver(p); d != nil {
				d.AwaitLoaded(ctx)
			}
		})
}
