package api

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/state"
)

// downStore is a state store whose writes fail as an unreachable backend's.
type downStore struct{ state.Store }

func (downStore) Put(context.Context, state.Key, []byte, state.PutOptions) (int64, error) {
	return 0, state.ErrUnavailable
}

// TestIdempotentToolCall: a retry with the same Idempotency-Key answers the
// stored body without a second dispatch; another body under the key is
// 409 naming it; keys are per owner; the call id alone does not replay a
// call that has answered (see TestImplicitReplayOnlyInFlight).
func TestIdempotentToolCall(t *testing.T) {
	h := newHarness(t, nil)
	first := h.do(keyAlice, "POST", "/v1/tool-calls", py("print(1)"), "Idempotency-Key", "k1").must(t, http.StatusOK)
	again := h.do(keyAlice, "POST", "/v1/tool-calls", py("print(1)"), "Idempotency-Key", "k1").must(t, http.StatusOK)
	if string(first.Body) != string(again.Body) || len(h.disp.calls) != 1 {
		t.Fatalf("retry: %d dispatches, bodies\n%s\n%s", len(h.disp.calls), first.Body, again.Body)
	}
	if h.disp.lastCall().IdempotencyKey != "k1" {
		t.Errorf("dispatcher.Call.IdempotencyKey %q", h.disp.lastCall().IdempotencyKey)
	}
	r := h.do(keyAlice, "POST", "/v1/tool-calls", py("print(2)"), "Idempotency-Key", "k1")
	if r.Code != http.StatusConflict || !strings.Contains(string(r.Body), "k1") {
		t.Errorf("other body, same key: %d %s", r.Code, r.Body)
	}
	h.do(keyBob, "POST", "/v1/tool-calls", py("print(1)"), "Idempotency-Key", "k1").must(t, http.StatusOK)
	if len(h.disp.calls) != 2 {
		t.Errorf("another owner's key: %d dispatches, want 2", len(h.disp.calls))
	}
	h.do(keyAlice, "POST", "/v1/tool-calls", py("print(3)")).must(t, http.StatusOK)
	h.do(keyAlice, "POST", "/v1/tool-calls", py("print(3)")).must(t, http.StatusOK)
	h.do(keyAlice, "POST", "/v1/tool-calls", py("print(4)")).must(t, http.StatusOK)
	if len(h.disp.calls) != 5 {
		t.Errorf("call id keys: %d dispatches, want 5", len(h.disp.calls))
	}
}

// TestIdempotencyStoreDown: with the state store unavailable the call is
// refused with 503 unavailable and not run.
func TestIdempotencyStoreDown(t *testing.T) {
	h := newHarness(t, func(_ *Config, d *Deps) { d.State = downStore{state.NewMemory(nil)} })
	r := h.do(keyAlice, "POST", "/v1/tool-calls", py("print(1)"), "Idempotency-Key", "k1")
	if r.Code != http.StatusServiceUnavailable || r.errCode(t) != "unavailable" || len(h.disp.calls) != 0 {
		t.Errorf("store down: %d %s, %d dispatches", r.Code, r.Body, len(h.disp.calls))
	}
}
