package api

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/wire"
)

// wireSchemas maps each schema of openapi.json to the Go type of its body:
// the wire package's (and core's, for the parts wire reuses).
var wireSchemas = map[string]any{
	"ErrorBody": wire.ErrorBody{}, "Error": wire.Error{}, "CallStreamError": wire.CallStreamError{},
	"Health": wire.Health{}, "Readiness": wire.Readiness{}, "Info": wire.Info{},
	"Tools": wire.Tools{}, "Tool": wire.Tool{}, "ToolFunction": wire.ToolFunction{},
	"Limits": wire.Limits{}, "ToolCallRequest": wire.ToolCallRequest{}, "ToolCallFunction": wire.ToolCallFunction{},
	"ToolMessage": wire.ToolMessage{}, "Artifact": wire.Artifact{}, "ToolResult": wire.ToolResult{},
	"ToolCallResponse": wire.ToolCallResponse{}, "CallEvent": wire.CallEvent{},
	"ExecError": core.ExecError{}, "Display": core.Display{}, "Dropped": core.Dropped{}, "NetworkAttempt": core.NetworkAttempt{},
	"CreateSessionRequest": wire.CreateSessionRequest{}, "Session": wire.Session{}, "SessionList": wire.SessionList{},
	"Interrupted": wire.Interrupted{}, "FileWritten": wire.FileWritten{}, "FileList": wire.FileList{},
	"Notebook": wire.Notebook{}, "NotebookSave": wire.NotebookSave{}, "NotebookSaved": wire.NotebookSaved{},
	"CreateRunRequest": wire.CreateRunRequest{}, "ApprovalDecision": wire.ApprovalDecision{},
	"Run": wire.Run{}, "Usage": wire.Usage{}, "Event": wire.RunEvent{},
	"Batch": wire.Batch{}, "BatchCounts": wire.BatchCounts{}, "BatchError": wire.BatchError{},
	"BatchList": wire.BatchList{}, "BatchMapSpec": wire.BatchMapSpec{}, "BatchLine": wire.BatchLine{},
	"BatchSummary": wire.BatchSummary{}, "BatchItemEvent": wire.BatchItemEvent{},
	"SnapshotSkip": wire.SnapshotSkip{}, "SnapshotCreated": wire.SnapshotCreated{}, "Snapshot": wire.Snapshot{},
	"SnapshotList": wire.SnapshotList{}, "ReplayedCall": wire.ReplayedCall{}, "SessionRestored": wire.SessionRestored{},
	"CreateEnvironmentRequest": wire.CreateEnvironmentRequest{}, "EnvironmentBlob": wire.EnvironmentBlob{},
	"EnvironmentCheck": wire.EnvironmentCheck{}, "Environment": wire.Environment{}, "EnvironmentList": wire.EnvironmentList{},
	"EnvironmentEvent": wire.EnvironmentEvent{},
	"CompleteRequest":  wire.CompleteRequest{}, "Signature": wire.Signature{}, "Completion": wire.Completion{},
	"Variable": wire.Variable{}, "VariableList": wire.VariableList{},
	"JupyterAPI": wire.JupyterAPI{}, "KernelSpecFile": wire.KernelSpecFile{}, "KernelSpec": wire.KernelSpec{},
	"KernelSpecs": wire.KernelSpecs{}, "Kernel": wire.Kernel{}, "StartKernelRequest": wire.StartKernelRequest{},
}

// notBodies are schemas without a Go struct: the tool arguments (any JSON
// object the tool's own schema describes; CodeToolArguments is checked
// against the registry by TestOpenAPIDocumentsCodeToolArguments).
var notBodies = []string{"ToolCallArguments", "CodeToolArguments"}

// goField is one JSON field of a Go struct.
type goField struct {
	typ      reflect.Type
	optional bool // omitempty or omitzero: absent when zero
}

// jsonFields lists the JSON fields of struct type t, embedded structs
// flattened as encoding/json does.
func jsonFields(t reflect.Type) map[string]goField {
	out := map[string]goField{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		switch {
		case !f.IsExported() || name == "-":
		case f.Anonymous && tag == "" && f.Type.Kind() == reflect.Struct:
			for k, v := range jsonFields(f.Type) {
				out[k] = v
			}
		default:
			if name == "" {
				name = f.Name
			}
			out[name] = goField{typ: f.Type, optional: strings.Contains(opts, "omitempty") || strings.Contains(opts, "omitzero")}
		}
	}
	return out
}

// TestWireMatchesOpenAPI checks openapi.json against package wire field by
// field, so a field added on one side only fails the build: every schema
// names a Go body and every wire struct is described (as a schema, or
// inline where a field holds it); their properties are the same names; a
// required property is never omitted in Go; each property's type is the Go
// field's (a $ref names the field's own type, an inline object matches it
// field by field); the error codes are core.Codes().
func TestWireMatchesOpenAPI(t *testing.T) {
	doc := newOAValidator(t).doc
	schemas := doc.Components.Schemas
	c := &schemaCheck{t: t, byType: map[reflect.Type]string{}, seen: map[reflect.Type]bool{}}
	for name, v := range wireSchemas {
		c.byType[reflect.TypeOf(v)] = name
		if schemas[name] == nil {
			t.Errorf("wireSchemas names %s, which openapi.json does not have", name)
		}
	}
	for name, ref := range schemas {
		v, ok := wireSchemas[name]
		if !ok {
			if !slices.Contains(notBodies, name) {
				t.Errorf("schema %s has no Go type in wireSchemas", name)
			}
			continue
		}
		c.check(name, ref.Value, reflect.TypeOf(v))
	}
	described := map[string]bool{}
	for typ := range c.seen {
		if typ.PkgPath() == "github.com/airlock-dev/airlock/wire" {
			described[typ.Name()] = true
		}
	}
	for _, name := range wireStructs(t) {
		if !described[name] {
			t.Errorf("wire.%s is not described in openapi.json", name)
		}
	}
	var codes []string
	for _, c := range core.Codes() {
		codes = append(codes, string(c))
	}
	var enum []string
	for _, e := range schemas["Error"].Value.Properties["code"].Value.Enum {
		enum = append(enum, e.(string))
	}
	sort.Strings(codes)
	sort.Strings(enum)
	if !slices.Equal(codes, enum) {
		t.Errorf("Error.code enum %v, core.Codes() %v", enum, codes)
	}
}

// schemaCheck compares schemas with Go types.
type schemaCheck struct {
	t      *testing.T
	byType map[reflect.Type]string // the component schema of each Go type
	seen   map[reflect.Type]bool   // the Go structs compared so far
}

// check compares schema s, named name, with Go struct typ.
func (c *schemaCheck) check(name string, s *openapi3.Schema, typ reflect.Type) {
	t := c.t
	t.Helper()
	c.seen[typ] = true
	fields := jsonFields(typ)
	for prop, ps := range s.Properties {
		f, ok := fields[prop]
		if !ok {
			t.Errorf("%s.%s is in openapi.json, not in %v", name, prop, typ)
			continue
		}
		if msg := c.mismatch(name+"."+prop, ps, f.typ); msg != "" {
			t.Errorf("%s.%s: %s", name, prop, msg)
		}
	}
	for field := range fields {
		if _, ok := s.Properties[field]; !ok {
			t.Errorf("%s: %v has field %q, openapi.json does not", name, typ, field)
		}
	}
	for _, req := range s.Required {
		if f, ok := fields[req]; ok && f.optional {
			t.Errorf("%s.%s is required in openapi.json but omitted when empty in %v", name, req, typ)
		}
	}
}

// mismatch says how schema ref, of the property at where, differs from
// Go type typ ("" when it does not).
func (c *schemaCheck) mismatch(where string, ref *openapi3.SchemaRef, typ reflect.Type) string {
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	anyJSON := typ == reflect.TypeOf(json.RawMessage{}) || typ.Kind() == reflect.Interface
	if ref.Ref != "" {
		got := filepath.Base(ref.Ref)
		if want := c.byType[typ]; got != want && !(anyJSON && slices.Contains(notBodies, got)) {
			return "$ref " + got + ", Go type " + typ.String() + " is schema " + want
		}
		return ""
	}
	s := ref.Value
	var want string
	switch {
	case typ == reflect.TypeOf(time.Time{}), typ.Kind() == reflect.String, typ == reflect.TypeOf([]byte(nil)): // []byte: base64
		want = "string"
	case anyJSON:
		return "" // any JSON
	case typ.Kind() == reflect.Bool:
		want = "boolean"
	case typ.Kind() >= reflect.Int && typ.Kind() <= reflect.Uint64:
		want = "integer"
	case typ.Kind() == reflect.Float32 || typ.Kind() == reflect.Float64:
		want = "number"
	case typ.Kind() == reflect.Slice:
		if !s.Type.Is("array") {
			return "type " + strings.Join(s.Type.Slice(), "|") + ", Go type " + typ.String()
		}
		if s.Items == nil {
			return "an array without items"
		}
		return c.mismatch(where+"[]", s.Items, typ.Elem())
	case typ.Kind() == reflect.Map:
		want = "object"
	case typ.Kind() == reflect.Struct:
		if s.Type == nil || !s.Type.Includes("object") {
			return "not an object, Go type " + typ.String()
		}
		c.check(where, s, typ) // an inline object: field by field
		return ""
	}
	if s.Type == nil || !s.Type.Includes(want) {
		got := "none"
		if s.Type != nil {
			got = strings.Join(s.Type.Slice(), "|")
		}
		return "type " + got + ", Go type " + typ.String() + " wants " + want
	}
	return ""
}

// wireStructs lists the exported struct types declared in package wire.
func wireStructs(t *testing.T) []string {
	t.Helper()
	pkgs, err := parser.ParseDir(token.NewFileSet(), "../wire", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range pkgs {
		for _, f := range p.Files {
			for _, d := range f.Decls {
				g, ok := d.(*ast.GenDecl)
				if !ok || g.Tok != token.TYPE {
					continue
				}
				for _, sp := range g.Specs {
					ts := sp.(*ast.TypeSpec)
					if _, isStruct := ts.Type.(*ast.StructType); isStruct && ts.Name.IsExported() {
						out = append(out, ts.Name.Name)
					}
				}
			}
		}
	}
	return out
}
