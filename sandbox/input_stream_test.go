package sandbox

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/airlock-dev/airlock/core"
	"github.com/docker/docker/api/types/container"
)

// streamFake is a fake Docker whose controller takes streamed inputs: it
// records every request and answers stage ops with fail when refuse is set.
func streamFake(refuse string) (*fakeDocker, func() []ctlRequest) {
	var mu sync.Mutex
	var reqs []ctlRequest
	f := &fakeDocker{
		create: func(*container.Config, *container.HostConfig) (container.CreateResponse, error) {
			return container.CreateResponse{ID: "c1"}, nil
		},
		serve: fakeControllerWith([]string{featureArchive, featureArchiveStream}, func(req ctlRequest) []ctlFrame {
			mu.Lock()
			reqs = append(reqs, req)
			mu.Unlock()
			switch {
			case req.Op == "stage" && refuse != "" && !req.Abort:
				return []ctlFrame{{T: "done", Fail: refuse, Code: string(core.ErrInvalid)}}
			case req.Op == "stage":
				return []ctlFrame{{T: "done", Size: req.Offset + int64(len(req.Data))}}
			}
			return []ctlFrame{{T: "done", Status: "ok"}}
		}),
		start: func(string) error { return nil },
	}
	return f, func() []ctlRequest { mu.Lock(); defer mu.Unlock(); return append([]ctlRequest(nil), reqs...) }
}

// TestInputStreamedInChunks: an input folder over core.MaxArchiveBytes
// reaches the controller as stage requests of at most inputChunk bytes,
// in order, the first announcing a size bound and the server's input
// bounds, together a tar of the folder; the exec names the bytes staged
// and carries no archive of its own. The folder is never held whole.
func TestInputStreamedInChunks(t *testing.T) {
	dir := t.TempDir()
	big := bytes.Repeat([]byte("0123456789abcdef"), (core.MaxArchiveBytes+3<<20)/16) // 19 MiB
	if err := os.WriteFile(filepath.Join(dir, "big.bin"), big, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sub", "é-"+strings.Repeat("n", 150)+".txt"), []byte("small"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, reqs := streamFake("")
	cfg := DefaultConfig()
	cfg.InputMaxEntries = 50
	e := newFakeEngine(cfg, f)
	res, err := e.Exec(context.Background(), core.Request{Language: core.Shell, Code: "true", Mount: dir,
		Limits: core.Limits{Memory: 128 << 20}})
	e.Settle()
	if err != nil || res.Status != core.StatusOK {
		t.Fatalf("exec: %+v %v", res, err)
	}
	var tarball bytes.Buffer
	var exec *ctlRequest
	all := reqs()
	for i, r := range all {
		switch r.Op {
		case "stage":
			if r.Offset != int64(tarball.Len()) || len(r.Data) == 0 || len(r.Data) > inputChunk {
				t.Fatalf("stage %d: offset %d, %d bytes, after %d staged", i, r.Offset, len(r.Data), tarball.Len())
			}
			if i == 0 && (r.ArchiveSize < int64(len(big)) || r.ArchiveMaxEntries != 50 || r.ArchiveMaxBytes != DefaultInputMaxBytes) {
				t.Fatalf("first stage: size %d, bounds %d %d", r.ArchiveSize, r.ArchiveMaxEntries, r.ArchiveMaxBytes)
			}
			tarball.Write(r.Data)
		case "exec":
			exec = &all[i]
		}
	}
	if exec == nil || exec.ArchiveStream != int64(tarball.Len()) || len(exec.Archive) != 0 || all[len(all)-1].Op != "exec" {
		t.Fatalf("exec after %d staged bytes: %+v", tarball.Len(), exec)
	}
	if n := int64(tarball.Len()); n > all[0].ArchiveSize {
		t.Fatalf("sent %d bytes, over the announced %d", n, all[0].ArchiveSize)
	}
	tr := tar.NewReader(&tarball)
	got := map[string]int{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		got[h.Name] = len(b)
	}
	if got["big.bin"] != len(big) || got["sub/é-"+strings.Repeat("n", 150)+".txt"] != 5 || len(got) != 3 {
		t.Fatalf("the staged tar holds %v", got)
	}
}

// TestInputStreamRefused: a chunk the controller refuses ends the copy at
// once with the controller's reason and code (nothing more is staged, the
// code never runs).
func TestInputStreamRefused(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "big.bin"), make([]byte, 3<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	f, reqs := streamFake(`archive entry "big.bin": does not fit in /workspace`)
	e := newFakeEngine(DefaultConfig(), f)
	_, err := e.Exec(context.Background(), core.Request{Language: core.Shell, Code: "true", Mount: dir})
	e.Settle()
	if core.CodeOf(err) != core.ErrInvalid || !strings.Contains(err.Error(), "does not fit in /workspace") {
		t.Fatalf("exec: %v", err)
	}
	var stages, execs int
	for _, r := range reqs() {
		switch {
		case r.Op == "stage" && !r.Abort:
			stages++
		case r.Op == "exec":
			execs++
		}
	}
	if stages != 1 || execs != 0 {
		t.Fatalf("%d stages and %d execs after a refused first chunk", stages, execs)
	}
}
