// Package api is Airlock's HTTP face: Gin routes (routes.go; the contract
// is openapi.json, its bodies the types of package wire), API-key auth,
// per-key rate and concurrency limits, stable JSON errors (core.Code to
// HTTP status in errors.go only), Server-Sent Events for tool calls, agent
// runs and batches, Prometheus HTTP metrics, /mcp and the embedded web UI.
//
// The package decides nothing: it decodes, authenticates, limits, streams
// and encodes. What a call may ask for and what becomes of its result is
// internal/toolcalls'; sessions are internal/sessions'; artifacts,
// idempotency keys, notebooks and batch inputs have packages of their own.
// It reaches the rest of Airlock through the consumer-side interfaces of
// deps.go (Dispatcher, sessions.Backend, Runs, ReadinessCheck), which
// cmd/airlock wires.
//
// A well-formed tool call that is refused or whose code fails is HTTP 200
// with the role "tool" message; only platform failures (busy, unavailable,
// internal, deadline, a lost or unknown session) become HTTP errors.
package api
