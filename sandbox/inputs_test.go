package sandbox

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"github.com/airlock-dev/airlock/internal/testscale"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
)

// privateTree makes dir/secret.txt (0600) and dir/sub/deep.txt (0600) in a
// 0700 folder owned by uid:gid, under a path that names a client.
func privateTree(t *testing.T, uid, gid int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "acme-confidential-"+newID())
	for _, d := range []string{dir, filepath.Join(dir, "sub")} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"secret.txt", "sub/deep.txt"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("content of "+f), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	_ = filepath.Walk(dir, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, uid, gid) })
	return dir
}

// untar lists a tar's entries as "name type [content or target]".
func untar(t *testing.T, data []byte) []string {
	t.Helper()
	var out []string
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("read the packed input: %v", err)
		}
		e := h.Name + " " + string(h.Typeflag)
		switch h.Typeflag {
		case tar.TypeReg:
			b, _ := io.ReadAll(tr)
			e += " " + string(b)
		case tar.TypeSymlink:
			e += " " + h.Linkname
		}
		out = append(out, e)
	}
}

// TestScanInput: an input folder is copied as its folders, files and the
// links that stay inside it; links leading out (whose target could name a
// host path) and special files are left out with a warning naming them
// relative to the folder; the bounds are refused naming them and never the
// folder's host path; a file that changes between scan and pack is refused.
func TestScanInput(t *testing.T) {
	dir := privateTree(t, 4242, 4243)
	for name, target := range map[string]string{"in-link": "sub/deep.txt", "abs-link": dir + "/secret.txt", "up-link": "../x", "dangling": "nothing"} {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := scanInput(dir, 100, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	data, err := s.pack()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"dangling 2 nothing", "in-link 2 sub/deep.txt", "secret.txt 0 content of secret.txt", "sub/ 5", "sub/deep.txt 0 content of sub/deep.txt"}
	if got := untar(t, data); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("packed %q, want %q", got, want)
	}
	if s.bytes != int64(len("content of secret.txt")+len("content of sub/deep.txt")) || s.pages != 2*tmpfsPage {
		t.Fatalf("bytes %d pages %d", s.bytes, s.pages)
	}
	w := strings.Join(s.warnings(), " ")
	for _, name := range []string{"abs-link", "up-link", "fifo"} {
		if !strings.Contains(w, name) {
			t.Errorf("warning %q does not name %s", w, name)
		}
	}
	if strings.Contains(w, dir) || strings.Contains(w, "acme") {
		t.Errorf("warning %q quotes the host path", w)
	}
	// The archive passes the controller's own rules (archive.go lists it as the controller unpacks it).
	if _, err := listArchive(data, archiveBounds{entries: DefaultInputMaxEntries, bytes: DefaultInputMaxBytes, ratio: ArchiveMaxRatio}); err != nil {
		t.Fatalf("the packed input breaks the archive rules: %v", err)
	}

	for _, tc := range []struct {
		entries int
		bytes   int64
		want    string
	}{
		{3, 1 << 20, "more than 3 entries"},
		{100, 3000, "packs to more than 3000 bytes"},
	} {
		_, err := scanInput(dir, tc.entries, tc.bytes)
		if !errors.Is(err, core.ErrInvalid) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "acme") {
			t.Errorf("bounds %d entries %d bytes: %v, want ErrInvalid naming %q and not the host path", tc.entries, tc.bytes, err, tc.want)
		}
	}
	deep := t.TempDir()
	if err := os.MkdirAll(filepath.Join(deep, strings.Repeat("d/", archiveMaxDepth+1)), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := scanInput(deep, 1000, 1<<20); !errors.Is(err, core.ErrInvalid) || !strings.Contains(err.Error(), "deeper than") {
		t.Errorf("a tree deeper than the archive bound: %v", err)
	}

	s, err = scanInput(dir, 100, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "secret.txt"), []byte("grown since the scan"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.pack(); !errors.Is(err, core.ErrInvalid) || !strings.Contains(err.Error(), `"secret.txt" changed`) {
		t.Fatalf("a file that changed between scan and pack: %v", err)
	}
}

// TestInputTooLarge: an input folder over the /workspace tmpfs, over what
// memory_bytes can hold, or packing past Config.InputMaxBytes (the default
// or a server's own) is refused before
// any container starts, naming the limit (and the server's maximum where a
// request may raise it), never the folder's host path.
func TestInputTooLarge(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "big.bin"), make([]byte, 3<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	huge := t.TempDir()
	if err := os.WriteFile(filepath.Join(huge, "sparse.bin"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(filepath.Join(huge, "sparse.bin"), DefaultInputMaxBytes); err != nil { // sparse: no disk used
		t.Fatal(err)
	}
	max := DefaultConfig().Max
	for _, tc := range []struct {
		dir      string
		lim      core.Limits
		maxBytes int64 // Config.InputMaxBytes; 0: the default
		want     []string
	}{
		{dir, core.Limits{TmpfsBytes: 2 << 20}, 0, []string{"tmpfs_bytes", strconv.FormatInt(max.TmpfsBytes, 10)}},
		{dir, core.Limits{Memory: 42 << 20}, 0, []string{"memory_bytes", strconv.FormatInt(max.Memory, 10)}},
		{huge, core.Limits{TmpfsBytes: 1 << 30, Memory: 1 << 30}, 0, []string{"packs to more than " + strconv.Itoa(DefaultInputMaxBytes), "--input-max-bytes"}},
		{dir, core.Limits{}, 1 << 20, []string{"packs to more than 1048576", "--input-max-bytes"}},
	} {
		f := &fakeDocker{}
		cfg := DefaultConfig()
		if tc.maxBytes > 0 {
			cfg.InputMaxBytes = tc.maxBytes
		}
		e := New(cfg, f, nil)
		res, err := e.Exec(context.Background(), core.Request{Language: core.Shell, Code: "true", Mount: tc.dir, Limits: tc.lim})
		if err != nil || res.Status != core.StatusRejected || strings.Contains(res.Message, tc.dir) {
			t.Fatalf("limits %+v: %+v %v", tc.lim, res, err)
		}
		for _, w := range tc.want {
			if !strings.Contains(res.Message, w) {
				t.Errorf("limits %+v: %q does not name %q", tc.lim, res.Message, w)
			}
		}
		if f.called("create") != 0 {
			t.Fatalf("a container was created for a refused input: %v", f.calls)
		}
	}
}

// TestInputFolderCopied (real Docker): private folders, of a non-root user
// and of root (0700/0600), reach /workspace whole in one-shot calls of both
// languages and in a session, as the container's own range uid (never the
// folder owner's); /workspace cannot be written through to the host; links
// out of the folder are not there and the result says so; a missing folder
// is refused without quoting its path.
func TestInputFolderCopied(t *testing.T) {
	t.Parallel() // functional: no timing or CPU assertion, containers of its own engine only
	e := newTestEngine(t, nil)
	for _, owner := range []int{4242, 0} {
		dir := privateTree(t, owner, owner)
		if err := os.Symlink("/etc/hostname", filepath.Join(dir, "abs-link")); err != nil {
			t.Fatal(err)
		}
		for _, lang := range []core.Language{core.Python, core.Shell} {
			r := run(t, e, core.Request{Language: lang, Mount: dir, Code: pyOrSh(lang,
				"import os\nprint(os.getuid(), open('/workspace/secret.txt').read(), open('/workspace/sub/deep.txt').read(), os.path.lexists('/workspace/abs-link'))\n"+
					"try:\n    open('/workspace/new.txt', 'w')\nexcept OSError as e:\n    print('refused', e.errno)",
				"echo $(id -u) $(cat /workspace/secret.txt) $(cat /workspace/sub/deep.txt) $(test -L /workspace/abs-link && echo True || echo False); "+
					"echo x > /workspace/new.txt 2>/dev/null && echo WROTE || echo refused")})
			uid, _, _ := strings.Cut(r.Stdout, " ")
			if r.Status != core.StatusOK || !strings.Contains(r.Stdout, "content of secret.txt content of sub/deep.txt False") ||
				!strings.Contains(r.Stdout, "refused") || !DefaultUIDRange.contains(atoiOr0(uid)) {
				t.Fatalf("%s, folder of uid %d: %s", lang, owner, brief(r))
			}
			if w := strings.Join(r.Warnings, " "); !strings.Contains(w, "abs-link") || strings.Contains(w, dir) {
				t.Errorf("%s: warnings %q, want abs-link named without the host path", lang, w)
			}
		}
		if _, err := os.Stat(filepath.Join(dir, "new.txt")); err == nil {
			t.Fatal("a call wrote into the host folder")
		}
	}
	dir := privateTree(t, 4242, 4242)
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(2*time.Minute))
	defer cancel()
	info, rej, err := e.OpenSession(ctx, core.Request{Owner: "o", Mount: dir})
	if err != nil || rej != nil {
		t.Fatalf("open: %v %+v", err, rej)
	}
	defer func() { _ = e.CloseSession("o", info.ID) }()
	// The input arrives with the first call and stays for the later ones.
	first := sessionRun(t, e, "o", info.ID, "x = open('/workspace/secret.txt').read()")
	if first.ExecutionCount != 1 {
		t.Errorf("the first session call has execution count %d, want 1", first.ExecutionCount)
	}
	if r := sessionRun(t, e, "o", info.ID, "print(x, open('/workspace/sub/deep.txt').read())"); r.Stdout != "content of secret.txt content of sub/deep.txt\n" {
		t.Fatalf("session: %s", brief(r))
	}
	missing := filepath.Join(dir, "missing")
	r := run(t, e, core.Request{Language: core.Shell, Mount: missing, Code: "true"})
	if r.Status != core.StatusRejected || !strings.Contains(r.Message, "does not exist") || strings.Contains(r.Message, dir) {
		t.Fatalf("missing folder: %s", brief(r))
	}
}

// TestNoInputHostPath (issue 26): nothing in a sandbox's mount tables names
// the input folder's host path, from run_python and execute_shell, in
// one-shot calls (cold and warm) and in sessions: /proc/self/mountinfo and
// /proc/self/mounts are read, and the folder's content is there to prove it
// was given. The cgroup lines carry no container id either.
func TestNoInputHostPath(t *testing.T) {
	t.Parallel() // functional: no timing or CPU assertion, containers of its own engine only
	cold := newTestEngine(t, nil)
	warm := pooledEngine(t, nil)
	parent := filepath.Join(t.TempDir(), "clients")
	dir := filepath.Join(parent, "acme-confidential-merger-"+newID())
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "marker.txt"), []byte("given"), 0o644); err != nil {
		t.Fatal(err)
	}
	const sh = "cat /workspace/marker.txt; echo; cat /proc/self/mountinfo /proc/self/mounts; echo ===; cat /proc/self/cgroup"
	const py = "import sys\nprint(open('/workspace/marker.txt').read())\nfor f in ('/proc/self/mountinfo', '/proc/self/mounts'):\n    sys.stdout.write(open(f).read())\nprint('===')\n_ = sys.stdout.write(open('/proc/self/cgroup').read())"
	check := func(t *testing.T, r core.Result) {
		t.Helper()
		if r.Status != core.StatusOK || !strings.HasPrefix(r.Stdout, "given\n") {
			t.Fatalf("the input did not arrive: %s", brief(r))
		}
		mounts, cgroup, _ := strings.Cut(r.Stdout, "===")
		for _, line := range strings.Split(mounts, "\n") {
			if strings.Contains(line, filepath.Base(dir)) || strings.Contains(line, parent) || strings.Contains(line, "acme") {
				t.Errorf("a mount line names the input's host path: %q", line)
			}
			if f := strings.Fields(line); len(f) > 4 && f[4] == WorkspacePath && f[3] != "/" {
				t.Errorf("/workspace's root field is %q, want / (a tmpfs of its own)", f[3])
			}
			if f := strings.Fields(line); len(f) > 4 && strings.HasPrefix(f[4], "/sys/fs/cgroup") && f[3] != "/" {
				t.Errorf("cgroup mount shows a host cgroup path: %q", line)
			}
		}
		for _, line := range strings.Split(strings.TrimSpace(cgroup), "\n") {
			if parts := strings.SplitN(line, ":", 3); len(parts) != 3 || parts[2] != "/" {
				t.Errorf("/proc/self/cgroup shows a host path: %q", line)
			}
		}
	}
	for _, lang := range []core.Language{core.Python, core.Shell} {
		code := pyOrSh(lang, py, sh)
		t.Run(string(lang)+"/one-shot", func(t *testing.T) {
			check(t, run(t, cold, core.Request{Language: lang, Mount: dir, Code: code}))
		})
		t.Run(string(lang)+"/warm", func(t *testing.T) {
			r := run(t, warm, core.Request{Owner: "o", Language: lang, Mount: dir, Code: code})
			check(t, r)
			if src := warm.WarmStats(); src["cold"] != 0 {
				t.Errorf("an input call did not run warm: %v", src)
			}
		})
		t.Run(string(lang)+"/session", func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), testscale.D(2*time.Minute))
			defer cancel()
			info, rej, err := cold.OpenSession(ctx, core.Request{Owner: "o", Mount: dir})
			if err != nil || rej != nil {
				t.Fatalf("open: %v %+v", err, rej)
			}
			defer func() { _ = cold.CloseSession("o", info.ID) }()
			r, err := cold.SessionExec(ctx, core.Request{Owner: "o", SessionID: info.ID, Language: lang, Code: code})
			if err != nil {
				t.Fatal(err)
			}
			check(t, r)
		})
	}
}

func pyOrSh(l core.Language, py, sh string) string {
	if l == core.Python {
		return py
	}
	return sh
}
