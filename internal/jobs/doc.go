// Package jobs carries sandbox requests across the queue: Client is the
// dispatcher's Executor (and the API's session backend) on the caller's
// side; NewRunner runs each job on a worker's sandbox engine. Both speak one
// small JSON envelope, so that a worker's refusals (session_not_found,
// busy, too large...) reach the caller as the same sentinel errors the
// sandbox uses locally.
package jobs
