package broker

// Log directory events: a follower whose log could not take the leader's
// records (replication/host/driver.go's noteFailure), or takes them again, tells the
// controller through ZooKeeper (coordinator/zk's NotifyLogDirEvent, Kafka's
// LogDirEventNotification); the controller asks this broker about its
// replicas, and LeaderAndIsr answers KAFKA_STORAGE_ERROR for a failed one
// (04_leader_and_isr.go), which the metadata then lists as offline
// (Metadata's OfflineReplicas, `sluice topic describe`'s Offline).
//
// One goroutine writes the notifications; changes that come while one is
// written are folded into the next.

import "time"

// logDirEventRetry is the pause before a notification that could not be
// written is written again.
const logDirEventRetry = time.Second

// startLogDirEvents starts the goroutine that writes c's notifications.
func (c *zkCluster) startLogDirEvents() {
	c.logDirWake = make(chan struct{}, 1)
	go func() {
		for {
			select {
			case <-c.logDirWake:
			case <-c.ctx.Done():
				return
			}
			for {
				err := c.zk.NotifyLogDirEvent(c.b.cfg.ID)
				if err == nil {
					break
				}
				c.log.Warn("telling the controller of a log directory event failed; retrying", "err", err)
				select {
				case <-time.After(logDirEventRetry):
				case <-c.ctx.Done():
					return
				}
			}
		}
	}()
}

// logDirChanged asks for a notification; it does not block.
func (c *zkCluster) logDirChanged() {
	if c == nil || c.logDirWake == nil {
		return
	}
	select {
	case c.logDirWake <- struct{}{}:
	default:
	}
}

// replicaFailed reports whether this broker's replica of a partition is a
// follower whose log could not take the leader's records.
func (b *Broker) replicaFailed(topic string, index int32) bool {
	p := b.partition(topic, index)
	return p != nil && p.Failed()
}
