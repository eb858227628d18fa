package state

import "fmt"

// MaxValueSize bounds one record value and one log entry in every backend
// (Memory, Bolt, Redis); a larger one is ErrTooLarge and nothing is
// written. Bigger blobs are split by their owners or kept elsewhere.
const MaxValueSize = 8 << 20

// checkSize returns ErrTooLarge (with context) for a value over
// MaxValueSize.
func checkSize(op string, k Key, n int) error {
	if n > MaxValueSize {
		return fmt.Errorf("%s %s/%s: %d bytes over the %d-byte bound: %w", op, k.Kind, k.ID, n, MaxValueSize, ErrTooLarge)
	}
	return nil
}
