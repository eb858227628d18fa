package state_test

import (
	"testing"

	"github.com/airlock-dev/airlock/state"
	"github.com/airlock-dev/airlock/state/statetest"
)

func TestMemoryContract(t *testing.T) {
	t.Parallel()
	statetest.Run(t, func(t *testing.T) state.Store { return state.NewMemory(nil) })
}
