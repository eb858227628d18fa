package client

import (
	"testing"

	"github.com/airlock-dev/airlock/core"
)

// TestTemporaryLeavesQuotaOut: a quota refusal is not temporary (a quota
// does not free itself, and the server sends no Retry-After for it), so a
// caller that retries Temporary errors does not loop on it; the codes a
// wait can cure stay temporary.
func TestTemporaryLeavesQuotaOut(t *testing.T) {
	for code, want := range map[core.Code]bool{
		core.ErrQuota: false, core.ErrNotFound: false, core.ErrInvalid: false, core.ErrTooLarge: false,
		core.ErrRateLimited: true, core.ErrBusy: true, core.ErrUnavailable: true, core.ErrNotReady: true, core.ErrDeadline: true,
	} {
		e := &APIError{errorObject: errorObject{Code: code}}
		if got := e.Temporary(); got != want {
			t.Errorf("%s: Temporary() = %v, want %v", code, got, want)
		}
	}
}
