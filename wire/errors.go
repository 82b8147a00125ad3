package wire

import "errors"

// Errors returned by the framing and header code. Each is a framing
// violation: the connection it came from cannot be trusted any more and is
// closed.
var (
	// ErrFrameTooLarge: a size prefix above the configured limit
	// (socket.request.max.bytes), checked before anything is allocated.
	ErrFrameTooLarge = errors.New("wire: request frame larger than the limit")
	// ErrBadFrame: a negative size, a frame too short for a header, or a
	// frame cut short by the connection closing.
	ErrBadFrame = errors.New("wire: malformed request frame")
	// ErrUnknownAPIKey: a request for an API key kmsg does not know.
	ErrUnknownAPIKey = errors.New("wire: unknown API key")
	// ErrBadRequest: a body that does not decode at its version.
	ErrBadRequest = errors.New("wire: malformed request")
)

// Errors of the client side (client.go), reading another broker's
// responses. Either leaves the connection out of step with the peer: it is
// closed.
var (
	// ErrCorrelationMismatch: a response whose correlation id is not the
	// one of the request it answers.
	ErrCorrelationMismatch = errors.New("wire: response correlation id does not match the request")
	// ErrBadResponse: a response too short for its header, or whose body
	// does not decode at the request's version.
	ErrBadResponse = errors.New("wire: malformed response")
)
