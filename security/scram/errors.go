package scram

import "errors"

var (
	// ErrMalformed marks a message that does not follow the grammar.
	ErrMalformed = errors.New("scram: malformed message")
	// ErrAuthFailed is a failed authentication: unknown user, wrong
	// password, nonce or channel-binding mismatch. The server's error says
	// no more than this, so a client learns nothing of which part was wrong.
	ErrAuthFailed = errors.New("scram: authentication failed")
	// ErrUnsupported marks a request the server does not serve: channel
	// binding, delegation tokens, an authorization id other than the user.
	ErrUnsupported = errors.New("scram: unsupported")
	// ErrState is a message sent after the exchange ended or failed.
	ErrState = errors.New("scram: exchange already ended")
	// ErrCredential marks a bad credential string or out-of-range
	// iterations.
	ErrCredential = errors.New("scram: bad credential")
	// ErrServerSignature is a server-final message whose signature does
	// not prove the server knows the credential (client side).
	ErrServerSignature = errors.New("scram: server signature mismatch")
)
