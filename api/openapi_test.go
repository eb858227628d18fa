package api

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestOpenAPIValidatorCatchesDrift makes sure the conformance check is not
// vacuous: a wrong body, an undocumented status and a wrong type all fail.
func TestOpenAPIValidatorCatchesDrift(t *testing.T) {
	v := newOAValidator(t)
	json := http.Header{"Content-Type": {"application/json"}}
	cases := []struct {
		name, method, path string
		res                response
	}{
		{"missing field", "GET", "/healthz", response{Code: 200, Header: json, Body: []byte(`{"state":"ok"}`)}},
		{"undocumented status", "GET", "/healthz", response{Code: 418, Header: json, Body: []byte(`{}`)}},
		{"wrong error code", "GET", "/v1/tools", response{Code: 401, Header: json, Body: []byte(`{"error":{"code":"nope","message":"x"}}`)}},
		{"wrong type", "GET", "/v1/sessions/s1", response{Code: 200, Header: json, Body: []byte(`{"id":1,"created":"x","last_used":"y"}`)}},
	}
	for _, c := range cases {
		req := httptest.NewRequest(c.method, c.path, nil)
		if err := v.validate(req, nil, c.res); err == nil {
			t.Errorf("%s: validator accepted it", c.name)
		}
	}
	ok := response{Code: 200, Header: json, Body: []byte(`{"status":"ok"}`)}
	if err := v.validate(httptest.NewRequest("GET", "/healthz", nil), nil, ok); err != nil {
		t.Fatalf("valid answer refused: %v", err)
	}
	if !v.seen["GET /healthz 200"] {
		t.Fatalf("route not recorded: %v", v.seen)
	}
}
