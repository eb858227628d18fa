package sandbox

import (
	"errors"

	"github.com/airlock-dev/airlock/core"
)

// ErrImageMissing means a sandbox image is not built (run `make images`).
// It carries core.ErrUnavailable. Every other failure of this package wraps
// one of core's codes directly.
var ErrImageMissing = core.E("sandbox", core.ErrUnavailable, errors.New("image missing"))
