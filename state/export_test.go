package state

// BoltCommits is how many write transactions b's committer has committed,
// for tests and benchmarks of group commit.
func BoltCommits(b *Bolt) int64 { return b.commits.Load() }
