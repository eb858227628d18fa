package mcpserver

import (
	"log/slog"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/dispatcher"
)

// Config tunes a Server. Zero values take the defaults of DefaultConfig.
type Config struct {
	// Name and Version identify the server to MCP clients.
	Name    string
	Version string
	// Mount is a host folder, already authorised by the caller, mounted
	// read-only at /workspace in every session (stdio only).
	Mount string
	// Limits lower the sandbox defaults for sessions and calls.
	Limits core.Limits
	// ProgressInterval is the period of progress notifications while a
	// call runs (only when the client sent a progress token).
	ProgressInterval time.Duration
	// IdleTimeout closes streamable HTTP sessions that sent no request
	// for this long (and with them their Airlock session).
	IdleTimeout time.Duration
	// MaxBodyBytes caps one HTTP request body of the /mcp endpoint.
	MaxBodyBytes int64
	// MaxResources caps the files listed by resources/list.
	MaxResources int
	// CloseTimeout bounds closing an Airlock session when its MCP session ends.
	CloseTimeout time.Duration
	// Environments lists the custom environments an owner's calls may
	// name in their environment argument (dispatcher.Call.Environments);
	// nil allows every one (the operator's own stdio server).
	Environments func(owner string) []string
	// Environment is the session-wide environment of every MCP session
	// of this server (`airlock mcp --environment`): the MCP session's
	// sandbox session opens in it (EnvSessionOpener; a backend that
	// cannot runs each call one-shot in it), so every call runs in it
	// unless its environment argument names another. A remote session may
	// set its own with EnvironmentHeader or the /mcp URL's
	// EnvironmentParam. "" is the built-in python environment.
	Environment string
}

// DefaultConfig returns the defaults: progress every second, HTTP sessions
// closed after 30 idle minutes, 4 MiB bodies, 500 listed resources.
func DefaultConfig() Config {
	return Config{
		Name:             "airlock",
		Version:          "dev",
		ProgressInterval: time.Second,
		IdleTimeout:      30 * time.Minute,
		MaxBodyBytes:     4 << 20,
		MaxResources:     500,
		CloseTimeout:     30 * time.Second,
	}
}

// withDefaults fills zero fields from DefaultConfig.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.Name == "" {
		c.Name = d.Name
	}
	if c.Version == "" {
		c.Version = d.Version
	}
	if c.ProgressInterval <= 0 {
		c.ProgressInterval = d.ProgressInterval
	}
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = d.IdleTimeout
	}
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = d.MaxBodyBytes
	}
	if c.MaxResources <= 0 {
		c.MaxResources = d.MaxResources
	}
	if c.CloseTimeout <= 0 {
		c.CloseTimeout = d.CloseTimeout
	}
	return c
}

// Deps are a Server's collaborators: a Backend, or a Dispatcher and an
// Executor from which the local Backend is built.
type Deps struct {
	// Backend serves the tools, calls, sessions and files. When nil, the
	// local Backend over Dispatcher and Executor is used.
	Backend Backend
	// Dispatcher runs every tool call (local only).
	Dispatcher Dispatcher
	// Executor opens and closes sessions (core.OpSessionOpen and
	// OpSessionClose) and reads session files (OpFileGet), as the REST
	// API's session routes do; it never runs tool calls (local only).
	Executor dispatcher.Executor
	// Logger receives operational logs; nil discards them.
	Logger *slog.Logger
	// Environments resolves a session-wide environment for the local
	// Backend's sessions (the dispatcher's resolver); nil: built-in only.
	Environments dispatcher.EnvironmentResolver
	// Snapshots gives the local Backend's sessions snapshot_session and
	// fork_session (nil: not offered).
	Snapshots *SnapshotOptions
	// Egress is the network policy of owner's sessions for the local
	// Backend (LocalOptions.Egress): the key's egress= on serve's /mcp, as
	// its REST sessions get it. nil: none.
	Egress func(owner string, envEgress []string) string
}
