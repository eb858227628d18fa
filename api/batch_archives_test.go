package api

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"fmt"
	"github.com/airlock-dev/airlock/internal/testscale"
	"mime/multipart"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
)

// archiveForm is a multipart batch body: a spec and archives.
func archiveForm(t *testing.T, archives map[string][]byte, order ...string) (string, []byte) {
	t.Helper()
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	_ = mw.WriteField("spec", `{"tool_call":{"type":"function","function":{"name":"execute_shell","arguments":{"command":"cat /workspace/a.txt"}}}}`)
	for _, name := range order {
		fw, err := mw.CreateFormFile("archive", name)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = fw.Write(archives[name])
	}
	_ = mw.Close()
	return mw.FormDataContentType(), b.Bytes()
}

func tarOf(t *testing.T, gz bool, entries ...*tar.Header) []byte {
	t.Helper()
	var b bytes.Buffer
	var w = &b
	var zw *gzip.Writer
	tw := tar.NewWriter(w)
	if gz {
		zw = gzip.NewWriter(w)
		tw = tar.NewWriter(zw)
	}
	for _, h := range entries {
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			_, _ = tw.Write(bytes.Repeat([]byte("a"), int(h.Size)))
		}
	}
	_ = tw.Close()
	if zw != nil {
		_ = zw.Close()
	}
	return b.Bytes()
}

func zipOf(t *testing.T, names ...string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for _, n := range names {
		w, _ := zw.Create(n)
		_, _ = w.Write([]byte("x"))
	}
	_ = zw.Close()
	return b.Bytes()
}

func tempEntries(t *testing.T, dir string) int {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return len(es)
}

// TestBatchArchivesStayOffTheHost: uploaded archives are checked up front
// (400 naming the archive and the entry; 413 naming the limit), then kept
// in the state store and sent as each item's Archive byte for byte; no
// folder or file is left in the temp dir.
func TestBatchArchivesStayOffTheHost(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	h := newHarness(t, nil)
	good := tarOf(t, true, &tar.Header{Name: "a.txt", Typeflag: tar.TypeReg, Size: 3, Mode: 0o644})
	other := zipOf(t, "a.txt", "dir/b.txt")
	before := tempEntries(t, tmp)
	ct, body := archiveForm(t, map[string][]byte{"good.tar.gz": good, "other.zip": other}, "good.tar.gz", "other.zip")
	id := h.do(keyAlice, "POST", "/v1/batches", body, "Content-Type", ct).must(t, 201).JSON(t)["id"].(string)
	for deadline := time.Now().Add(testscale.D(10 * time.Second)); h.do(keyAlice, "GET", "/v1/batches/"+id, nil).JSON(t)["status"] != "completed"; {
		if time.Now().After(deadline) {
			t.Fatal("the archive batch did not complete")
		}
		time.Sleep(20 * time.Millisecond)
	}
	sent := map[string][]byte{}
	h.disp.mu.Lock()
	for _, c := range h.disp.calls {
		if c.Mount != "" {
			t.Errorf("an archive item was mounted from %s", c.Mount)
		}
		sent[c.IdempotencyKey] = c.Archive
	}
	h.disp.mu.Unlock()
	if !bytes.Equal(sent[id+"/archive-0/1"], good) || !bytes.Equal(sent[id+"/archive-1/1"], other) {
		t.Errorf("archives sent as %d and %d bytes, want the uploaded %d and %d", len(sent[id+"/archive-0/1"]), len(sent[id+"/archive-1/1"]), len(good), len(other))
	}
	if n := tempEntries(t, tmp); n != before {
		t.Errorf("the temp dir went from %d to %d entries", before, n)
	}

	bad := []struct {
		name string
		data []byte
		want string
	}{
		{"slip.zip", zipOf(t, "ok.txt", "../../evil.py"), `archive 1 (slip.zip): entry "../../evil.py" escapes the archive (path traversal)`},
		{"abs.tar", tarOf(t, false, &tar.Header{Name: "/etc/cron.d/x", Typeflag: tar.TypeReg, Size: 1}), `archive 1 (abs.tar): entry "/etc/cron.d/x" has an absolute path`},
		{"link.tar", tarOf(t, false, &tar.Header{Name: "l", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"}), `archive 1 (link.tar): entry "l" is not a regular file or folder`},
		{"bomb.tar.gz", tarOf(t, true, &tar.Header{Name: "zeros", Typeflag: tar.TypeReg, Size: 20 << 20, Mode: 0o644}), `archive 1 (bomb.tar.gz): entry "zeros": uncompressed size is over the limit`},
	}
	for _, c := range bad {
		ct, body := archiveForm(t, map[string][]byte{"good.tar.gz": good, c.name: c.data}, "good.tar.gz", c.name)
		r := h.do(keyAlice, "POST", "/v1/batches", body, "Content-Type", ct)
		msg, _ := r.JSON(t)["error"].(map[string]any)["message"].(string)
		if r.Code != 400 || !strings.Contains(msg, c.want) {
			t.Errorf("%s: %d %s, want 400 saying %s", c.name, r.Code, r.Body, c.want)
		}
	}
	huge := make([]byte, core.MaxArchiveBytes+1)
	ct, body = archiveForm(t, map[string][]byte{"huge.tar": huge}, "huge.tar")
	r := h.do(keyAlice, "POST", "/v1/batches", body, "Content-Type", ct)
	if msg, _ := r.JSON(t)["error"].(map[string]any)["message"].(string); r.Code != 413 || !strings.Contains(msg, fmt.Sprint(core.MaxArchiveBytes)) || !strings.Contains(msg, "archive 0 (huge.tar)") {
		t.Errorf("oversized archive: %d %s", r.Code, r.Body)
	}
	if n := tempEntries(t, tmp); n != before {
		t.Errorf("the temp dir went from %d to %d entries after refused uploads", before, n)
	}
}
