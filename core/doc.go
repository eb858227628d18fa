// Package core holds the plain data every layer of Airlock speaks: the
// sandbox Request and Result, Limits, the outcome Status values, and the one
// error-code set (Code) that platform failures carry from the sandbox to the
// HTTP answer. It imports nothing of Docker, HTTP or Redis, so a client can
// use it without linking the server.
package core
