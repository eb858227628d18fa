// Package api is Airlock's HTTP face: the routes (routes.go; the contract
// is openapi.json, its bodies package wire's types), API-key auth, per-key
// limits, errors (core.Code to HTTP status in errors.go only), Server-Sent
// Events, metrics, /mcp, the Jupyter gateway and the embedded web UI. It
// decides nothing: what a call may ask for and what becomes of it, the
// sessions, artifacts, idempotency keys, notebooks and batch inputs are
// the services' under internal/, reached with the interfaces of deps.go.
package api
