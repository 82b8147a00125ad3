package txn

import "errors"

// ErrCorrupt marks a __transaction_state record that does not parse.
var ErrCorrupt = errors.New("txn: corrupt transaction state record")
