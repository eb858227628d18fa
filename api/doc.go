// Package api is Airlock's HTTP face: Gin routes, API-key auth, per-key rate
// and concurrency limits, stable JSON errors, Server-Sent Events for agent
// runs, the OpenAPI document, Prometheus HTTP metrics and the embedded web UI.
//
// The package holds no business rules. It talks to the rest of Airlock only
// through the small consumer-side interfaces in deps.go (Dispatcher,
// Sessions, Runs, ReadinessCheck); cmd/airlock wires the real dispatcher,
// the queue-backed session operations and the agent run manager into them.
//
// Routes (see openapi.json for the full contract):
//
//	GET  /                                      web UI (no auth)
//	GET  /healthz, /readyz, /metrics            process, readiness, Prometheus (no auth)
//	GET  /openapi.json, /v1/info                the contract; auth and model status (no auth)
//	GET  /v1/tools                              the registry as an OpenAI tools array
//	POST /v1/tool-calls                         one tool call (optionally in a session)
//	GET  /v1/artifacts/{artifact}               artifact of a one-shot call
//	POST /v1/sessions                           open a session
//	GET  /v1/sessions/{id}                      its record
//	DELETE /v1/sessions/{id}                    close it
//	POST /v1/sessions/{id}/tool-calls           a tool call in the session
//	PUT  /v1/sessions/{id}/files/{path}         upload a file into /work
//	GET  /v1/sessions/{id}/files/{path}         download a file from /work
//	GET  /v1/sessions/{id}/artifacts/{artifact} artifact of a session call
//	GET  /v1/sessions/{id}/notebook             the saved notebook (cells, version)
//	PUT  /v1/sessions/{id}/notebook             save it (compare and swap on version)
//	POST /v1/runs                               start an agent run
//	GET  /v1/runs/{id}                          its snapshot
//	GET  /v1/runs/{id}/events                   SSE, resumable with Last-Event-ID
//	POST /v1/runs/{id}/cancel                   cancel it
//	POST /v1/runs/{id}/approvals/{token}        approve or reject a pending call
//
// A well-formed tool call that is refused or whose code fails is HTTP 200
// with the role "tool" message; only platform failures (busy, unavailable,
// internal, deadline, a lost or unknown session) become HTTP errors.
package api
