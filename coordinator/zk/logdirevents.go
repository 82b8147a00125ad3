package zk

// Log directory events (Kafka's LogDirEventNotificationHandler, ZooKeeper
// mode). A broker whose log of a partition cannot take writes (a full or
// failing disk), or can again, writes
//
//	/log_dir_event_notification/log_dir_event_<seq>   persistent sequential
//	    {"version":1,"broker":2,"event":1}
//
// event 1 is Kafka's LogDirFailure, its only one; sluice also writes it
// when such a log takes writes again, so that the controller asks once
// more. The controller watches the children, removes each notification it
// reads and Steps controller.LogDirEvent with the brokers named: it asks
// each about every partition it hosts, and their answers mark its replicas
// offline (KAFKA_STORAGE_ERROR) or online.

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	gozk "github.com/go-zookeeper/zk"

	"github.com/sluice-io/sluice/coordinator/controller"
)

const logDirEventPrefix = "log_dir_event_"

// logDirFailureEvent is Kafka's LogDirFailure, the "event" field.
const logDirFailureEvent = 1

type logDirEvent struct {
	Version int   `json:"version"`
	Broker  int32 `json:"broker"`
	Event   int   `json:"event"`
}

// NotifyLogDirEvent tells the controller that broker's logs changed
// state: one of them cannot take writes, or can again.
func (c *Client) NotifyLogDirEvent(broker int32) error {
	data, err := json.Marshal(logDirEvent{Version: 1, Broker: broker, Event: logDirFailureEvent})
	if err != nil {
		return err
	}
	if _, err := c.conn.Create(c.abs(LogDirEventNotifyPath+"/"+logDirEventPrefix), data, gozk.FlagSequence, openACL); err != nil {
		return fmt.Errorf("zk: create %s/%s: %w", LogDirEventNotifyPath, logDirEventPrefix, err)
	}
	return nil
}

// logDirEventsChanged reads and removes the notifications under
// /log_dir_event_notification, watching it again, and Steps the brokers
// they name.
func (t *term) logDirEventsChanged() error {
	c := t.l.client
	names, ch, err := c.watchChildren(LogDirEventNotifyPath)
	if err != nil {
		return err
	}
	t.forward(ch, watchLogDirEvents, "")
	slices.Sort(names)
	var brokers []int32
	for _, name := range names {
		p := LogDirEventNotifyPath + "/" + name
		data, _, err := c.conn.Get(c.abs(p))
		if errors.Is(err, gozk.ErrNoNode) {
			continue
		}
		if err != nil {
			return fmt.Errorf("zk: read %s: %w", p, err)
		}
		var ev logDirEvent
		if err := json.Unmarshal(data, &ev); err != nil {
			t.l.log.Warn("ignoring a log directory event that does not decode", "path", p, "err", err)
		} else if !slices.Contains(brokers, ev.Broker) {
			brokers = append(brokers, ev.Broker)
		}
		if err := c.conn.Delete(c.abs(p), -1); err != nil && !errors.Is(err, gozk.ErrNoNode) {
			return fmt.Errorf("zk: delete %s: %w", p, err)
		}
	}
	if len(brokers) > 0 {
		t.l.log.Info("log directory events", "brokers", brokers)
		t.core.Step(controller.LogDirEvent{Brokers: brokers})
	}
	return nil
}
