package api

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"mime/multipart"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/airlock-dev/airlock/core"
)

// Bounds of an uploaded batch archive.
const (
	archiveMaxEntries = 10000
	archiveMaxBytes   = 256 << 20 // uncompressed, per archive
	archiveMaxRatio   = 200       // uncompressed / compressed
)

// extractArchives checks and unpacks uploaded tar/zip archives, one folder
// each, to be mounted read-only at /workspace of their item. Absolute
// paths, "..", links and devices, too many entries, too many bytes or a
// bomb's compression ratio are refused with 400 before any item runs.
func (s *Server) extractArchives(files []*multipart.FileHeader) ([]string, error) {
	var dirs []string
	cleanup := func() {
		for _, d := range dirs {
			_ = os.RemoveAll(d)
		}
	}
	for i, fh := range files {
		f, err := fh.Open()
		if err != nil {
			cleanup()
			return nil, newError(core.ErrInvalid, "could not read an uploaded archive")
		}
		data, err := io.ReadAll(f)
		_ = f.Close()
		if err != nil {
			cleanup()
			return nil, newError(core.ErrInvalid, "could not read an uploaded archive")
		}
		dir, err := os.MkdirTemp("", "airlock-batch-archive-")
		if err != nil {
			cleanup()
			return nil, core.E("batch.archive", core.ErrInternal, err)
		}
		dirs = append(dirs, dir)
		if err := unpack(data, dir); err != nil {
			cleanup()
			return nil, newError(core.ErrInvalid, fmt.Sprintf("archive %d (%s): %v", i, fh.Filename, err))
		}
	}
	return dirs, nil
}

// safeName checks an archive entry name and returns it cleaned.
func safeName(name string) (string, error) {
	n := strings.ReplaceAll(name, "\\", "/")
	if strings.HasPrefix(n, "/") || filepath.IsAbs(name) || (len(n) > 1 && n[1] == ':') {
		return "", fmt.Errorf("entry %q has an absolute path", name)
	}
	for _, part := range strings.Split(n, "/") {
		if part == ".." {
			return "", fmt.Errorf("entry %q escapes the archive (path traversal)", name)
		}
	}
	c := path.Clean(n)
	if c == "." || c == "" {
		return "", nil
	}
	return c, nil
}

func unpack(data []byte, dir string) error {
	if len(data) >= 4 && bytes.Equal(data[:4], []byte("PK\x03\x04")) {
		return unzip(data, dir)
	}
	var r io.Reader = bytes.NewReader(data)
	if len(data) >= 2 && data[0] == 0x1f && data[1] == 0x8b {
		gz, err := gzip.NewReader(r)
		if err != nil {
			return fmt.Errorf("not a gzip stream: %v", err)
		}
		r = gz
	}
	return untar(r, dir, int64(len(data)))
}

func budget(compressed int64) int64 {
	b := compressed * archiveMaxRatio
	if b > archiveMaxBytes || b <= 0 {
		b = archiveMaxBytes
	}
	return b
}

func unzip(data []byte, dir string) error {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return fmt.Errorf("not a zip archive: %v", err)
	}
	if len(zr.File) > archiveMaxEntries {
		return fmt.Errorf("over %d entries", archiveMaxEntries)
	}
	left := budget(int64(len(data)))
	for _, zf := range zr.File {
		if _, err := safeName(zf.Name); err != nil {
			return err
		}
		if zf.Mode()&os.ModeSymlink != 0 || (!zf.Mode().IsRegular() && !zf.FileInfo().IsDir()) {
			return fmt.Errorf("entry %q is not a regular file or folder", zf.Name)
		}
		if int64(zf.UncompressedSize64) > left {
			return fmt.Errorf("uncompressed size is over the limit (a bomb?)")
		}
	}
	for _, zf := range zr.File {
		name, _ := safeName(zf.Name)
		if name == "" {
			continue
		}
		dst := filepath.Join(dir, filepath.FromSlash(name))
		if zf.FileInfo().IsDir() {
			if err := os.MkdirAll(dst, 0o755); err != nil {
				return err
			}
			continue
		}
		rc, err := zf.Open()
		if err != nil {
			return fmt.Errorf("entry %q: %v", zf.Name, err)
		}
		n, err := writeEntry(dst, rc, left)
		_ = rc.Close()
		if err != nil {
			return err
		}
		left -= n
	}
	return nil
}

func untar(r io.Reader, dir string, compressed int64) error {
	tr := tar.NewReader(r)
	left := budget(compressed)
	for n := 0; ; n++ {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("not a tar archive: %v", err)
		}
		if n >= archiveMaxEntries {
			return fmt.Errorf("over %d entries", archiveMaxEntries)
		}
		name, err := safeName(h.Name)
		if err != nil {
			return err
		}
		if name == "" {
			continue
		}
		dst := filepath.Join(dir, filepath.FromSlash(name))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(dst, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if h.Size > left {
				return fmt.Errorf("uncompressed size is over the limit (a bomb?)")
			}
			w, err := writeEntry(dst, tr, left)
			if err != nil {
				return err
			}
			left -= w
		default:
			return fmt.Errorf("entry %q is not a regular file or folder", h.Name)
		}
	}
}

// writeEntry copies at most left bytes of r to dst.
func writeEntry(dst string, r io.Reader, left int64) (int64, error) {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return 0, err
	}
	f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o644)
	if err != nil {
		return 0, fmt.Errorf("entry %s: %v", filepath.Base(dst), err)
	}
	n, err := io.Copy(f, io.LimitReader(r, left+1))
	_ = f.Close()
	if err != nil {
		return n, err
	}
	if n > left {
		return n, fmt.Errorf("uncompressed size is over the limit (a bomb?)")
	}
	return n, nil
}
