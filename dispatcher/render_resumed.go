package dispatcher

import (
	"fmt"
	"strings"

	"github.com/airlock-dev/airlock/core"
)

// resumedNote tells the model that the call's session was restored from
// its last snapshot before the call (issue 30), and which names did not
// come back.
func resumedNote(res core.Result) string {
	note := fmt.Sprintf("note: the session had lost its container and was restored from its last snapshot before this call (%d ms)", res.WakeMS)
	if len(res.ResumeSkipped) == 0 {
		return note
	}
	names := make([]string, 0, len(res.ResumeSkipped))
	for _, k := range res.ResumeSkipped {
		names = append(names, fmt.Sprintf("%s (%s)", k.Name, k.Type))
	}
	return note + "; these names could not be saved and are gone: " + strings.Join(names, ", ")
}
