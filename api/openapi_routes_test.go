package api

import (
	"regexp"
	"sort"
	"strings"
	"testing"
)

// ginParam matches a gin path parameter (:id, *path).
var ginParam = regexp.MustCompile(`[:*]([A-Za-z_]+)`)

// TestServedRoutesAreInOpenAPI checks every route the server answers is an
// operation of openapi.json, so a client generator sees the whole API: the
// Jupyter gateway and /mcp included, not only /v1.
func TestServedRoutesAreInOpenAPI(t *testing.T) {
	h := newHarness(t, nil)
	doc := h.oa.doc
	var missing []string
	for _, r := range h.srv.engine.Routes() {
		path := ginParam.ReplaceAllString(r.Path, "{$1}")
		item := doc.Paths.Find(path)
		if item == nil || item.GetOperation(r.Method) == nil {
			missing = append(missing, r.Method+" "+path)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Fatalf("served but not in openapi.json:\n%s", strings.Join(missing, "\n"))
	}
}
