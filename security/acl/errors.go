package acl

import "errors"

// ErrInvalid marks a binding, filter or stored document that breaks the
// model's rules; the wrapping error says which element.
var ErrInvalid = errors.New("acl: invalid")
