package zk

// Broker registration: the ephemeral /brokers/ids/<id> (doc.go), whose
// creation zxid is the broker epoch (KIP-380). A broker that restarts
// quickly after a crash finds its previous registration still there, owned
// by a session ZooKeeper has not expired yet; where Kafka's broker fails to
// start ("node already exists and owner does not match current session"),
// sluice waits for that session to expire, at most the session timeout.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"

	gozk "github.com/go-zookeeper/zk"
)

// Register creates this session's registration of b and returns the
// broker epoch. A registration of the same id by another session is waited
// out (until ctx ends); one by this session already is returned as it is.
func (c *Client) Register(ctx context.Context, b BrokerRegistration) (epoch int64, err error) {
	data, err := EncodeBroker(b)
	if err != nil {
		return 0, err
	}
	p := c.abs(BrokerPath(b.ID))
	warned := false
	for {
		_, err := c.conn.Create(p, data, gozk.FlagEphemeral, openACL)
		if err == nil || errors.Is(err, gozk.ErrNodeExists) {
			ok, stat, ch, werr := c.conn.ExistsW(p)
			switch {
			case werr != nil:
				return 0, fmt.Errorf("zk: register broker %d: %w", b.ID, werr)
			case !ok:
				continue // gone between the two calls
			case stat.EphemeralOwner == c.conn.SessionID():
				return stat.Czxid, nil
			}
			if !warned {
				c.log.Warn("broker id registered by another session, waiting for it to expire",
					"broker", b.ID, "owner", fmt.Sprintf("%#x", stat.EphemeralOwner))
				warned = true
			}
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return 0, fmt.Errorf("zk: register broker %d: %s is held by session %#x: %w", b.ID, BrokerPath(b.ID), stat.EphemeralOwner, ctx.Err())
			}
		}
		return 0, fmt.Errorf("zk: register broker %d: %w", b.ID, err)
	}
}

// Brokers lists the registered brokers and their epochs, by id.
func (c *Client) Brokers() (map[int32]RegisteredBroker, error) {
	ids, _, err := c.conn.Children(c.abs(BrokerIDsPath))
	if err != nil {
		return nil, fmt.Errorf("zk: list %s: %w", BrokerIDsPath, err)
	}
	out := make(map[int32]RegisteredBroker, len(ids))
	for _, name := range ids {
		id, err := ParseBrokerID(name)
		if err != nil {
			return nil, err
		}
		data, stat, err := c.conn.Get(c.abs(BrokerPath(id)))
		if errors.Is(err, gozk.ErrNoNode) {
			continue // deregistered meanwhile
		} else if err != nil {
			return nil, fmt.Errorf("zk: read %s: %w", BrokerPath(id), err)
		}
		b, err := DecodeBroker(id, data)
		if err != nil {
			return nil, err
		}
		out[id] = RegisteredBroker{BrokerRegistration: b, Epoch: stat.Czxid}
	}
	return out, nil
}

// ErrBrokerNotRegistered is a broker without a registration, or without an
// endpoint of the listener asked for (BrokerAddress).
var ErrBrokerNotRegistered = errors.New("zk: broker not reachable from its registration")

// BrokerAddress is the host:port of broker's endpoint on listener ("": its
// first endpoint), read from its registration: the address book of the
// brokers' inter-broker clients (wire/interbroker), read again at every
// connection.
func (c *Client) BrokerAddress(broker int32, listener string) (string, error) {
	data, _, err := c.Get(BrokerPath(broker))
	if errors.Is(err, gozk.ErrNoNode) {
		return "", fmt.Errorf("%w: no %s", ErrBrokerNotRegistered, BrokerPath(broker))
	} else if err != nil {
		return "", fmt.Errorf("zk: read %s: %w", BrokerPath(broker), err)
	}
	b, err := DecodeBroker(broker, data)
	if err != nil {
		return "", err
	}
	for _, e := range b.Endpoints {
		if listener == "" || e.Listener == listener {
			return net.JoinHostPort(e.Host, strconv.Itoa(int(e.Port))), nil
		}
	}
	return "", fmt.Errorf("%w: %s has no endpoint of listener %q", ErrBrokerNotRegistered, BrokerPath(broker), listener)
}

// RegisteredBroker is a registration with its broker epoch.
type RegisteredBroker struct {
	BrokerRegistration
	// Epoch is the registration znode's creation zxid.
	Epoch int64
}
