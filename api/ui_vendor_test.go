package api

import (
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestUIVendorEmbedded: the libraries copied by scripts/vendor-js.sh are
// embedded with their licences, served from /ui/vendor/ under the strict
// CSP, and index.html loads them.
func TestUIVendorEmbedded(t *testing.T) {
	files := map[string]string{
		"vendor/codemirror/codemirror.js":   "CodeMirror",
		"vendor/codemirror/codemirror.css":  ".CodeMirror",
		"vendor/codemirror/python.js":       "python",
		"vendor/codemirror/shell.js":        "shell",
		"vendor/codemirror/LICENSE":         "MIT",
		"vendor/marked/marked.min.js":       "marked",
		"vendor/marked/LICENSE":             "MIT",
		"vendor/dompurify/purify.min.js":    "DOMPurify",
		"vendor/dompurify/LICENSE":          "Apache",
		"vendor/highlight/highlight.min.js": "hljs",
		"vendor/highlight/LICENSE":          "BSD",
		"vendor/VERSIONS":                   "libjs-codemirror",
		"favicon.svg":                       "<svg",
	}
	for name, want := range files {
		data, err := fs.ReadFile(webFS, "web/"+name)
		if err != nil {
			t.Errorf("%s not embedded: %v", name, err)
			continue
		}
		if !strings.Contains(string(data), want) {
			t.Errorf("%s lacks %q", name, want)
		}
	}
	index, err := fs.ReadFile(webFS, "web/index.html")
	if err != nil {
		t.Fatal(err)
	}
	for _, src := range []string{"favicon.svg", "codemirror.js", "python.js", "shell.js", "marked.min.js", "purify.min.js", "highlight.min.js"} {
		if !strings.Contains(string(index), src) {
			t.Errorf("index.html does not load %s", src)
		}
	}
	h := newHarness(t, nil)
	ts := httptest.NewServer(h.srv)
	defer ts.Close()
	res, err := http.Get(ts.URL + "/ui/vendor/marked/marked.min.js")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	csp := res.Header.Get("Content-Security-Policy")
	if res.StatusCode != 200 || !strings.Contains(csp, "script-src 'self';") || strings.Contains(csp, "unsafe") {
		t.Fatalf("vendor asset: %d, CSP %q", res.StatusCode, csp)
	}
}
