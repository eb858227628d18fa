// Package artifacts keeps the files tool calls produce (plots, files under
// /work/outputs) so that answers carry download URLs instead of bytes.
//
// Every artifact lives in the shared state store only (no copy in a
// replica's memory), in chunks under a small record, with one TTL: any
// replica sharing the store serves it, a restart keeps it, and a Go heap
// never holds more than the artifacts being written or read. Before it is
// kept, an artifact is counted against its owner's quota (bytes and count,
// Config.OwnerBytes and OwnerCount or the key's own) and against the
// store's total (Config.MaxBytes), both counted in the store for every
// replica together; past either it is not kept, and the error says which
// quota is full. Another owner's artifacts are never evicted to make room.
//
// Check re-validates what a sandbox result says about its artifacts
// (names, sizes, hashes, MIME types), trusting none of it.
package artifacts
