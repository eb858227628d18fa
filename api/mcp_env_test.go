package api

import (
	"net/http"
	"testing"
)

// TestMCPEnvironmentParam: /mcp?environment=NAME becomes the
// Airlock-Environment header of the request; a header the client sent wins.
func TestMCPEnvironmentParam(t *testing.T) {
	r, _ := http.NewRequest(http.MethodPost, "http://x/mcp?environment=geo", nil)
	mcpEnvironmentParam(r)
	if got := r.Header.Get("Airlock-Environment"); got != "geo" {
		t.Fatalf("header %q, want geo", got)
	}
	r, _ = http.NewRequest(http.MethodPost, "http://x/mcp?environment=geo", nil)
	r.Header.Set("Airlock-Environment", "lint")
	mcpEnvironmentParam(r)
	if got := r.Header.Get("Airlock-Environment"); got != "lint" {
		t.Fatalf("header %q, want the client's lint", got)
	}
	r, _ = http.NewRequest(http.MethodPost, "http://x/mcp", nil)
	mcpEnvironmentParam(r)
	if got := r.Header.Get("Airlock-Environment"); got != "" {
		t.Fatalf("header %q without the parameter", got)
	}
}
