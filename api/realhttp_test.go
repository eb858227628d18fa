package api

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/internal/jobs"
	"github.com/airlock-dev/airlock/internal/jobs/jobstest"
	"github.com/airlock-dev/airlock/keys"
	"github.com/airlock-dev/airlock/queue"
)

// jobSessions adapts the real jobs client to Sessions, as `airlock serve`
// does.
type jobSessions struct{ *jobs.Client }

func (s jobSessions) Open(ctx context.Context, owner string, limits core.Limits, background bool) (string, error) {
	return s.OpenSessionOpts(ctx, owner, limits, background)
}

func (s jobSessions) Close(ctx context.Context, owner, id string) error {
	return s.CloseSession(ctx, owner, id)
}

// realAPI is api.Server on a real listener with two keys, sessions over the
// real jobs client, in-memory queue and worker, and a file-keeping engine.
type realAPI struct {
	t   *testing.T
	url string
	srv *Server
	eng *jobstest.Engine
}

// newRealAPI starts it; mut may change config and deps.
func newRealAPI(t *testing.T, mut func(*Config, *Deps)) *realAPI {
	t.Helper()
	ks, err := keys.New("alice:"+keyAlice, "bob:"+keyBob)
	if err != nil {
		t.Fatal(err)
	}
	eng := jobstest.NewEngine()
	q, err := queue.NewMemory(queue.Config{}, queue.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := q.NewWorker(queue.WorkerConfig{Concurrency: 16}, jobs.NewRunner(eng))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(ctx) }()
	client := jobs.NewClient(q, jobs.ClientConfig{DefaultTimeout: 30 * time.Second, Margin: 30 * time.Second})
	cfg := Config{Keys: ks, RateBurst: 10000, RatePerSecond: 10000, MaxConcurrentPerKey: 16}
	reg := prometheus.NewRegistry()
	deps := Deps{Dispatcher: &fakeDispatcher{}, Sessions: jobSessions{client}, Registerer: reg, Gatherer: reg}
	if mut != nil {
		mut(&cfg, &deps)
	}
	srv, err := New(cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(func() { hs.Close(); cancel(); <-done; _ = q.Close() })
	return &realAPI{t: t, url: hs.URL, srv: srv, eng: eng}
}

// do sends one request with key and returns status and body.
func (r *realAPI) do(key, method, path string, body io.Reader, size int64) (int, []byte) {
	r.t.Helper()
	req, err := http.NewRequest(method, r.url+path, body)
	if err != nil {
		r.t.Fatal(err)
	}
	req.ContentLength = size
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Errorf("%s %s: %v", method, path, err)
		return 0, nil
	}
	defer res.Body.Close()
	out, _ := io.ReadAll(res.Body)
	return res.StatusCode, out
}

// openSession opens a session for key and returns its id.
func (r *realAPI) openSession(key string) string {
	r.t.Helper()
	code, body := r.do(key, "POST", "/v1/sessions", bytes.NewReader(nil), 0)
	var rec struct{ ID string }
	if code != http.StatusCreated || json.Unmarshal(body, &rec) != nil || rec.ID == "" {
		r.t.Fatalf("open session: %d %s", code, body)
	}
	return rec.ID
}
