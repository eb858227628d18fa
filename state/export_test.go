package state

// BoltCommits is how many write transactions b's committer has committed,
// for tests and benchmarks of group commit.
func BoltCommits(b *Bolt) int64 { return b.commits.Load() }

// SetBoltCommitHook makes b's committer call fn in every transaction just
// before it commits (nil: none), so a test can hold a commit open.
func SetBoltCommitHook(b *Bolt, fn func()) {
	if fn == nil {
		b.commitHook.Store(nil)
		return
	}
	b.commitHook.Store(&fn)
}
