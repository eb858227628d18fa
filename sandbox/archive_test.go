package sandbox

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"errors"
	"io/fs"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/core"
)

// arEntry is one entry of a test archive.
type arEntry struct {
	name string
	data string
	kind byte // tar type flag; 0 means a regular file
	link string
	size int64 // declared size when data is empty (bombs)
}

// makeTar builds a tar (gzip-compressed when gz) of entries.
func makeTar(t testing.TB, gz bool, entries ...arEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	var zw *gzip.Writer
	w := &buf
	tw := tar.NewWriter(w)
	if gz {
		zw = gzip.NewWriter(w)
		tw = tar.NewWriter(zw)
	}
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: 0o644, Typeflag: e.kind, Linkname: e.link, Format: tar.FormatPAX}
		if e.kind == 0 {
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(e.data))
			if e.size > 0 {
				h.Size = e.size
			}
		}
		if e.kind == tar.TypeDir {
			h.Mode = 0o755
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatalf("tar header %q: %v", e.name, err)
		}
		if h.Typeflag == tar.TypeReg {
			if e.size > 0 {
				zero := make([]byte, 1<<20)
				for left := e.size; left > 0; left -= int64(len(zero)) {
					if _, err := tw.Write(zero[:min(left, int64(len(zero)))]); err != nil {
						t.Fatal(err)
					}
				}
			} else if _, err := tw.Write([]byte(e.data)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if zw != nil {
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

// makeZip builds a deflated zip; an entry with kind TypeSymlink becomes a
// Unix symlink (its link is the content), TypeDir a folder.
func makeZip(t testing.TB, entries ...arEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range entries {
		h := &zip.FileHeader{Name: e.name, Method: zip.Deflate}
		data := e.data
		switch e.kind {
		case tar.TypeSymlink:
			h.SetMode(fs.ModeSymlink | 0o777)
			data = e.link
		case tar.TypeDir:
			h.SetMode(fs.ModeDir | 0o755)
		case tar.TypeChar:
			h.SetMode(fs.ModeDevice | fs.ModeCharDevice | 0o644)
		default:
			h.SetMode(0o644)
		}
		w, err := zw.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		if e.size > 0 {
			zero := make([]byte, 1<<20)
			for left := e.size; left > 0; left -= int64(len(zero)) {
				if _, err := w.Write(zero[:min(left, int64(len(zero)))]); err != nil {
					t.Fatal(err)
				}
			}
		} else if _, err := w.Write([]byte(data)); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func defaultBounds() archiveBounds {
	return archiveBounds{entries: ArchiveMaxEntries, bytes: ArchiveMaxBytes, ratio: ArchiveMaxRatio}
}

// TestListArchive: the host-side listing accepts ordinary archives in the
// three formats and refuses each attack with ErrInvalid naming the entry.
func TestListArchive(t *testing.T) {
	ok := []arEntry{{name: "src/", kind: tar.TypeDir}, {name: "src/a.py", data: "print(1)\n"},
		{name: "./README", data: "hi"}, {name: "src/link", kind: tar.TypeSymlink, link: "a.py"},
		{name: "hard", kind: tar.TypeLink, link: "src/a.py"}}
	for _, tc := range []struct {
		name string
		data []byte
		want string // "" accepts; else a substring of the refusal
	}{
		{"tar", makeTar(t, false, ok...), ""},
		{"tar.gz", makeTar(t, true, ok...), ""},
		{"zip", makeZip(t, ok[:4]...), ""},
		{"empty tar", makeTar(t, false), ""},
		{"zip slip", makeTar(t, false, arEntry{name: "../evil", data: "x"}), `"../evil"`},
		{"inner slip", makeTar(t, true, arEntry{name: "a/../../evil", data: "x"}), `"a/../../evil"`},
		{"absolute", makeTar(t, false, arEntry{name: "/etc/evil", data: "x"}), `"/etc/evil": absolute`},
		{"symlink out", makeTar(t, false, arEntry{name: "d/l", kind: tar.TypeSymlink, link: "../../etc"}), `"d/l": the link points outside`},
		{"symlink abs", makeTar(t, false, arEntry{name: "l", kind: tar.TypeSymlink, link: "/etc/passwd"}), `"l": the link points outside`},
		{"hardlink out", makeTar(t, false, arEntry{name: "h", kind: tar.TypeLink, link: "../x"}), `"h": the hard link points outside`},
		{"hardlink to nothing", makeTar(t, false, arEntry{name: "h", kind: tar.TypeLink, link: "etc/passwd"}), `"h": a hard link must point`},
		{"device", makeTar(t, false, arEntry{name: "null", kind: tar.TypeChar}), `"null": devices`},
		{"fifo", makeTar(t, false, arEntry{name: "p", kind: tar.TypeFifo}), `"p": FIFOs`},
		{"duplicate", makeTar(t, false, arEntry{name: "f", data: "1"}, arEntry{name: "./f", data: "2"}), `"./f": the path appears twice`},
		{"bomb tar.gz", makeTar(t, true, arEntry{name: "zeros", size: 4 << 20}), `"zeros": the archive unpacks to more than 200 times`},
		{"bomb zip", makeZip(t, arEntry{name: "zeros", size: 4 << 20}), `"zeros": the archive unpacks to more than 200 times`},
		{"zip slip zip", makeZip(t, arEntry{name: "../evil", data: "x"}), `"../evil"`},
		{"zip symlink out", makeZip(t, arEntry{name: "l", kind: tar.TypeSymlink, link: "../../etc/passwd"}), `"l": the link points outside`},
		{"symlink chain", makeTar(t, false, arEntry{name: "a", kind: tar.TypeSymlink, link: "."}, arEntry{name: "b", kind: tar.TypeSymlink, link: "a/../x"}), `"b": the link points outside /workspace (through other links)`},
		{"write through a link", makeTar(t, false, arEntry{name: "d", kind: tar.TypeSymlink, link: "e"}, arEntry{name: "d/x", data: "1"}), `"d/x": its folder "d" is a link`},
		{"file then folder", makeTar(t, false, arEntry{name: "f", data: "1"}, arEntry{name: "f/", kind: tar.TypeDir}), `"f/": a file or link of the same name`},
		{"inner link ok", makeTar(t, false, arEntry{name: "a/b/c", data: "1"}, arEntry{name: "a/l", kind: tar.TypeSymlink, link: "b/../b/c"}, arEntry{name: "m", kind: tar.TypeSymlink, link: "a/l"}), ""},
		{"zip device", makeZip(t, arEntry{name: "null", kind: tar.TypeChar}), `"null": devices`},
		{"xz", []byte("\xfd7zXZ\x00rest"), "xz-compressed"},
		{"garbage", bytes.Repeat([]byte("not an archive "), 100), "not a valid tar"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sum, err := listArchive(tc.data, defaultBounds())
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused an ordinary archive: %v", err)
				}
				return
			}
			if !errors.Is(err, core.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v (summary %+v), want ErrInvalid containing %q", err, sum, tc.want)
			}
		})
	}
	many := make([]arEntry, ArchiveMaxEntries+1)
	for i := range many {
		many[i] = arEntry{name: "f" + itoa(i)}
	}
	if _, err := listArchive(makeTar(t, false, many...), defaultBounds()); !errors.Is(err, core.ErrInvalid) || !strings.Contains(err.Error(), `"f10000": the archive has more than 10000 entries`) {
		t.Fatalf("10,001 entries: %v", err)
	}
	sum, err := listArchive(makeTar(t, false, ok...), defaultBounds())
	if err != nil || sum.Entries != len(ok) || sum.Bytes != int64(len("print(1)\n")+2) || sum.Format != "tar" {
		t.Fatalf("summary %+v, %v", sum, err)
	}
}

// TestArchiveRequest: size, mount and session refusals come before any
// container is looked at.
func TestArchiveRequest(t *testing.T) {
	small := []byte("PK\x05\x06" + strings.Repeat("\x00", 18))
	if err := archiveRequest(core.Request{Archive: make([]byte, core.MaxArchiveBytes+1)}); !errors.Is(err, core.ErrTooLarge) {
		t.Fatalf("oversize archive: %v", err)
	}
	if err := archiveRequest(core.Request{Archive: small, Mount: "/srv/in"}); !errors.Is(err, core.ErrInvalid) || !strings.Contains(err.Error(), "not both") {
		t.Fatalf("mount and archive: %v", err)
	}
	if err := archiveRequest(core.Request{Archive: small, SessionID: "s-1"}); !errors.Is(err, core.ErrInvalid) {
		t.Fatalf("archive in a session: %v", err)
	}
	if err := archiveRequest(core.Request{Archive: small}); err != nil {
		t.Fatalf("plain archive call: %v", err)
	}
}

// TestWorkspaceTmpfs: every container gets its own size-capped,
// noexec/nosuid/nodev /workspace owned by its uid, and no host path is
// mounted into it (binds or mounts) but its link's socket, whatever the
// call's input.
func TestWorkspaceTmpfs(t *testing.T) {
	t.Parallel() // functional: no timing or CPU assertion, containers of its own engine only
	lim := DefaultConfig().Defaults
	s := containerSpec{Limits: lim, Identity: identity{UID: 70123, GID: 70123}, Link: "/run/airlock-link/link-x/link.sock"}
	cfg, host := s.build()
	ws := host.Tmpfs[WorkspacePath]
	for _, opt := range []string{"noexec", "nosuid", "nodev", "size=" + itoa(int(lim.TmpfsBytes)), "uid=70123", "gid=70123", "mode=0555"} {
		if !strings.Contains(ws, opt) {
			t.Fatalf("/workspace tmpfs %q lacks %s", ws, opt)
		}
	}
	if len(host.Binds) != 0 || len(host.Mounts) != 1 || host.Mounts[0].Target != LinkPath || !host.Mounts[0].ReadOnly || len(cfg.Volumes) != 0 {
		t.Fatalf("a container mounts host paths: binds %v mounts %v volumes %v", host.Binds, host.Mounts, cfg.Volumes)
	}
	if cfg.StdinOnce || cfg.OpenStdin || cfg.AttachStdin || cfg.AttachStdout || !host.AutoRemove || host.Init == nil || *host.Init ||
		strings.Join(cfg.Entrypoint, " ") != "python3 "+RunnerPath || len(cfg.Cmd) != 0 {
		t.Fatalf("the container does not run the controller as pid 1 on its link (no stdin): entrypoint %v cmd %v open-stdin %v auto-remove %v init %v",
			cfg.Entrypoint, cfg.Cmd, cfg.OpenStdin, host.AutoRemove, host.Init)
	}
}
