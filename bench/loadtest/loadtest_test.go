package loadtest

import (
	"context"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/api"
	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/dispatcher"
)

// echoDispatcher answers every call with ok and "1\n".
type echoDispatcher struct{}

func (echoDispatcher) Run(_ context.Context, c dispatcher.Call) dispatcher.Result {
	return dispatcher.Result{CallID: c.ID, Name: c.Name, Status: dispatcher.StatusOK, Content: "1\n",
		Sandbox: &core.Result{Status: core.StatusOK, Stdout: "1\n"}}
}

func (echoDispatcher) ToolsJSON() []map[string]any { return nil }

func TestRunAgainstLocalServer(t *testing.T) {
	srv, err := api.New(api.Config{InsecureLocal: true, RatePerSecond: -1, MaxConcurrentPerKey: 4}, api.Deps{Dispatcher: echoDispatcher{}})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	rs, err := Run(context.Background(), Options{BaseURL: ts.URL, Concurrency: []int{1, 8}, Requests: 40})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 {
		t.Fatalf("%d results", len(rs))
	}
	for _, r := range rs {
		t.Log(r)
		if r.Requests != 40 || r.Status[200]+r.Status[429] != 40 || r.Unexpected() != 0 {
			t.Errorf("result %+v", r)
		}
		if r.P50 > r.P99 || r.P99 > r.Max || r.RPS <= 0 {
			t.Errorf("inconsistent stats %+v", r)
		}
	}
	if rs[0].Status[429] != 0 {
		t.Errorf("one client should never be refused: %v", rs[0].Status)
	}
}

func TestRefusesNonLoopback(t *testing.T) {
	for _, u := range []string{"http://example.com", "http://10.0.0.1:8080", "ftp://127.0.0.1", "127.0.0.1:8080", "http://0.0.0.0:80"} {
		if _, err := Run(context.Background(), Options{BaseURL: u}); err == nil {
			t.Errorf("%s accepted", u)
		}
	}
	for _, u := range []string{"http://127.0.0.1:1", "http://localhost:1/", "http://[::1]:1"} {
		if _, err := endpoint(u); err != nil {
			t.Errorf("%s refused: %v", u, err)
		}
	}
}

func TestPeakRSS(t *testing.T) {
	n, err := PeakRSS(os.Getpid())
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	if n <= 0 {
		t.Fatalf("peak rss %d", n)
	}
}

// TestBench is the `make bench` entry: it measures a running server named
// by AIRLOCK_BENCH_URL (with AIRLOCK_BENCH_KEY, AIRLOCK_BENCH_REQUESTS and
// AIRLOCK_BENCH_PID for peak RSS) and logs the table. It skips without it.
func TestBench(t *testing.T) {
	base := os.Getenv("AIRLOCK_BENCH_URL")
	if base == "" {
		t.Skip("set AIRLOCK_BENCH_URL (e.g. http://127.0.0.1:8080) to measure a running server")
	}
	n, _ := strconv.Atoi(os.Getenv("AIRLOCK_BENCH_REQUESTS"))
	rs, err := Run(context.Background(), Options{BaseURL: base, APIKey: os.Getenv("AIRLOCK_BENCH_KEY"), Requests: n})
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	for _, r := range rs {
		sb.WriteString(r.String() + "\n")
		if r.Unexpected() > 0 {
			t.Errorf("c=%d: %d answers other than 200/429: %v", r.Concurrency, r.Unexpected(), r.Status)
		}
	}
	if pid, _ := strconv.Atoi(os.Getenv("AIRLOCK_BENCH_PID")); pid > 0 {
		if rss, err := PeakRSS(pid); err == nil {
			sb.WriteString("server peak RSS: " + strconv.FormatInt(rss>>20, 10) + " MiB\n")
		}
	}
	t.Log("POST /v1/tool-calls\n" + sb.String())
}
