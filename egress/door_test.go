package egress

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"testing"
	"time"
)

// doorClient returns an HTTP client whose proxy is reached through door d.
func doorClient(d *Door) *http.Client {
	u, _ := url.Parse("http://door.invalid")
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		Proxy: http.ProxyURL(u),
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var nd net.Dialer
			return nd.DialContext(ctx, "unix", d.Path())
		},
		DisableKeepAlives: true,
	}}
}

// TestDoor: a caller is known by its door; a door with no call is refused,
// one with a call reaches its policy's hosts and is recorded; Close
// removes the socket and its directory.
func TestDoor(t *testing.T) {
	tp := newTestProxy(t, nil)
	srv := newTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "hello") }), nil)
	parent := t.TempDir()
	d, err := tp.OpenDoor(parent)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(d.Path())
	if err != nil || st.Mode()&os.ModeSocket == 0 || st.Mode().Perm() != 0o666 {
		t.Fatalf("door socket: %v %v", st, err)
	}
	target := "http://" + hostPort("allowed.test", srv.port()) + "/"
	resp, err := doorClient(d).Get(target)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || resp.Header.Get("X-Airlock-Egress") != ReasonUnregistered {
		t.Fatalf("door without a call: %d %q, want 403 %s", resp.StatusCode, resp.Header.Get("X-Airlock-Egress"), ReasonUnregistered)
	}
	pol, err := Parse(hostPort("allowed.test", srv.port()))
	if err != nil {
		t.Fatal(err)
	}
	h, err := d.Register(CallInfo{Owner: "alice", CallID: "door-1", Policy: pol})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Register(CallInfo{Owner: "alice", CallID: "door-2", Policy: pol}); err == nil {
		t.Fatal("a second call on a busy door was accepted")
	}
	// The loopback address runs no call: only the door does.
	if resp, err := tp.client(nil).Get(target); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("through the address with only the door registered: %v %v", resp, err)
	}
	resp, err = doorClient(d).Get(target)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "hello" {
		t.Fatalf("through the door: %d %q", resp.StatusCode, body)
	}
	rec := h.Close()
	if len(rec.Attempts) != 1 || !rec.Attempts[0].Allowed || rec.Attempts[0].Host != "allowed.test" || rec.Attempts[0].Bytes == 0 {
		t.Fatalf("record: %+v", rec)
	}
	var sawDoor bool
	for _, ev := range tp.evs.all() {
		sawDoor = sawDoor || ev.Door == d.Name() && ev.CallID == "door-1"
	}
	if !sawDoor {
		t.Fatalf("no audit event names the door: %+v", tp.evs.all())
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(parent); len(ents) != 0 {
		t.Fatalf("door left %v behind", ents)
	}
}
