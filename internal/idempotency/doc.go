// Package idempotency makes a tool call run at most once per key, for
// every API replica sharing one state store.
//
// A request holding a key reserves it (a record with a lease, renewed
// while the call runs), runs the call and stores the answer under it.
// Another request with the key meanwhile waits for that answer (Next says
// whom it waits for) and, when the reservation lapses because its replica
// died, takes the call over with the same token, so the queue attaches it
// to the same job.
//
// Two kinds of key, two rules (api/README.md states them for clients):
//
//   - an explicit key (the Idempotency-Key header) keeps the answer for
//     as long as the caller says (24 hours, or less when the answer's
//     artifacts expire sooner): every retry in that time gets it again;
//   - an implicit key (the call's id and body) protects only a duplicate
//     sent while the first is in flight: once the first has answered, the
//     same id runs again. Its answer lingers only for the requests that
//     were already waiting for it (they name the token they saw).
//
// Store operations on the request path are bounded (OpTimeout): a stalled
// store answers unavailable, and the call does not run.
package idempotency
