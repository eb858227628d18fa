package batchinput

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"errors"
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

// ReadArchives reads and checks uploaded archives, one batch item each:
// nothing is unpacked on the host, the bytes are kept in the state store
// under the batch and unpacked inside each item's sandbox. An archive over
// core.MaxArchiveBytes is too_large; one that cannot be read, absolute
// paths, "..", links and devices, too many entries, too many bytes or a
// bomb's compression ratio are bad_request naming the archive (its number
// and file name) and the entry.
func ReadArchives(files []*multipart.FileHeader) ([][]byte, error) {
	var out [][]byte
	for i, fh := range files {
		data, err := readArchive(fh)
		switch {
		case errors.Is(err, errOverSize):
			return nil, core.Errorf("", core.ErrTooLarge, fmt.Sprintf("archive %d (%s) is over the limit of %d bytes (16 MiB) per archive", i, fh.Filename, core.MaxArchiveBytes))
		case err == nil:
			err = checkArchive(data)
		}
		if err != nil {
			return nil, core.Errorf("", core.ErrInvalid, fmt.Sprintf("archive %d (%s): %v", i, fh.Filename, err))
		}
		out = append(out, data)
	}
	return out, nil
}

// errOverSize is an archive over core.MaxArchiveBytes.
var errOverSize = errors.New("archive over the size bound")

// readArchive reads one uploaded archive, never more than one byte past
// the bound.
func readArchive(fh *multipart.FileHeader) ([]byte, error) {
	if fh.Size > core.MaxArchiveBytes {
		return nil, errOverSize
	}
	f, err := fh.Open()
	if err != nil {
		return nil, errors.New("could not be read")
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, core.MaxArchiveBytes+1))
	switch {
	case err != nil:
		return nil, errors.New("could not be read")
	case len(data) > core.MaxArchiveBytes:
		return nil, errOverSize
	}
	return data, nil
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

// checkArchive reads a whole tar (optionally gzip) or zip archive without
// writing anything and reports the first entry that is refused.
func checkArchive(data []byte) error {
	if len(data) >= 4 && bytes.Equal(data[:4], []byte("PK\x03\x04")) {
		return checkZip(data)
	}
	var r io.Reader = bytes.NewReader(data)
	if len(data) >= 2 && data[0] == 0x1f && data[1] == 0x8b {
		gz, err := gzip.NewReader(r)
		if err != nil {
			return fmt.Errorf("not a gzip stream: %v", err)
		}
		r = gz
	}
	return checkTar(r, int64(len(data)))
}

func budget(compressed int64) int64 {
	b := compressed * archiveMaxRatio
	if b > archiveMaxBytes || b <= 0 {
		b = archiveMaxBytes
	}
	return b
}

func checkZip(data []byte) error {
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
			return fmt.Errorf("entry %q: uncompressed size is over the limit (a bomb?)", zf.Name)
		}
	}
	for _, zf := range zr.File {
		if zf.FileInfo().IsDir() {
			continue
		}
		rc, err := zf.Open()
		if err != nil {
			return fmt.Errorf("entry %q: %v", zf.Name, err)
		}
		n, err := countEntry(zf.Name, rc, left)
		_ = rc.Close()
		if err != nil {
			return err
		}
		left -= n
	}
	return nil
}

func checkTar(r io.Reader, compressed int64) error {
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
		if _, err := safeName(h.Name); err != nil {
			return err
		}
		switch h.Typeflag {
		case tar.TypeDir:
		case tar.TypeReg:
			if h.Size > left {
				return fmt.Errorf("entry %q: uncompressed size is over the limit (a bomb?)", h.Name)
			}
			w, err := countEntry(h.Name, tr, left)
			if err != nil {
				return err
			}
			left -= w
		default:
			return fmt.Errorf("entry %q is not a regular file or folder", h.Name)
		}
	}
}

// countEntry reads at most left+1 bytes of entry name and fails past left.
func countEntry(name string, r io.Reader, left int64) (int64, error) {
	n, err := io.Copy(io.Discard, io.LimitReader(r, left+1))
	if err != nil {
		return n, fmt.Errorf("entry %q: %v", name, err)
	}
	if n > left {
		return n, fmt.Errorf("entry %q: uncompressed size is over the limit (a bomb?)", name)
	}
	return n, nil
}
