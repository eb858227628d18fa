// Package batch runs batches: many sandboxed tool calls (or agent runs)
// submitted at once, durable in a state.Store, fanned out through the one
// dispatcher entry in the batch lane, with results appended to a log with
// exactly one line per item.
//
// Durability: a lease per batch (in the batch record) says which replica
// runs it; any replica resumes a batch whose lease expired. An item's
// result is stored with a compare-and-swap on its record, so two runners
// never both record it; the result line and the item event follow, and a
// runner that died between the two is made good by the next one
// (backfill). Calls are keyed batch/custom_id/attempt, so a call re-sent
// after a crash attaches to the queue job that already ran. Platform
// failures that may pass (busy, unavailable) are retried with backoff,
// never recorded as the item's outcome until maxTransient tries.
//
// Fairness: every running item holds one of its owner's slots, records
// in the store created with a TTL and renewed while the item runs, so the
// per-owner cap holds across all replicas and a replica killed with -9
// frees its slots when they expire (Config.SlotTTL). A runner goroutine
// keeps its slot across the items it runs back to back and gives it back
// after 2 s, before backing off from a transient failure, or when no item
// is waiting for it (slot_lease.go): a take and a release are two store
// writes, which per item were two of five.
//
// Inputs: a folder item (an input folder path) is packed into a tar on
// the host and sent as the call's Archive, unpacked inside the owner's
// warm container; a folder over core.MaxArchiveBytes or
// Config.PackMaxEntries, or holding a link out of it or a special file,
// goes to the worker as a folder instead (input_mode "mount"), which
// copies it into the sandbox in chunks (sandbox.Config.InputMaxBytes, not
// the one-message cap, bounds it), and its line says why (input_note).
// Config.MountInputs sends every folder that way. Uploaded archives
// are kept in the store under the batch (chunks, with the batch's
// completion window plus Config.ArchiveRetention as TTL), never unpacked
// on the host.
//
// Progress: the batch's events log holds progress snapshots (the batch
// record) and a wire.BatchItemEvent per finished item, with dense Seq numbers.
package batch
