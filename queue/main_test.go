package queue

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain runs a helper worker process when re-executed by a fault test,
// and otherwise the tests, failing on leaked goroutines.
func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		os.Exit(helperMain())
	}
	goleak.VerifyTestMain(m)
}
