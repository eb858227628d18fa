package egress

import (
	"fmt"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/testscale"
)

// TestProxyRefusesAndReportsAfterTheTimeCap: a request the call makes after
// its network time is up is answered 403 time_cap and comes back in the
// call's attempts, like every other refusal; the proxy used to close the
// connection unread, so the sandbox saw "remote end closed" and the call's
// result had no trace of it. Nothing reaches the upstream.
func TestProxyRefusesAndReportsAfterTheTimeCap(t *testing.T) {
	r := newRig(t, nil)
	h := r.tp.register(t, r.policy(), Caps{Time: testscale.D(300 * time.Millisecond)})
	url := fmt.Sprintf("http://allowed.test:%d/", r.plain.port())
	if code, _, _ := r.get(t, url); code != 200 {
		t.Fatalf("within the cap: %d", code)
	}
	time.Sleep(testscale.D(600 * time.Millisecond))
	code, _, _ := r.get(t, url)
	rec := h.Close()
	if code != 403 || len(rec.Attempts) != 2 || rec.Attempts[1].Reason != ReasonTimeCap || rec.Attempts[1].Allowed || r.plain.conns() != 1 {
		t.Fatalf("after the time cap: %d, record %+v, server conns %d", code, rec, r.plain.conns())
	}
}
