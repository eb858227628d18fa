package main

import (
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSessionSubFlagsAfterTheID: `airlock session export SID -o FILE`
// (flags after the session id, as most CLIs take them) writes FILE; it
// printed the usage and exited 2 because Go's flag package stops at the
// first positional argument.
func TestSessionSubFlagsAfterTheID(t *testing.T) {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/sessions/s-1/notebook.ipynb" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/x-ipynb+json")
		_, _ = w.Write([]byte(`{"nbformat":4,"nbformat_minor":5,"metadata":{},"cells":[]}`))
	}))
	t.Cleanup(hs.Close)
	out := filepath.Join(t.TempDir(), "x.ipynb")
	for _, args := range [][]string{
		{"session", "export", "s-1", "-o", out, "--server", hs.URL},
		{"session", "export", "--server", hs.URL, "s-1", "--o=" + out},
	} {
		_ = os.Remove(out)
		var so, se strings.Builder
		if code := run(args, strings.NewReader(""), &so, &se); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, se.String())
		}
		if b, err := os.ReadFile(out); err != nil || !strings.Contains(string(b), `"nbformat":4`) {
			t.Fatalf("%v: %s not written: %v", args, out, err)
		}
	}
}

// TestFlagsFirstKeepsCode: an argument after the session id that is no
// flag of the subcommand stays positional (code such as "-x" to complete),
// and "--" ends the flags.
func TestFlagsFirstKeepsCode(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.String("o", "", "")
	fs.Bool("replay", false, "")
	for _, c := range []struct{ in, want string }{
		{"s-1 -o f", "-o f -- s-1"},
		{"s-1 -x 2", "-- s-1 -x 2"},
		{"--replay snap -o=f", "--replay -o=f -- snap"},
		{"s-1 -- -o", "-- s-1 -o"},
	} {
		if got := strings.Join(flagsFirst(fs, strings.Fields(c.in)), " "); got != c.want {
			t.Errorf("%q: %q, want %q", c.in, got, c.want)
		}
	}
}
