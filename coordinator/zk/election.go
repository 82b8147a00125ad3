package zk

// Controller election, as Kafka's KafkaZkClient
// registerControllerAndIncrementControllerEpoch: a broker becomes
// controller by creating the ephemeral /controller and raising
// /controller_epoch in one multi-op conditional on the epoch znode's
// version, so that two brokers cannot both win, and every controller is
// elected at a higher epoch than the one before. The epoch znode's version
// after the election fences the controller's later writes: each goes in a
// multi-op with a check of that version (Multi), which fails once another
// controller has been elected (ErrControllerMoved), however late the
// deposed controller's write arrives.

import (
	"errors"
	"fmt"
	"time"

	gozk "github.com/go-zookeeper/zk"
)

// ErrControllerMoved is returned for a controller's write made after
// another controller was elected, and by Elect when another broker holds
// /controller.
var ErrControllerMoved = errors.New("zk: controller moved")

// Election is a won election: the controller epoch, and the version of
// /controller_epoch its writes are conditional on.
type Election struct {
	BrokerID int32
	Epoch    int32
	// EpochVersion is /controller_epoch's znode version after the
	// election.
	EpochVersion int32
}

// Elect makes broker the controller if no broker is, and returns the
// election. ErrControllerMoved (with the holder's id in the error) when
// another broker holds /controller; a retry after the holder's znode goes
// (WatchController) may win.
func (c *Client) Elect(broker int32) (Election, error) {
	for {
		epoch, version, err := c.controllerEpoch()
		if err != nil {
			return Election{}, err
		}
		next := epoch + 1
		data := EncodeController(Controller{BrokerID: broker, Timestamp: time.Now().UnixMilli(), KRaftControllerEpoch: NoKRaftControllerEpoch})
		res, err := c.conn.Multi(
			&gozk.CreateRequest{Path: c.abs(ControllerPath), Data: data, Acl: openACL, Flags: gozk.FlagEphemeral},
			&gozk.SetDataRequest{Path: c.abs(ControllerEpochPath), Data: EncodeControllerEpoch(next), Version: version},
		)
		if err == nil {
			return Election{BrokerID: broker, Epoch: next, EpochVersion: res[1].Stat.Version}, nil
		}
		switch {
		case len(res) == 2 && errors.Is(res[0].Error, gozk.ErrNodeExists):
			holder, err := c.Controller()
			if errors.Is(err, gozk.ErrNoNode) {
				continue // resigned meanwhile: try again
			}
			if err != nil {
				return Election{}, err
			}
			return Election{}, fmt.Errorf("%w: broker %d is controller", ErrControllerMoved, holder.BrokerID)
		case len(res) == 2 && errors.Is(res[1].Error, gozk.ErrBadVersion):
			continue // another election raised the epoch first: read it again
		}
		return Election{}, fmt.Errorf("zk: elect broker %d: %w", broker, err)
	}
}

// controllerEpoch reads /controller_epoch, creating it at the initial epoch
// when missing.
func (c *Client) controllerEpoch() (epoch, version int32, err error) {
	p := c.abs(ControllerEpochPath)
	for {
		data, stat, err := c.conn.Get(p)
		if errors.Is(err, gozk.ErrNoNode) {
			_, err = c.conn.Create(p, EncodeControllerEpoch(InitialControllerEpoch), 0, openACL)
			if err != nil && !errors.Is(err, gozk.ErrNodeExists) {
				return 0, 0, fmt.Errorf("zk: create %s: %w", ControllerEpochPath, err)
			}
			continue
		}
		if err != nil {
			return 0, 0, fmt.Errorf("zk: read %s: %w", ControllerEpochPath, err)
		}
		e, err := DecodeControllerEpoch(data)
		return e, stat.Version, err
	}
}

// ActiveController reads the controller's broker id (/controller) and the
// controller epoch (/controller_epoch), as a broker checks the sender of a
// control request. ok is false when no broker holds /controller. The two
// reads are not atomic: a controller elected between them shows its id
// with the epoch before its own, which only makes the check stricter.
func (c *Client) ActiveController() (id, epoch int32, ok bool, err error) {
	return c.activeController(false)
}

// SyncedActiveController is ActiveController after a sync of the server
// this session reads from with the ensemble's leader, so that a write made
// anywhere before the call is seen (ZooKeeper's reads may lag otherwise).
func (c *Client) SyncedActiveController() (id, epoch int32, ok bool, err error) {
	return c.activeController(true)
}

func (c *Client) activeController(sync bool) (id, epoch int32, ok bool, err error) {
	if sync {
		if _, err := c.conn.Sync(c.abs(ControllerEpochPath)); err != nil {
			return -1, 0, false, fmt.Errorf("zk: sync %s: %w", ControllerEpochPath, err)
		}
	}
	ctl, err := c.Controller()
	if errors.Is(err, gozk.ErrNoNode) {
		return -1, 0, false, nil
	}
	if err != nil {
		return -1, 0, false, err
	}
	data, _, err := c.conn.Get(c.abs(ControllerEpochPath))
	if err != nil {
		return -1, 0, false, fmt.Errorf("zk: read %s: %w", ControllerEpochPath, err)
	}
	epoch, err = DecodeControllerEpoch(data)
	if err != nil {
		return -1, 0, false, err
	}
	return ctl.BrokerID, epoch, true, nil
}

// Controller reads /controller.
func (c *Client) Controller() (Controller, error) {
	data, _, err := c.conn.Get(c.abs(ControllerPath))
	if err != nil {
		return Controller{}, err
	}
	return DecodeController(data)
}

// WatchController returns the current controller (ok false when there is
// none) and a channel that fires at the next change of /controller.
func (c *Client) WatchController() (ctl Controller, ok bool, changed <-chan gozk.Event, err error) {
	data, _, ch, err := c.conn.GetW(c.abs(ControllerPath))
	if errors.Is(err, gozk.ErrNoNode) {
		exists, _, ch, err := c.conn.ExistsW(c.abs(ControllerPath))
		if err != nil {
			return Controller{}, false, nil, err
		}
		if exists {
			return c.WatchController() // created meanwhile
		}
		return Controller{}, false, ch, nil
	}
	if err != nil {
		return Controller{}, false, nil, err
	}
	ctl, err = DecodeController(data)
	return ctl, err == nil, ch, err
}

// Multi runs ops (paths under the chroot, made absolute here) as the
// controller of e: all of them or none, and none once another controller
// has been elected (ErrControllerMoved).
func (c *Client) Multi(e Election, ops ...any) ([]gozk.MultiResponse, error) {
	all := make([]any, 0, len(ops)+1)
	all = append(all, &gozk.CheckVersionRequest{Path: c.abs(ControllerEpochPath), Version: e.EpochVersion})
	for _, op := range ops {
		switch op := op.(type) {
		case *gozk.CreateRequest:
			cp := *op
			cp.Path = c.abs(op.Path)
			all = append(all, &cp)
		case *gozk.SetDataRequest:
			cp := *op
			cp.Path = c.abs(op.Path)
			all = append(all, &cp)
		case *gozk.DeleteRequest:
			cp := *op
			cp.Path = c.abs(op.Path)
			all = append(all, &cp)
		case *gozk.CheckVersionRequest:
			cp := *op
			cp.Path = c.abs(op.Path)
			all = append(all, &cp)
		default:
			return nil, fmt.Errorf("zk: unknown operation %T", op)
		}
	}
	res, err := c.conn.Multi(all...)
	if err != nil && len(res) > 0 && errors.Is(res[0].Error, gozk.ErrBadVersion) {
		return nil, fmt.Errorf("%w: controller epoch %d of broker %d is stale", ErrControllerMoved, e.Epoch, e.BrokerID)
	}
	if len(res) > 0 {
		res = res[1:]
	}
	return res, err
}

// ownsController reports whether this session holds /controller.
func (c *Client) ownsController() bool {
	_, stat, err := c.conn.Get(c.abs(ControllerPath))
	return err == nil && stat.EphemeralOwner == c.conn.SessionID()
}
