package dispatcher

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/airlock-dev/airlock/core"
)

// planted secrets, one per known format (built by concatenation so that
// this file itself does not trip secret scanners).
var planted = map[string]string{
	"openai_key":     "sk-" + "proj-" + strings.Repeat("A1b2", 12),
	"aws_access_key": "AKIA" + "IOSFODNN7EXAMPLE",
	"github_token":   "ghp_" + strings.Repeat("x9Y8", 9),
	"github_pat":     "github_pat_" + strings.Repeat("11AB_cd", 6),
	"slack_token":    "xoxb-" + "1234567890-abcdefghij",
	"google_api_key": "AIza" + strings.Repeat("Sy", 17) + "A",
	"jwt":            "eyJhbGciOiJIUzI1NiJ9" + "." + "eyJzdWIiOiIxMjM0NTY3ODkwIn0" + "." + "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
	"private_key":    "-----BEGIN " + "RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA1234\nabcd\n-----END RSA PRIVATE KEY-----",
	"configured":     "corp-internal-secret-77",
}

// hostEnvSecret is a secret-looking value of the server's environment:
// no longer a redaction source (it never reaches a sandbox).
const hostEnvSecret = "hunter2-is-my-db-password"

func redactConfig() Config {
	cfg := testConfig()
	cfg.Secrets = []string{planted["configured"]}
	return cfg
}

func TestRedactorFormats(t *testing.T) {
	r := NewRedactor([]string{planted["configured"]})
	for name, secret := range planted {
		out := r.String("before " + secret + " after")
		if strings.Contains(out, secret) || !strings.Contains(out, "[REDACTED") || !strings.HasPrefix(out, "before ") || !strings.HasSuffix(out, " after") {
			t.Errorf("%s: %q", name, out)
		}
	}
	// ordinary text and short or non-secret env values are left alone
	for _, s := range []string{"task-1234567890abcdefghijklmnop", "PATH=/usr/bin:/bin", "abc", "the mask-off key", "AKIA short"} {
		if out := r.String(s); out != s {
			t.Errorf("over-redacted %q -> %q", s, out)
		}
	}
	// labelled values
	out := r.String(`aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY` + "\nAuthorization: Bearer abcdefghijklmnopqrstuvwxyz012345")
	if strings.Contains(out, "wJalrXUtnFEMI") || strings.Contains(out, "abcdefghijklmnopqrstuvwxyz012345") || !strings.Contains(out, "aws_secret_access_key = ") {
		t.Errorf("labelled: %q", out)
	}
	// a private key cut by truncation (no END line) is still removed
	out = r.String("-----BEGIN " + "OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA")
	if strings.Contains(out, "b3BlbnNzaC1") {
		t.Errorf("unterminated key: %q", out)
	}
	// the server's environment is no source, and a configured secret's
	// marker names nothing
	t.Setenv("DB_PASSWORD", hostEnvSecret)
	if out := NewRedactor(nil).String(hostEnvSecret); out != hostEnvSecret {
		t.Errorf("host env value redacted: %q", out)
	}
	if out := r.String(planted["configured"]); out != "[REDACTED]" {
		t.Errorf("configured secret marker: %q", out)
	}
}

// TestRedactionIsNoOracle prints 10,000 candidates of a configured secret
// through a real Run: the one that matches is redacted, and no marker
// names a variable, a source or anything beyond the pattern formats.
func TestRedactionIsNoOracle(t *testing.T) {
	secret := "s3cr3t-4821-value"
	var sb strings.Builder
	for i := range 10000 {
		fmt.Fprintf(&sb, "%d=s3cr3t-%d-value\n", i, i)
	}
	t.Setenv("MY_DB_PASSWORD", secret)
	cfg := testConfig()
	cfg.Secrets = []string{secret}
	ex := &fakeExecutor{res: core.Result{Status: core.StatusOK, Stdout: sb.String()}}
	d, _ := newTestDispatcher(t, cfg, ex)
	r := d.Run(context.Background(), sessionCall(ToolReadFile, map[string]any{"path": "x.txt"}))
	if r.Sandbox == nil {
		t.Fatalf("got %+v", r)
	}
	out := r.Sandbox.Stdout + r.Content
	if strings.Contains(out, secret) {
		t.Fatal("secret leaked")
	}
	markers := regexp.MustCompile(`\[REDACTED[^\]]*\]`).FindAllString(out, -1)
	if len(markers) == 0 {
		t.Fatal("the matching candidate was not redacted")
	}
	for _, m := range markers {
		if m != "[REDACTED]" {
			t.Fatalf("marker %q says more than that something was redacted", m)
		}
	}
	if strings.Contains(out, "MY_DB_PASSWORD") || strings.Contains(out, "env:") {
		t.Fatal("output names the variable")
	}
}

func TestRunRedactsEverywhere(t *testing.T) {
	all := strings.Join(func() []string {
		var s []string
		for _, v := range planted {
			s = append(s, v)
		}
		return s
	}(), "\n")
	text := []byte("config:\n" + all + "\n")
	sum := sha256.Sum256(text)
	ex := &fakeExecutor{res: core.Result{
		Status: core.StatusOK, Stdout: "out " + all, Stderr: "err " + all, Message: "msg " + planted["configured"],
		Warnings: []string{"warn " + planted["configured"]},
		Artifacts: []core.Artifact{
			{Name: "config.txt", MIME: "text/plain", Size: int64(len(text)), SHA256: hex.EncodeToString(sum[:]), Data: text},
			{Name: "blob.bin", MIME: "application/octet-stream", Data: append([]byte{0, 1, 2}, []byte(planted["configured"])...)},
		},
	}}
	d, _ := newTestDispatcher(t, redactConfig(), ex)
	r := d.Run(context.Background(), sessionCall(ToolReadFile, map[string]any{"path": "config.txt"}))
	if r.Status != StatusOK || r.Sandbox == nil {
		t.Fatalf("got %+v", r)
	}
	where := map[string]string{"content": r.Content, "stdout": r.Sandbox.Stdout, "stderr": r.Sandbox.Stderr,
		"message": r.Sandbox.Message, "warning": r.Sandbox.Warnings[0], "text artifact": string(r.Sandbox.Artifacts[0].Data)}
	for w, s := range where {
		for name, secret := range planted {
			if strings.Contains(s, secret) {
				t.Errorf("%s leaks %s", w, name)
			}
		}
		if !strings.Contains(s, "[REDACTED") {
			t.Errorf("%s has no redaction marker: %q", w, s)
		}
	}
	a := r.Sandbox.Artifacts[0]
	if got := sha256.Sum256(a.Data); a.Size != int64(len(a.Data)) || a.SHA256 != hex.EncodeToString(got[:]) {
		t.Errorf("redacted artifact metadata not recomputed")
	}
	// binary artifacts are not rewritten (they would be corrupted)
	if b := r.Sandbox.Artifacts[1].Data; !strings.Contains(string(b), planted["configured"]) {
		t.Errorf("binary artifact modified")
	}
	// the executor's own result value is not mutated
	if !strings.Contains(ex.res.Stdout, planted["configured"]) {
		t.Errorf("redaction mutated the executor's result")
	}
}

func TestTruncate(t *testing.T) {
	if s, cut := Truncate("short", 100, 100); s != "short" || cut {
		t.Errorf("short: %q %v", s, cut)
	}
	long := strings.Repeat("a", 3000) + "MIDDLE" + strings.Repeat("z", 3000)
	s, cut := Truncate(long, 4000, 1<<20)
	if !cut || utf8.RuneCountInString(s) > 4000 || !strings.HasPrefix(s, "aaaa") || !strings.HasSuffix(s, "zzzz") || strings.Contains(s, "MIDDLE") {
		t.Fatalf("long: cut=%v len=%d", cut, utf8.RuneCountInString(s))
	}
	if !strings.Contains(s, "characters truncated") {
		t.Errorf("no marker")
	}
	// multi-byte characters: never split, both limits honoured
	mb := strings.Repeat("é日本🙂", 2000)
	for _, lim := range []struct{ chars, bytes int }{{4000, 16 << 10}, {1000, 1 << 20}, {100000, 2000}, {333, 777}} {
		s, cut := Truncate(mb, lim.chars, lim.bytes)
		if !cut || !utf8.ValidString(s) || utf8.RuneCountInString(s) > lim.chars || len(s) > lim.bytes {
			t.Errorf("%v: cut=%v valid=%v chars=%d bytes=%d", lim, cut, utf8.ValidString(s), utf8.RuneCountInString(s), len(s))
		}
		if !strings.HasPrefix(s, "é日本") || !strings.HasSuffix(s, "🙂") {
			t.Errorf("%v: head or tail lost", lim)
		}
	}
	// the marker's count is exact
	s, _ = Truncate(strings.Repeat("x", 200), 100, 0)
	kept := strings.Count(s, "x")
	if !strings.Contains(s, "[... "+itoa(200-kept)+" characters truncated ...]") {
		t.Errorf("marker count: %q", s)
	}
	// invalid UTF-8 is made valid
	if s, _ := Truncate("ok\xff\xfe", 100, 100); !utf8.ValidString(s) {
		t.Errorf("invalid utf-8 kept")
	}
}

// itoa avoids strconv in the test table.
func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for n > 0 {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
	}
	return string(b)
}

func TestRunTruncatesContent(t *testing.T) {
	cfg := testConfig()
	cfg.MaxContentChars = 500
	out := strings.Repeat("日本語", 1000) + "THE-END"
	ex := &fakeExecutor{res: core.Result{Status: core.StatusOK, Stdout: out}}
	d, _ := newTestDispatcher(t, cfg, ex)
	r := d.Run(context.Background(), call(ToolRunPython, map[string]any{"code": "x"}))
	if n := utf8.RuneCountInString(r.Content); n > 500 || !utf8.ValidString(r.Content) {
		t.Fatalf("content %d chars, valid=%v", n, utf8.ValidString(r.Content))
	}
	if !strings.HasPrefix(r.Content, "status: ok") || !strings.HasSuffix(r.Content, "THE-END") || !strings.Contains(r.Content, "truncated") {
		t.Errorf("head/tail/marker: %q", r.Content)
	}
	if r.Sandbox.Stdout != out {
		t.Errorf("the sandbox result keeps the full (redacted) output")
	}
	// a secret straddling the cut is redacted before truncation
	cfg.MaxContentChars = 300
	sec := planted["openai_key"]
	ex.res.Stdout = strings.Repeat("a", 120) + sec + strings.Repeat("b", 400)
	d, _ = newTestDispatcher(t, cfg, ex)
	r = d.Run(context.Background(), call(ToolRunPython, map[string]any{"code": "x"}))
	if strings.Contains(r.Content, sec[:12]) {
		t.Errorf("partial secret survived truncation: %q", r.Content)
	}
}

func TestRefusalContentIsRedacted(t *testing.T) {
	d, _ := newTestDispatcher(t, redactConfig(), okExecutor())
	ctx := context.Background()
	key := planted["github_token"]
	for _, c := range []Call{
		{Name: key},
		call(ToolReadFile, map[string]any{"path": "/etc/" + key}),
		call(ToolExecuteShell, map[string]any{"command": "sudo " + key}),
		call(ToolWriteFile, map[string]any{"path": "a", "content": "x", "mode": key}),
	} {
		r := d.Run(ctx, c)
		if r.Status != StatusRejected {
			t.Fatalf("%s: not refused: %s", c.Name, r.Status)
		}
		if strings.Contains(r.Content, key) {
			t.Errorf("%s: refusal content leaks the key: %q", c.Name, r.Content)
		}
		for k, v := range r.Fields {
			if strings.Contains(v, key) {
				t.Errorf("%s: field %s leaks the key", c.Name, k)
			}
		}
	}
}

// TestHostMountPathNeverReturned: a result quoting the mounted host folder
// (as a sandbox refusal or a traceback would) names the input instead.
func TestHostMountPathNeverReturned(t *testing.T) {
	host := "/srv/customers/acme-private/sales"
	ex := &fakeExecutor{res: core.Result{Status: core.StatusRejected, Message: "mount " + host + ": no such file or directory",
		Stderr: "open " + host + "/x.csv", Warnings: []string{host}}}
	d, _ := newTestDispatcher(t, testConfig(), ex)
	c := call(ToolRunPython, map[string]any{"code": "1"})
	c.Mount, c.MountName = host, "sales"
	r := d.Run(context.Background(), c)
	all := r.Content + r.Sandbox.Message + r.Sandbox.Stderr + strings.Join(r.Sandbox.Warnings, "")
	if strings.Contains(all, "acme-private") || !strings.Contains(r.Sandbox.Message, "mount input folder sales: no such file") {
		t.Fatalf("host path in result: %q", all)
	}
	if ex.last(t).Mount != host {
		t.Fatal("the sandbox did not get the host path")
	}
}
