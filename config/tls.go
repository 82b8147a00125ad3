package config

// The TLS keys of SSL and SASL_SSL listeners: Kafka's ssl.* and
// listener.name.<listener>.ssl.* (security/tlsconf reads them), and two of
// sluice's own for the handshake's bounds.

import (
	"fmt"
	"log/slog"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-io/sluice/security/tlsconf"
)

// TLSConfig configures the broker's TLS listeners and its TLS client side
// (to other brokers, when the inter-broker listener is SSL or SASL_SSL).
// The zero value has no keystore: a TLS listener then fails to start.
type TLSConfig struct {
	// Props holds every ssl.* and listener.name.<l>.ssl.* key as given;
	// each TLS listener reads its own (tlsconf.ParseSettings).
	Props map[string]string
	// HandshakeTimeout is ssl.handshake.timeout.ms, sluice's key: a client
	// that has not completed the TLS handshake this long after it connected
	// is closed. Default 10 s.
	HandshakeTimeout time.Duration
	// ReloadInterval is ssl.reload.check.interval.ms, sluice's key: how
	// often, at most, a handshake reads the keystore and truststore files
	// again for a rotated certificate (tlsconf's reload). Default 10 s;
	// negative: never.
	ReloadInterval time.Duration
}

const defaultTLSHandshakeTimeout = 10 * time.Second

// Apply sets k if it is a TLS key; ok false leaves it to other parsers.
func (t *TLSConfig) Apply(k, v string) (ok bool, err error) {
	ms := func() (time.Duration, error) {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("broker: config %s=%q: not a number", k, v)
		}
		return time.Duration(n) * time.Millisecond, nil
	}
	switch {
	case k == "ssl.handshake.timeout.ms":
		t.HandshakeTimeout, err = ms()
		return true, err
	case k == "ssl.reload.check.interval.ms":
		t.ReloadInterval, err = ms()
		return true, err
	case tlsconf.IsKey(k):
		if t.Props == nil {
			t.Props = map[string]string{}
		}
		t.Props[k] = v
		return true, nil
	}
	return false, nil
}

// static adds the TLS keys the configuration sets to m, as given.
func (t TLSConfig) static(m map[string]string) {
	maps.Copy(m, t.Props)
	if t.HandshakeTimeout != 0 {
		m["ssl.handshake.timeout.ms"] = strconv.FormatInt(t.HandshakeTimeout.Milliseconds(), 10)
	}
	if t.ReloadInterval != 0 {
		m["ssl.reload.check.interval.ms"] = strconv.FormatInt(t.ReloadInterval.Milliseconds(), 10)
	}
}

func (t TLSConfig) WithDefaults() TLSConfig {
	if t.HandshakeTimeout <= 0 {
		t.HandshakeTimeout = defaultTLSHandshakeTimeout
	}
	return t
}

// Server builds listener's TLS side; changed files that do not load are
// logged.
func (t TLSConfig) Server(listener string, log *slog.Logger) (*tlsconf.Server, error) {
	srv, err := tlsconf.NewServer(tlsconf.ParseSettings(t.Props, listener), tlsconf.Options{
		ReloadInterval: t.ReloadInterval,
		OnReloadError: func(err error) {
			log.Warn("TLS certificate reload failed; the previous certificate stays in use", "listener", listener, "err", err)
		},
	})
	if err != nil {
		return nil, fmt.Errorf("broker: listener %s: %w", listener, err)
	}
	return srv, nil
}

// Client is the TLS Client side of the broker's own connections to
// listener on other brokers: the listener's keystore as the Client
// certificate, its truststore as the roots, reread as the listener's are.
func (t TLSConfig) Client(listener string, log *slog.Logger) (*tlsconf.Client, error) {
	cl, err := tlsconf.NewClient(tlsconf.ParseSettings(t.Props, listener), tlsconf.Options{
		ReloadInterval: t.ReloadInterval,
		OnReloadError: func(err error) {
			log.Warn("inter-broker TLS certificate reload failed; the previous certificate stays in use", "listener", listener, "err", err)
		},
	})
	if err != nil {
		return nil, fmt.Errorf("broker: inter-broker listener %s: %w", listener, err)
	}
	return cl, nil
}
