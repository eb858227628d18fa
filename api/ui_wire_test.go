package api

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// agentEventData are keys of the agent's run event data that the UI reads
// and openapi.json leaves free-form (Event.data): approval_needed's
// call_id.
var agentEventData = []string{"call_id"}

// uiNames finds the JSON names the web UI reads or writes: snake_case
// property accesses (.a_b, ?.a_b, ["a_b"]) and object keys (a_b:). JS's
// own names are camelCase, so a snake_case one is the API's.
var uiNames = regexp.MustCompile(`(?:\??\.|\[")([a-z][a-z0-9]*(?:_[a-z0-9]+)+)\b|\b([a-z][a-z0-9]*(?:_[a-z0-9]+)+)\s*:`)

// TestUIReadsTheWire checks the web UI against package wire as a schema:
// every snake_case name its scripts use is a JSON field of a wire body (or
// of a type wire reuses), an enum value of openapi.json (statuses), or a
// documented key of run event data. A UI reading a field the API never
// sends, or sending one it does not read, fails here.
func TestUIReadsTheWire(t *testing.T) {
	known := map[string]bool{}
	seen := map[reflect.Type]bool{}
	var walk func(reflect.Type)
	walk = func(typ reflect.Type) {
		for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice || typ.Kind() == reflect.Map {
			typ = typ.Elem()
		}
		if typ.Kind() != reflect.Struct || seen[typ] {
			return
		}
		seen[typ] = true
		for name, f := range jsonFields(typ) {
			known[name] = true
			walk(f.typ)
		}
	}
	for _, v := range wireSchemas {
		walk(reflect.TypeOf(v))
	}
	doc := newOAValidator(t).doc
	var enums func(s *openapi3.Schema)
	enums = func(s *openapi3.Schema) {
		for _, e := range s.Enum {
			if str, ok := e.(string); ok {
				known[str] = true
			}
		}
		for _, p := range s.Properties {
			enums(p.Value)
		}
		if s.Items != nil {
			enums(s.Items.Value)
		}
	}
	for _, s := range doc.Components.Schemas {
		enums(s.Value)
	}
	for _, k := range agentEventData {
		known[k] = true
	}
	files, err := filepath.Glob("web/*.js")
	if err != nil || len(files) == 0 {
		t.Fatalf("no UI scripts: %v", err)
	}
	var unknown []string
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range uiNames.FindAllStringSubmatch(string(src), -1) {
			name := m[1] + m[2]
			if !known[name] {
				unknown = append(unknown, filepath.Base(f)+": "+name)
			}
		}
	}
	sort.Strings(unknown)
	if len(unknown) > 0 {
		t.Fatalf("the UI uses names no wire body has:\n%v", unknown)
	}
}
