package broker

// SaslHandshake (key 17), versions 0-1.
//
// Behavior:
//   - On a listener that is not SASL_*, or after authentication with no
//     session lifetime (connections.max.reauth.ms 0), ILLEGAL_SASL_STATE,
//     as Kafka's KafkaApis answers; the connection stays.
//   - A mechanism the listener does not enable: UNSUPPORTED_SASL_MECHANISM
//     with the enabled list, then the connection is closed.
//   - A second handshake before the exchange ends: ILLEGAL_SASL_STATE,
//     then closed.
//   - After authentication with a session lifetime, v1 begins a
//     re-authentication (KIP-368), which must keep the mechanism.
//   - The answer always lists the listener's enabled mechanisms.
//
// Version notes:
//   - v0: the exchange's tokens follow as raw frames (sasl.go).
//   - v1: they follow in SaslAuthenticate requests.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/wire"
)

func init() { register(saslHandshakeKey, 0, 1, handleSaslHandshake) }

func handleSaslHandshake(c *conn, h wire.Header, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.SASLHandshakeRequest)
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	s := c.sasl
	if s == nil {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return resp, nil
	}
	resp.SupportedMechanisms = s.l.Mechanisms
	reauth := false
	switch s.phase {
	case awaitAuthenticate:
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return c.saslRefuse(h, resp, "a second SaslHandshake during the exchange")
	case authenticated:
		if s.l.Reauth <= 0 || req.Version < 1 {
			resp.ErrorCode = kerr.IllegalSaslState.Code
			return resp, nil
		}
		if req.Mechanism != s.mech {
			resp.ErrorCode = kerr.IllegalSaslState.Code
			return c.saslRefuse(h, resp, "re-authentication with mechanism "+req.Mechanism+", not "+s.mech)
		}
		reauth = true
	}
	if !contains(s.l.Mechanisms, req.Mechanism) {
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		return c.saslRefuse(h, resp, "unsupported mechanism "+req.Mechanism)
	}
	s.mech, s.reauth = req.Mechanism, reauth
	s.server = c.newExchange(req.Mechanism)
	s.phase = awaitAuthenticate
	s.raw = req.Version == 0
	return resp, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
