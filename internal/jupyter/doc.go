// Package jupyter is Airlock's Jupyter kernel gateway: the kernels REST API
// and the messaging protocol (v5.3) over the websocket
// /api/kernels/{id}/channels, as Kernel Gateway and Enterprise Gateway
// serve them, so that `jupyter server --gateway-url`, the classic Notebook
// and nbclient run their kernels as Airlock sessions.
//
// A kernel is an Airlock session: the gateway opens, runs, interrupts,
// restarts and closes sessions only through its Backend (the API's own
// session routes and the one dispatcher), so a kernel is limited, audited
// and visible like any session, and another key's kernel is unknown (404).
// The gateway itself translates and streams; it decides nothing. What it
// keeps in memory (the kernels it serves, their websocket connections and
// queued shell requests) lives only as long as the connections.
//
// Files: gateway.go (the Gateway and its kernels), backend.go (what it
// needs from Airlock, its Config), message.go (wire form of messages,
// binary frames), ids.go (kernel ids), translate.go (Airlock results to
// message contents), kernel.go (one kernel: the shell queue,
// stop_on_error, introspection), execute.go (one cell: live events, what
// the stream missed), conn.go (one websocket connection and its channels),
// rest.go (the REST routes), cull.go (idle kernels end).
package jupyter
