package api

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/agent"
	"github.com/airlock-dev/airlock/dispatcher"
	"github.com/airlock-dev/airlock/wire"
)

// Shutdown lets an in-flight tool call finish, ends open event streams
// and makes Serve return nil.
func TestServeGracefulShutdown(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	h := newHarness(t, nil)
	h.disp.run = func(ctx context.Context, c dispatcher.Call) dispatcher.Result {
		close(started)
		<-release
		return scripted(ctx, c)
	}
	h.runs.script = func(agent.RunRequest) [][]wire.RunEvent { return approvalScript(agent.RunRequest{}) } // stays open
	rid := h.startRun(keyAlice, map[string]any{"goal": "x"})

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- h.srv.Serve(ctx, ln) }()

	// An open event stream: read up to the approval_needed event.
	sreq, _ := http.NewRequest("GET", base+"/v1/runs/"+rid+"/events", nil)
	sreq.Header.Set("Authorization", "Bearer "+keyAlice)
	sres, err := http.DefaultClient.Do(sreq)
	if err != nil {
		t.Fatal(err)
	}
	defer sres.Body.Close()
	br := bufio.NewReader(sres.Body)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("stream: %v", err)
		}
		if strings.HasPrefix(line, "event: approval_needed") {
			break
		}
	}

	// An in-flight tool call.
	type result struct {
		code int
		body map[string]any
		err  error
	}
	done := make(chan result, 1)
	go func() {
		b, _ := json.Marshal(py("print(1)"))
		req, _ := http.NewRequest("POST", base+"/v1/tool-calls", strings.NewReader(string(b)))
		req.Header.Set("Authorization", "Bearer "+keyAlice)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- result{err: err}
			return
		}
		defer res.Body.Close()
		var m map[string]any
		err = json.NewDecoder(res.Body).Decode(&m)
		done <- result{code: res.StatusCode, body: m, err: err}
	}()
	<-started
	cancel()
	// The stream ends (drained) while the call is still held.
	if _, err := io.Copy(io.Discard, br); err != nil {
		t.Fatalf("stream did not end cleanly: %v", err)
	}
	close(release)
	r := <-done
	if r.err != nil || r.code != http.StatusOK || r.body["result"].(map[string]any)["status"] != "ok" {
		t.Fatalf("in-flight call: %+v", r)
	}
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(time.Minute): // a hang guard, not a timing assertion
		t.Fatal("Serve did not return")
	}
}

func TestRunFailsOnBusyAddress(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	h := newHarness(t, func(c *Config, d *Deps) { c.Addr = ln.Addr().String() })
	if err := h.srv.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "listen") {
		t.Fatalf("Run on a busy address: %v", err)
	}
}

func TestServeRefusesInsecureLocalOnNonLoopbackListener(t *testing.T) {
	h := newHarness(t, func(c *Config, d *Deps) { c.Keys, c.InsecureLocal = nil, true })
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Skipf("cannot listen on all interfaces: %v", err)
	}
	defer ln.Close()
	if err := h.srv.Serve(context.Background(), ln); err == nil || !strings.Contains(err.Error(), "insecure-local") {
		t.Fatalf("Serve: %v", err)
	}
}
