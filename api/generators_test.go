package api

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// The client generators the served document must keep working with, run
// with `go run PKG@VERSION` so they never enter this module's go.mod.
const (
	oapiCodegen    = "github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen@v2.8.2"
	ogenGenerator  = "github.com/ogen-go/ogen/cmd/ogen@v1.24.0"
	oapiRuntime    = "github.com/oapi-codegen/runtime v1.4.1"
	ogenRuntime    = "github.com/ogen-go/ogen v1.24.0"
	generatedMod   = "airlock.test/generated"
	generatorsSkip = "generating clients downloads and compiles two generators; run without -short"
)

// TestGeneratedClientsCompile generates a Go client from the served
// document with oapi-codegen and with ogen into a temporary module and
// builds it. It needs the Go module proxy (or a warm GOMODCACHE); it is
// skipped with -short, except in CI (CI=true), where it always runs.
func TestGeneratedClientsCompile(t *testing.T) {
	t.Parallel() // a compiler run: overlaps the browser tests, not the serial heap tests
	if testing.Short() && os.Getenv("CI") != "true" {
		t.Skip(generatorsSkip)
	}
	goBin := goCommand(t)
	dir := t.TempDir()
	spec := filepath.Join(dir, "openapi.json")
	if err := os.WriteFile(spec, OpenAPI(), 0o644); err != nil {
		t.Fatal(err)
	}
	mod := "module " + generatedMod + "\n\ngo 1.22\n\nrequire (\n\t" + oapiRuntime + "\n\t" + ogenRuntime + "\n)\n"
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(mod), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"oapiclient", "ogenclient"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The generators run outside any module, so GOFLAGS stays unset for them.
	runGo(t, goBin, dir, nil, "run", oapiCodegen, "-generate", "types,client", "-package", "oapiclient",
		"-o", filepath.Join("oapiclient", "client.gen.go"), "openapi.json")
	runGo(t, goBin, dir, nil, "run", ogenGenerator, "-target", "ogenclient", "-package", "ogenclient", "-clean", "openapi.json")
	runGo(t, goBin, dir, []string{"GOFLAGS=-mod=mod"}, "build", "./...")
	runGo(t, goBin, dir, []string{"GOFLAGS=-mod=mod"}, "vet", "./oapiclient")

	// The generated code names what the document names.
	for file, want := range map[string][]string{
		"oapiclient/client.gen.go":         {"func (c *Client) CallTool(", "func (c *Client) StreamRunEvents(", "type ToolCallArguments struct", "type Session struct"},
		"ogenclient/oas_client_gen.go":     {"func (c *Client) CallSessionTool(", "func (c *Client) PutSessionFile("},
		"ogenclient/oas_schemas_gen.go":    {"type ToolCallArguments1 map[string]jx.Raw", "type Run struct"},
		"ogenclient/oas_parameters_gen.go": {"LastEventID"},
	} {
		b, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range want {
			if !strings.Contains(string(b), w) {
				t.Errorf("%s: no %q", file, w)
			}
		}
	}
}

// goCommand is the go command: the one on PATH, else the toolchain's own.
func goCommand(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	p := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("no go command: %v", err)
	}
	return p
}

// runGo runs `go args...` in dir with this environment plus env (module
// mode, no workspace, the local toolchain) and fails the test with the
// command's output when it fails.
func runGo(t *testing.T, goBin, dir string, env []string, args ...string) {
	t.Helper()
	cmd := exec.Command(goBin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GO111MODULE=on", "GOWORK=off", "GOTOOLCHAIN=local", "GOFLAGS=")
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}
