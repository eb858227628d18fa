package jupyter

import "testing"

// TestHibernatedKernelIsIdle: GET /api/kernels answered a hibernated
// session's execution_state as "hibernated", a state Jupyter front ends do
// not know (theirs: starting, idle, busy, restarting, dead...); the kernel
// answers its next request, so it is idle to them.
func TestHibernatedKernelIsIdle(t *testing.T) {
	for in, want := range map[string]string{"": "idle", "hibernated": "idle", "idle": "idle", "busy": "busy", "starting": "starting"} {
		if got := executionState(in); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
}
