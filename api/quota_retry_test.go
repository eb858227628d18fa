package api

import (
	"testing"

	"github.com/airlock-dev/airlock/core"
)

// TestQuotaAnswersNoRetryAfter: a snapshot refused for the owner's quota
// is 429 quota without Retry-After (the quota does not free itself, so
// "retry in 1s" misled clients into retrying), while busy keeps it.
func TestQuotaAnswersNoRetryAfter(t *testing.T) {
	h := newHarness(t, nil)
	sid := h.openSession(keyAlice)
	h.do(keyAlice, "PUT", "/v1/sessions/"+sid+"/files/data.csv", []byte("a,b\n1,2\n")).must(t, 200)
	h.sess.snapQuota = 4
	r := h.do(keyAlice, "POST", "/v1/sessions/"+sid+"/snapshot", nil)
	if r.Code != 429 || r.errCode(t) != core.ErrQuota {
		t.Fatalf("over the quota: %d %s", r.Code, r.Body)
	}
	if ra := r.Header.Get("Retry-After"); ra != "" {
		t.Errorf("quota answer has Retry-After %q, want none", ra)
	}
	if e := newError(core.ErrBusy, "busy"); e.RetryAfter == 0 {
		t.Error("busy lost its Retry-After")
	}
	s := &slots{perOwner: 1, total: 10, n: map[string]int{}, what: "calls"}
	if s.acquire("o") != nil {
		t.Fatal("first slot refused")
	}
	if e := s.acquire("o"); e == nil || e.Code != core.ErrQuota || e.RetryAfter == 0 {
		t.Errorf("concurrency budget (frees itself when a call ends): %+v, want quota with Retry-After", e)
	}
}
