package toolcalls

import (
	"context"

	"github.com/airlock-dev/airlock/internal/snapshots"
)

// SetResumes keeps the record of a session lost during a call when the
// session has a snapshot to come back from (issue 30): its next call
// wakes it. Call before the service is used.
func (s *Service) SetResumes(r *snapshots.Resumes) { s.resumes = r }

// resumable reports whether owner's session id has a snapshot to wake
// from.
func (s *Service) resumable(ctx context.Context, owner, id string) bool {
	if s.resumes == nil {
		return false
	}
	_, err := s.resumes.Get(ctx, owner, id)
	return err == nil
}
