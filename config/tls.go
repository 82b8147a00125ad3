package config

// The TLS keys of SSL and SASL_SSL listeners: Kafka's ssl.* and
// listener.name.<listener>.ssl.* (security/tlsconf reads them), and two of
// sluice's own for the handshake's bounds.

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/sluice-io/sluice/security/tlsconf"
)

// TLSConfig configures the broker's TLS listeners and its TLS client side
// (to other brokers, when the inter-broker listener is SSL or SASL_SSL).
// The zero value has no keystore: a TLS listener then fails to start.
type TLSConfig struct {
	// Props holds every ssl.* and listener.name.<l>.ssl.* key as given;
	// each TLS listener reads its own (TLSSettings).
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

func (t TLSConfig) WithDefaults() TLSConfig {
	if t.HandshakeTimeout <= 0 {
		t.HandshakeTimeout = defaultTLSHandshakeTimeout
	}
	return t
}

// Server builds listener's TLS side; changed files that do not load are
// logged.
func (t TLSConfig) Server(listener string, log *slog.Logger) (*tlsconf.Server, error) {
	srv, err := tlsconf.NewServer(TLSSettings(t.Props, listener), tlsconf.Options{
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
	cl, err := tlsconf.NewClient(TLSSettings(t.Props, listener), tlsconf.Options{
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

// setProp keeps a key security/tlsconf reads (ssl.*, and its
// listener-prefixed forms) for TLSSettings.
func (t *TLSConfig) setProp(k, v string) {
	if t.Props == nil {
		t.Props = map[string]string{}
	}
	t.Props[k] = v
}

// tlsPropField is the field of the keys security/tlsconf reads: they are
// kept as given, and tlsconf parses them when the listener starts.
var tlsPropField = custom(func(c *Config, k string, v configValue) error {
	c.TLS.setProp(k, v.s)
	return nil
}, nil)
