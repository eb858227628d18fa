package artifacts

import (
	"context"

	"github.com/airlock-dev/airlock/core"
)

// Kept is one artifact of a result after Keep: its checked metadata (no
// bytes) and its id, or why it was not kept.
type Kept struct {
	core.Artifact
	ID  string // "" when not kept
	Err error  // why not, when ID is ""
}

// Keep checks a result's artifacts (at most maxCount, and maxBytes
// together: see Check) and puts each for owner's session. It returns one
// Kept per checked artifact, in order, and a warning for each one dropped
// or not kept.
func (s *Store) Keep(ctx context.Context, owner, session string, arts []core.Artifact, maxCount int, maxBytes int64) ([]Kept, []string) {
	if len(arts) == 0 {
		return nil, nil
	}
	checked, warns := Check(arts, maxCount, maxBytes)
	out := make([]Kept, 0, len(checked))
	for _, a := range checked {
		id, err := s.Put(ctx, owner, session, a)
		a.Data = nil
		out = append(out, Kept{Artifact: a, ID: id, Err: err})
		if err != nil {
			warns = append(warns, err.Error())
		}
	}
	return out, warns
}
