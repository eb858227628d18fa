// Package approvals stores calls held for a human decision: one Store
// interface with an in-process implementation (Memory) and a Redis one
// (Redis), shared by the dispatcher (tokens of held tool calls) and the
// agent (the approvals a paused run waits on).
//
// A record is an opaque value under a token, optionally grouped by a run.
// Take removes and returns a record atomically, so of any number of
// concurrent Takes of one token exactly one succeeds: that is what makes an
// approved call run exactly once. List and DeleteRun see the records of one
// run; records with an empty Run are not indexed by run.
package approvals
