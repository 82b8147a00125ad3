package broker

// SaslAuthenticate (key 36), versions 0-2.
//
// Behavior:
//   - Carries one token of the exchange SaslHandshake chose (sasl.go);
//     the answer carries the server's.
//   - A failed exchange (wrong password, unknown user, garbage):
//     SASL_AUTHENTICATION_FAILED with a generic message, then the
//     connection is closed.
//   - Before SaslHandshake: ILLEGAL_SASL_STATE, then closed. After
//     authentication, or on a listener that is not SASL_*:
//     ILLEGAL_SASL_STATE, and the connection stays (Kafka's KafkaApis).
//
// Version notes:
//   - v1: session_lifetime_ms, connections.max.reauth.ms once the exchange
//     succeeded (0: the session does not expire).
//   - v2: flexible.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/broker/server"
	"github.com/sluice-io/sluice/wire"
)

func init() { register(saslAuthenticateKey, 0, 2, handleSaslAuthenticate) }

func handleSaslAuthenticate(c *conn, h wire.Header, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.SASLAuthenticateRequest)
	resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	s := c.sasl
	if s == nil || s.phase == authenticated {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		msg := "SaslAuthenticate request received after successful authentication"
		if s == nil {
			msg = "SaslAuthenticate on a listener without SASL"
		}
		resp.ErrorMessage = &msg
		return resp, nil
	}
	if s.phase == awaitHandshake {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		msg := "SaslAuthenticate before SaslHandshake"
		resp.ErrorMessage = &msg
		return c.saslRefuse(h, resp, msg)
	}
	out, done, failed := c.saslStep(req.SASLAuthBytes)
	if failed {
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		msg := saslFailedMessage(s.mech)
		resp.ErrorMessage = &msg
		if werr := c.Write(h.CorrelationID, resp); werr != nil {
			return nil, werr
		}
		return nil, server.ErrClose
	}
	resp.SASLAuthBytes = out
	if done {
		resp.SessionLifetimeMillis = s.l.Reauth.Milliseconds()
	}
	return resp, nil
}
