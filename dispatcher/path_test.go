package dispatcher

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/internal/policy"
)

func TestPathRulesGo(t *testing.T) {
	cases := []struct {
		tool, arg, value string
		session          bool
		rule             string // "" means allowed
	}{
		{ToolReadFile, "path", ".env", false, policy.RulePathSecret},
		{ToolReadFile, "path", "/workspace/config/.env.production", false, policy.RulePathSecret},
		{ToolReadFile, "path", "/workspace/prod.env", false, policy.RulePathSecret},
		{ToolReadFile, "path", "/workspace/.ssh/id_rsa", false, policy.RulePathSecret},
		{ToolReadFile, "path", "id_ed25519.pub", false, policy.RulePathSecret},
		{ToolReadFile, "path", "certs/server.PEM", false, policy.RulePathSecret},
		{ToolReadFile, "path", "tls/server.key", false, policy.RulePathSecret},
		{ToolReadFile, "path", "/workspace/.aws/credentials", false, policy.RulePathSecret},
		{ToolReadFile, "path", "/proc/self/environ", false, policy.RulePathSecret},
		{ToolReadFile, "path", "/proc/1/environ", false, policy.RulePathSecret},
		{ToolReadFile, "path", "/etc/shadow", false, policy.RulePathSecret},
		{ToolReadFile, "path", "../../etc/shadow", false, policy.RulePathSecret},
		{ToolReadFile, "path", "../../proc/1/environ", false, policy.RulePathSecret},
		{ToolReadFile, "path", "/var/run/secrets/kubernetes.io/serviceaccount/token", false, policy.RulePathSecret},
		{ToolReadFile, "path", "/etc/passwd", false, policy.RulePathReadOutside},
		{ToolReadFile, "path", "../etc/passwd", false, policy.RulePathReadOutside},
		{ToolReadFile, "path", "/workspace/../etc/passwd", false, policy.RulePathReadOutside},
		{ToolReadFile, "path", "/workspace/a/../../root/x", false, policy.RulePathReadOutside},
		{ToolReadFile, "path", "/workspacex/a", false, policy.RulePathReadOutside},
		{ToolReadFile, "path", "data.csv", false, ""},
		{ToolReadFile, "path", "/workspace/sub/../data.csv", false, ""},
		{ToolReadFile, "path", "/work/notes.txt", true, ""},
		{ToolReadFile, "path", "key_results.txt", false, ""},
		{ToolWriteFile, "path", "out.txt", true, ""},
		{ToolWriteFile, "path", "/work/outputs/plot.csv", true, ""},
		{ToolWriteFile, "path", "/workspace/data.csv", true, policy.RulePathWriteOutside},
		{ToolWriteFile, "path", "../etc/cron.d/x", true, policy.RulePathWriteOutside},
		{ToolWriteFile, "path", "/work/../tmp/x", true, policy.RulePathWriteOutside},
		{ToolWriteFile, "path", "/tmp/x", true, policy.RulePathWriteOutside},
		{ToolWriteFile, "path", ".env", true, policy.RulePathSecret},
		{ToolWriteFile, "path", "/work/.ssh/authorized_keys", true, policy.RulePathSecret},
		{ToolWriteFile, "path", "x/../../.aws/config", true, policy.RulePathSecret},
		{ToolListDirectory, "path", "/", false, policy.RulePathReadOutside},
		{ToolListDirectory, "path", "..", false, policy.RulePathReadOutside},
		{ToolListDirectory, "path", "/workspace/.ssh", false, policy.RulePathSecret},
		{ToolListDirectory, "path", "sub", false, ""},
		{ToolSQLiteQuery, "database", "../../etc/x.db", false, policy.RulePathReadOutside},
		{ToolSQLiteQuery, "database", "/workspace/../../root/.ssh/db", false, policy.RulePathSecret},
		{ToolSQLiteQuery, "database", "sales.db", false, ""},
	}
	for _, c := range cases {
		t.Run(c.tool+" "+c.value, func(t *testing.T) {
			ex := okExecutor()
			d, _ := newTestDispatcher(t, testConfig(), ex)
			args := map[string]any{c.arg: c.value}
			switch c.tool {
			case ToolWriteFile:
				args["content"] = "x"
			case ToolSQLiteQuery:
				args["query"] = "select 1"
			}
			cl := call(c.tool, args)
			if c.session {
				cl.SessionID = "s1"
			}
			r := d.Run(context.Background(), cl)
			if c.rule == "" {
				if r.Status != StatusOK {
					t.Fatalf("want allowed, got %s %q: %s", r.Status, r.Reason, r.Content)
				}
				return
			}
			if r.Status != StatusRejected || r.Reason != "policy:"+c.rule {
				t.Fatalf("want policy:%s, got %s %q: %s", c.rule, r.Status, r.Reason, r.Content)
			}
			if ex.calls() != 0 {
				t.Errorf("refused call reached the executor")
			}
		})
	}
}

func TestPathSecretRuleSwitch(t *testing.T) {
	cfg := testConfig()
	cfg.Policy.DisablePaths = true
	d, _ := newTestDispatcher(t, cfg, okExecutor())
	if r := d.Run(context.Background(), call(ToolReadFile, map[string]any{"path": ".env"})); r.Status != StatusOK {
		t.Errorf("DisablePaths: .env got %s %q", r.Status, r.Reason)
	}
	// confinement is part of the tools and stays on
	if r := d.Run(context.Background(), call(ToolReadFile, map[string]any{"path": "/etc/passwd"})); r.Reason != "policy:"+policy.RulePathReadOutside {
		t.Errorf("DisablePaths: /etc/passwd got %s %q", r.Status, r.Reason)
	}
}

// pythonExecutor runs generated programs with the local python3, standing
// in for the sandbox, so the in-sandbox checks are exercised for real.
func pythonExecutor(t *testing.T) *fakeExecutor {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("python3 is required in CI for the generated-program tests")
		}
		t.Skip("python3 not installed; generated-program tests skipped")
	}
	return &fakeExecutor{fn: func(req core.Request) (core.Result, error) {
		if req.Language != core.Python {
			return core.Result{}, errors.New("not python")
		}
		cmd := exec.Command(py, "-I", "-")
		cmd.Stdin = strings.NewReader(req.Code)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		res := core.Result{Status: core.StatusOK, Stdout: out.String(), Stderr: errb.String()}
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			res.Status, res.ExitCode = core.StatusError, ee.ExitCode()
		} else if err != nil {
			return core.Result{}, err
		}
		return res, nil
	}}
}

// sandboxDirs makes a work and an input folder and a config using them.
func sandboxDirs(t *testing.T) (Config, string, string, string) {
	t.Helper()
	root := t.TempDir()
	work, in, outside := filepath.Join(root, "work"), filepath.Join(root, "workspace"), filepath.Join(root, "outside")
	for _, d := range []string{work, in, outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cfg := testConfig()
	cfg.WorkDir, cfg.InputDir = work, in
	return cfg, work, in, outside
}

func TestGeneratedFileTools(t *testing.T) {
	ex := pythonExecutor(t)
	cfg, work, in, outside := sandboxDirs(t)
	d, _ := newTestDispatcher(t, cfg, ex)
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(in, "data.csv"), []byte("a,b\n1,2\n3,4\n5,6\n"), 0o644))
	must(os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("TOPSECRET"), 0o644))
	must(os.WriteFile(filepath.Join(outside, "id_rsa"), []byte("KEY"), 0o644))
	must(os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(in, "link.txt")))
	must(os.Symlink(filepath.Join(outside, "id_rsa"), filepath.Join(in, "innocent.txt")))
	must(os.Symlink(outside, filepath.Join(work, "escape")))

	// read_file with offset/limit
	r := d.Run(ctx, call(ToolReadFile, map[string]any{"path": "data.csv", "offset": 1, "limit": 2}))
	if r.Status != StatusOK || !strings.Contains(r.Content, "1,2\n3,4") || strings.Contains(r.Content, "5,6") || !strings.Contains(r.Content, "offset=3") {
		t.Fatalf("read_file: %s %q\n%s", r.Status, r.Reason, r.Content)
	}
	// a symlink out of the input folder is caught inside the sandbox
	r = d.Run(ctx, call(ToolReadFile, map[string]any{"path": "link.txt"}))
	if r.Reason != "policy:"+policy.RulePathReadOutside || strings.Contains(r.Content, "TOPSECRET") {
		t.Fatalf("symlink read: %s %q\n%s", r.Status, r.Reason, r.Content)
	}
	// a symlink with an innocent name to a key file names the secret rule
	r = d.Run(ctx, call(ToolReadFile, map[string]any{"path": "innocent.txt"}))
	if r.Reason != "policy:"+policy.RulePathSecret {
		t.Fatalf("symlink to key: %s %q\n%s", r.Status, r.Reason, r.Content)
	}
	// write_file: normal, append, through a symlinked folder
	sc := func(args map[string]any) Call { c := call(ToolWriteFile, args); c.SessionID = "s"; return c }
	r = d.Run(ctx, sc(map[string]any{"path": "sub/dir/out.txt", "content": "héllo \"'\\ $(x)\n"}))
	if r.Status != StatusOK {
		t.Fatalf("write_file: %s %q\n%s", r.Status, r.Reason, r.Content)
	}
	r = d.Run(ctx, sc(map[string]any{"path": "sub/dir/out.txt", "content": "more\n", "mode": "append"}))
	got, err := os.ReadFile(filepath.Join(work, "sub/dir/out.txt"))
	if r.Status != StatusOK || err != nil || string(got) != "héllo \"'\\ $(x)\nmore\n" {
		t.Fatalf("write_file content %q err %v (%s)", got, err, r.Content)
	}
	r = d.Run(ctx, sc(map[string]any{"path": "escape/pwned.txt", "content": "x"}))
	if r.Reason != "policy:"+policy.RulePathWriteOutside {
		t.Fatalf("symlinked write: %s %q\n%s", r.Status, r.Reason, r.Content)
	}
	if _, err := os.Stat(filepath.Join(outside, "pwned.txt")); err == nil {
		t.Fatal("write escaped through a symlink")
	}
	// list_directory
	lc := call(ToolListDirectory, map[string]any{"recursive": true})
	lc.SessionID = "s"
	r = d.Run(ctx, lc)
	if r.Status != StatusOK || !strings.Contains(r.Content, "sub/dir/out.txt") || !strings.Contains(r.Content, "link  escape ->") {
		t.Fatalf("list_directory: %s\n%s", r.Status, r.Content)
	}
	r = d.Run(ctx, call(ToolListDirectory, map[string]any{"path": "."}))
	if r.Status != StatusOK || !strings.Contains(r.Content, "file  data.csv (16 bytes)") {
		t.Fatalf("list_directory inputs: %s\n%s", r.Status, r.Content)
	}
}

func TestGeneratedSQLite(t *testing.T) {
	ex := pythonExecutor(t)
	cfg, _, in, _ := sandboxDirs(t)
	dbPath := filepath.Join(in, "sales.db")
	mk := exec.Command("python3", "-c", `import sqlite3,sys
c=sqlite3.connect(sys.argv[1]); c.execute("create table t(id integer, name text)")
c.executemany("insert into t values(?,?)", [(i, "n%d" % i) for i in range(10)]); c.commit()`, dbPath)
	if out, err := mk.CombinedOutput(); err != nil {
		t.Fatalf("make db: %v %s", err, out)
	}
	d, _ := newTestDispatcher(t, cfg, ex)
	ctx := context.Background()
	q := func(query string, maxRows int) Result {
		return d.Run(ctx, call(ToolSQLiteQuery, map[string]any{"database": "sales.db", "query": query, "max_rows": maxRows}))
	}
	r := q("select id, name from t where id < 3 order by id", 100)
	if r.Status != StatusOK || !strings.Contains(r.Content, "id\tname\n0\tn0\n1\tn1\n2\tn2\n(3 rows)") {
		t.Fatalf("select: %s %q\n%s", r.Status, r.Reason, r.Content)
	}
	if r = q("select * from t", 4); !strings.Contains(r.Content, "stopped at 4 rows") {
		t.Errorf("max_rows: %s", r.Content)
	}
	if r = q("pragma table_info(t)", 100); r.Status != StatusOK || !strings.Contains(r.Content, "name") {
		t.Errorf("pragma table_info: %s %q %s", r.Status, r.Reason, r.Content)
	}
	// writes are refused by the engine, not by a keyword check
	for _, w := range []string{"delete from t", "insert into t values (99, 'x')", "drop table t", "update t set name = 'x'",
		"attach database '" + filepath.Join(in, "other.db") + "' as o", "pragma query_only=OFF", "create table u(x)",
		"with x as (select 1) delete from t"} {
		r = q(w, 10)
		if r.Status == StatusOK {
			t.Errorf("%q: ran: %s", w, r.Content)
		}
		if r.Reason != "policy:"+policy.RuleSQLReadOnly && !strings.Contains(r.Content, "readonly") {
			t.Errorf("%q: refused for another reason: %s %q %s", w, r.Status, r.Reason, r.Content)
		}
	}
	// the engine's own one-statement check (the Go pre-check switched off)
	cfg2 := cfg
	cfg2.Policy.Disabled = []string{policy.RuleSQLMultiple}
	d2, _ := newTestDispatcher(t, cfg2, ex)
	r = d2.Run(ctx, call(ToolSQLiteQuery, map[string]any{"database": "sales.db", "query": "select 1; delete from t"}))
	if r.Reason != "policy:"+policy.RuleSQLMultiple {
		t.Errorf("engine multiple statements: %s %q %s", r.Status, r.Reason, r.Content)
	}
	cnt := exec.Command("python3", "-c", "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('select count(*) from t').fetchone()[0])", dbPath)
	if out, err := cnt.Output(); err != nil || strings.TrimSpace(string(out)) != "10" {
		t.Errorf("database changed: %q %v", out, err)
	}
	if _, err := os.Stat(filepath.Join(in, "other.db")); err == nil {
		t.Errorf("ATTACH created a file")
	}
}

// TestToolProgramsAreGenerated: the file and SQL tools send their programs
// as Generated (a session runs them apart from its kernel, issue 26);
// run_python and execute_shell send the caller's code as is.
func TestToolProgramsAreGenerated(t *testing.T) {
	ex := okExecutor()
	d, _ := newTestDispatcher(t, testConfig(), ex)
	for _, c := range []struct {
		tool string
		args map[string]any
		want bool
	}{
		{ToolReadFile, map[string]any{"path": "a.txt"}, true},
		{ToolWriteFile, map[string]any{"path": "a.txt", "content": "x"}, true},
		{ToolListDirectory, map[string]any{"path": "."}, true},
		{ToolSQLiteQuery, map[string]any{"database": "a.db", "query": "select 1"}, true},
		{ToolRunPython, map[string]any{"code": "print(1)"}, false},
		{ToolExecuteShell, map[string]any{"command": "echo 1"}, false},
	} {
		cl := call(c.tool, c.args)
		cl.SessionID = "s1"
		if r := d.Run(context.Background(), cl); r.Status != StatusOK {
			t.Fatalf("%s: %s %q", c.tool, r.Status, r.Reason)
		}
		ex.mu.Lock()
		got := ex.reqs[len(ex.reqs)-1].Generated
		ex.mu.Unlock()
		if got != c.want {
			t.Errorf("%s: Generated = %v, want %v", c.tool, got, c.want)
		}
	}
}
