// Package batch runs batches: many sandboxed tool calls (or agent runs)
// submitted at once, durable in a state.Store, fanned out through the one
// dispatcher entry in the batch lane, with per-batch and per-owner
// concurrency, a lease so any replica resumes an unfinished batch, and
// results appended to a log with exactly one line per item.
package batch
