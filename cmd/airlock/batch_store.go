package main

import (
	"time"

	"github.com/airlock-dev/airlock/state"
)

// batchStore is the state store batches live in. Until the durable
// backends are wired (issue 13: Bolt by default, Redis with --redis) it is
// the in-memory store, so batches do not survive a restart of serve.
func batchStore() state.Store { return state.NewMemory(time.Now) }
