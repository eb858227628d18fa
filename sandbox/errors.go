package sandbox

import (
	"errors"

	"github.com/airlock-dev/airlock/core"
)

// ErrImageMissing means a sandbox image is not built (run `make images`).
// It carries core.ErrUnavailable. Every other failure of this package wraps
// one of core's codes directly.
var ErrImageMissing = core.E("sandbox", core.ErrUnavailable, errors.New("image missing"))

// ErrNoController means a sandbox image lacks the in-container controller
// (label airlock.runner): every image Airlock runs needs it, for its dead
// man's switch and in-container deadline. It carries core.ErrUnavailable.
var ErrNoController = core.E("", core.ErrUnavailable, errors.New("the image has no Airlock controller"))
