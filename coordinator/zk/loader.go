package zk

// The controller driver's reads: the cluster as the decision core
// (coordinator/controller) takes it, read from Kafka's znodes with watches
// armed before the data is read, so that no change between a read and its
// watch is missed. A controller of 10,000 partitions reads 10,000 state
// znodes at its election; the reads go out from a small pool of goroutines
// (go-zookeeper pipelines the calls of all of them over its one
// connection), not one after the other.

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	gozk "github.com/go-zookeeper/zk"

	"github.com/sluice-io/sluice/coordinator/controller"
	"github.com/sluice-io/sluice/engine"
)

// readers is how many reads the driver keeps in flight at once.
const readers = 32

// parallel calls f(i) for i in [0, n) from up to readers goroutines and
// returns the first error (the remaining calls still run).
func parallel(n int, f func(i int) error) error {
	workers := min(n, readers)
	var next atomic.Int64
	var mu sync.Mutex
	var first error
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := f(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	return first
}

// watchBrokers arms a watch on the children of /brokers/ids and reads every
// registration, as the core's BrokerInfo.
func (c *Client) watchBrokers() ([]controller.BrokerInfo, <-chan gozk.Event, error) {
	_, _, ch, err := c.conn.ChildrenW(c.abs(BrokerIDsPath))
	if err != nil {
		return nil, nil, fmt.Errorf("zk: watch %s: %w", BrokerIDsPath, err)
	}
	regs, err := c.Brokers()
	if err != nil {
		return nil, nil, err
	}
	out := make([]controller.BrokerInfo, 0, len(regs))
	for _, r := range regs {
		out = append(out, brokerInfo(r))
	}
	return out, ch, nil
}

func brokerInfo(r RegisteredBroker) controller.BrokerInfo {
	b := controller.BrokerInfo{ID: r.ID, Epoch: r.Epoch, Rack: r.Rack}
	for _, e := range r.Endpoints {
		b.Endpoints = append(b.Endpoints, controller.Endpoint{
			Listener: e.Listener, SecurityProtocol: e.SecurityProtocol, Host: e.Host, Port: e.Port,
		})
	}
	return b
}

// watchChildren arms a watch on p's children and returns them.
func (c *Client) watchChildren(p string) ([]string, <-chan gozk.Event, error) {
	names, _, ch, err := c.conn.ChildrenW(c.abs(p))
	if err != nil {
		return nil, nil, fmt.Errorf("zk: watch %s: %w", p, err)
	}
	return names, ch, nil
}

// watchedTopic is a topic's assignment read with a watch on its znode.
type watchedTopic struct {
	assignment controller.TopicAssignment
	// gone says the znode did not exist (no watch then: the children watch
	// of /brokers/topics brings it back).
	gone  bool
	watch <-chan gozk.Event
}

// watchTopic reads /brokers/topics/<name> with a watch on its data.
func (c *Client) watchTopic(name string) (watchedTopic, error) {
	data, stat, ch, err := c.conn.GetW(c.abs(TopicPath(name)))
	if errors.Is(err, gozk.ErrNoNode) {
		return watchedTopic{gone: true}, nil
	}
	if err != nil {
		return watchedTopic{}, fmt.Errorf("zk: read %s: %w", TopicPath(name), err)
	}
	a, err := DecodeTopic(name, data)
	if err != nil {
		return watchedTopic{}, err
	}
	return watchedTopic{
		assignment: controller.TopicAssignment{Name: name, ID: a.ID, Replicas: a.Replicas, Adding: a.Adding, Removing: a.Removing, Version: stat.Version},
		watch:      ch,
	}, nil
}

// watchTopics reads the named topics' znodes with watches, in parallel;
// topics found gone are left out.
func (c *Client) watchTopics(names []string) ([]watchedTopic, error) {
	got := make([]watchedTopic, len(names))
	err := parallel(len(names), func(i int) (err error) {
		got[i], err = c.watchTopic(names[i])
		return err
	})
	if err != nil {
		return nil, err
	}
	out := got[:0]
	for _, w := range got {
		if !w.gone {
			out = append(out, w)
		}
	}
	return out, nil
}

// readState reads a partition's state znode; ok false when it does not
// exist.
func (c *Client) readState(tp engine.Partition) (s controller.PartitionState, ok bool, err error) {
	p := PartitionStatePath(tp.Topic, tp.Partition)
	data, stat, err := c.conn.Get(c.abs(p))
	if errors.Is(err, gozk.ErrNoNode) {
		return s, false, nil
	}
	if err != nil {
		return s, false, fmt.Errorf("zk: read %s: %w", p, err)
	}
	st, err := DecodePartitionState(tp.Topic, tp.Partition, data)
	if err != nil {
		return s, false, err
	}
	return controller.PartitionState{
		Leader: st.Leader, LeaderEpoch: st.LeaderEpoch, ISR: st.ISR,
		ControllerEpoch: st.ControllerEpoch, LeaderRecoveryState: st.LeaderRecoveryState,
		PartitionEpoch: stat.Version,
	}, true, nil
}

// readStates reads the state znodes of every partition of the topics'
// assignments, in parallel.
func (c *Client) readStates(topics []controller.TopicAssignment) (map[engine.Partition]controller.PartitionState, error) {
	var tps []engine.Partition
	for _, t := range topics {
		for p := range t.Replicas {
			tps = append(tps, engine.Partition{Topic: t.Name, Partition: int32(p)})
		}
	}
	states := make([]controller.PartitionState, len(tps))
	found := make([]bool, len(tps))
	err := parallel(len(tps), func(i int) (err error) {
		states[i], found[i], err = c.readState(tps[i])
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make(map[engine.Partition]controller.PartitionState, len(tps))
	for i, tp := range tps {
		if found[i] {
			out[tp] = states[i]
		}
	}
	return out, nil
}

// watches are the watches a load armed: on the children of /brokers/ids,
// /brokers/topics and /admin/delete_topics, and on each topic's data.
type watches struct {
	brokers, topics, deletes <-chan gozk.Event
	topic                    map[string]<-chan gozk.Event
}

// load reads the whole cluster for a newly elected controller, arming the
// watches that bring its later changes.
func (c *Client) load() (controller.Load, watches, error) {
	var ld controller.Load
	w := watches{topic: map[string]<-chan gozk.Event{}}
	var err error
	if ld.Brokers, w.brokers, err = c.watchBrokers(); err != nil {
		return ld, w, err
	}
	names, ch, err := c.watchChildren(TopicsPath)
	if err != nil {
		return ld, w, err
	}
	w.topics = ch
	topics, err := c.watchTopics(names)
	if err != nil {
		return ld, w, err
	}
	for _, t := range topics {
		ld.Topics = append(ld.Topics, t.assignment)
		w.topic[t.assignment.Name] = t.watch
	}
	if ld.States, err = c.readStates(ld.Topics); err != nil {
		return ld, w, err
	}
	if ld.Deleting, w.deletes, err = c.watchChildren(DeleteTopicsPath); err != nil {
		return ld, w, err
	}
	return ld, w, nil
}
