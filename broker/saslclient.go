package broker

// The broker's own SASL client, for its connections to other brokers'
// inter-broker listener when that listener is SASL_*: interbroker.Client runs
// it on every new connection (interbroker.Options.Handshake) before the
// first request. It sends SaslHandshake v1 with
// sasl.mechanism.inter.broker.protocol, then SaslAuthenticate v1 requests
// carrying the mechanism's tokens, as the broker's own user (the username
// and password of the inter-broker listener's JAAS entry, config/sasl.go).
// The broker's session lifetime is not tracked: the senders' connections
// are re-made on any failure, and a broker that closes an expired one
// makes the next request dial and authenticate again.

import (
	"context"
	"fmt"
	"net"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/config"
	"github.com/sluice-io/sluice/security/plain"
	"github.com/sluice-io/sluice/security/scram"
	"github.com/sluice-io/sluice/wire"
)

// saslClient authenticates a connection as one user with one mechanism.
type saslClient struct {
	mechanism, user, password string
	clientID                  string
}

// handshake implements interbroker.Options.Handshake.
func (sc *saslClient) handshake(_ context.Context, conn net.Conn) error {
	var corr int32
	roundTrip := func(req kmsg.Request) (kmsg.Response, error) {
		corr++
		if _, err := conn.Write(wire.AppendRequest(nil, corr, sc.clientID, req)); err != nil {
			return nil, err
		}
		frame, err := wire.ReadFrame(conn, nil, 1<<20)
		if err != nil {
			return nil, err
		}
		resp := req.ResponseKind()
		resp.SetVersion(req.GetVersion())
		return resp, wire.ParseResponse(frame, corr, resp)
	}
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, sc.mechanism
	r, err := roundTrip(hs)
	if err != nil {
		return fmt.Errorf("SaslHandshake: %w", err)
	}
	if hr := r.(*kmsg.SASLHandshakeResponse); hr.ErrorCode != 0 {
		return fmt.Errorf("SaslHandshake %s: %w (enabled: %v)", sc.mechanism, kerr.ErrorForCode(hr.ErrorCode), hr.SupportedMechanisms)
	}
	authenticate := func(token []byte) ([]byte, error) {
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.Version, req.SASLAuthBytes = 1, token
		r, err := roundTrip(req)
		if err != nil {
			return nil, fmt.Errorf("SaslAuthenticate: %w", err)
		}
		ar := r.(*kmsg.SASLAuthenticateResponse)
		if ar.ErrorCode != 0 {
			msg := ""
			if ar.ErrorMessage != nil {
				msg = ": " + *ar.ErrorMessage
			}
			return nil, fmt.Errorf("SaslAuthenticate %s as %s: %w%s", sc.mechanism, sc.user, kerr.ErrorForCode(ar.ErrorCode), msg)
		}
		return ar.SASLAuthBytes, nil
	}
	if sc.mechanism == config.MechPlain {
		_, err := authenticate(plain.Message(sc.user, sc.password))
		return err
	}
	m, ok := scram.ByName(sc.mechanism)
	if !ok {
		return fmt.Errorf("unknown SASL mechanism %s", sc.mechanism)
	}
	c := scram.NewClient(m, sc.user, sc.password)
	serverFirst, err := authenticate(c.First())
	if err != nil {
		return err
	}
	final, err := c.Final(serverFirst)
	if err != nil {
		return err
	}
	serverFinal, err := authenticate(final)
	if err != nil {
		return err
	}
	return c.Verify(serverFinal)
}
