package environments

import (
	"fmt"

	"github.com/airlock-dev/airlock/core"
)

// BuildError is a failed build: the step that failed and what failed in
// it, naming the package, requirement or check. Its Code is
// core.ErrInvalid when the spec asked for something that cannot be built
// (a missing package, a failing check) and core.ErrUnavailable when the
// mirror, the index or Docker could not be reached.
type BuildError struct {
	Name string // the environment
	Step string
	Msg  string
	Code core.Code
}

// Error says which step failed and why.
func (e *BuildError) Error() string {
	return fmt.Sprintf("environment %s: step %s failed: %s", e.Name, e.Step, e.Msg)
}

// Unwrap exposes the Code to errors.Is and core.CodeOf.
func (e *BuildError) Unwrap() error { return e.Code }
