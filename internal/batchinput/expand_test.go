package batchinput

import (
	"archive/zip"
	"bytes"
	"errors"
	"mime/multipart"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/dispatcher"
	"github.com/airlock-dev/airlock/wire"
)

// tree makes an input folder: repo-a, repo-b (folders), repo-c (a file),
// repo-d (a link to a folder inside), repo-e (a link out of it).
func tree(t *testing.T) string {
	t.Helper()
	base := t.TempDir()
	root := filepath.Join(base, "repos")
	for _, d := range []string{"repo-a", "repo-b", "inner"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "repo-c"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(base, "secret"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "inner"), filepath.Join(root, "repo-d")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(base, "secret"), filepath.Join(root, "repo-e")); err != nil {
		t.Fatal(err)
	}
	return root
}

func TestFolders(t *testing.T) {
	root := tree(t)
	got, err := Folders(root, "repos", "repo-*", 100)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, f := range got {
		ids = append(ids, f.ID)
		if !strings.HasPrefix(f.Path, root) || f.Name != "repos/"+f.ID {
			t.Errorf("folder %+v", f)
		}
	}
	if !reflect.DeepEqual(ids, []string{"repo-a", "repo-b", "repo-d"}) {
		t.Fatalf("folders %v: want the two folders and the link inside, not the file or the link out", ids)
	}
	if got[2].Path != filepath.Join(root, "inner") {
		t.Errorf("the link is mounted as %s, not its target", got[2].Path)
	}
	for each, code := range map[string]core.Code{"../*": core.ErrInvalid, "/etc": core.ErrInvalid, "[": core.ErrInvalid,
		"nothing-*": core.ErrInvalid, "repo-*/": core.ErrTooLarge} {
		max := 100
		if code == core.ErrTooLarge {
			max = 1
		}
		if _, err := Folders(root, "repos", each, max); !errors.Is(err, code) {
			t.Errorf("each %q: %v, want %s", each, err, code)
		}
	}
}

func TestExpand(t *testing.T) {
	root := tree(t)
	tmpl := dispatcher.Call{Name: "execute_shell", Owner: "alice"}
	resolve := func(name string) (string, error) {
		if name != "repos" {
			return "", errors.New("unknown")
		}
		return root, nil
	}
	spec, err := Expand(wire.BatchMapSpec{Each: "repo-*", Input: "repos", CompletionWindow: "2h", Concurrency: 3}, tmpl, resolve, nil, 10)
	if err != nil || len(spec.Items) != 3 || spec.CompletionWindow.Hours() != 2 || spec.Concurrency != 3 {
		t.Fatalf("%+v %v", spec, err)
	}
	if c := spec.Items[1].Call; c.Mount != filepath.Join(root, "repo-b") || c.MountName != "repos/repo-b" || c.Name != "execute_shell" {
		t.Errorf("item call %+v", c)
	}
	arcs, err := Expand(wire.BatchMapSpec{}, tmpl, resolve, [][]byte{{1}, {2}}, 10)
	if err != nil || len(arcs.Items) != 2 || arcs.Items[1].Archive != 2 || arcs.Items[1].CustomID != "archive-1" {
		t.Fatalf("archives: %+v %v", arcs, err)
	}
	for name, c := range map[string]struct {
		m    wire.BatchMapSpec
		tmpl dispatcher.Call
		arcs [][]byte
	}{
		"each with archives": {wire.BatchMapSpec{Each: "x"}, tmpl, [][]byte{{1}}},
		"no input":           {wire.BatchMapSpec{Each: "x"}, tmpl, nil},
		"template mount":     {wire.BatchMapSpec{Each: "x", Input: "repos"}, dispatcher.Call{Mount: "/srv"}, nil},
		"bad window":         {wire.BatchMapSpec{Each: "x", Input: "repos", CompletionWindow: "soon"}, tmpl, nil},
	} {
		if _, err := Expand(c.m, c.tmpl, resolve, c.arcs, 10); !errors.Is(err, core.ErrInvalid) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestReadArchives(t *testing.T) {
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	w, _ := zw.Create("../evil.txt")
	_, _ = w.Write([]byte("x"))
	_ = zw.Close()
	var form bytes.Buffer
	mw := multipart.NewWriter(&form)
	for name, data := range map[string][]byte{"evil.zip": b.Bytes()} {
		fw, _ := mw.CreateFormFile("archive", name)
		_, _ = fw.Write(data)
	}
	_ = mw.Close()
	f, err := multipart.NewReader(&form, mw.Boundary()).ReadForm(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	_, err = ReadArchives(f.File["archive"])
	if !errors.Is(err, core.ErrInvalid) || !strings.Contains(err.Error(), "archive 0 (evil.zip)") || !strings.Contains(err.Error(), "path traversal") {
		t.Fatalf("traversal: %v", err)
	}
	big := &multipart.FileHeader{Filename: "big.tar", Size: core.MaxArchiveBytes + 1}
	if _, err := ReadArchives([]*multipart.FileHeader{big}); !errors.Is(err, core.ErrTooLarge) || !strings.Contains(err.Error(), "archive 0 (big.tar) is over") {
		t.Fatalf("too large: %v", err)
	}
}
