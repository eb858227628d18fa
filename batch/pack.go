package batch

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/airlock-dev/airlock/internal/links"
)

// Input modes of a folder item, as its result line names them.
const (
	InputArchive = "archive" // packed on the host, unpacked in the sandbox
	InputMount   = "mount"   // the folder mounted read-only at /workspace
)

// errNoPack is why a folder cannot be packed; the item is mounted instead.
type errNoPack struct{ reason string }

func (e errNoPack) Error() string { return e.reason }

// packFolder packs the folder dir into an uncompressed tar in memory:
// folders, regular files and symbolic links that stay inside dir. It never
// follows a link (files are opened with O_NOFOLLOW), so nothing outside
// dir is read. A folder whose tar would pass maxBytes or maxEntries, or
// that holds a link leaving it or a special file, is an errNoPack naming
// the reason; other failures are I/O errors.
func packFolder(dir string, maxBytes int64, maxEntries int) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	entries := 0
	var total int64 = 1024 // the two end blocks
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, err
	}
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		if rel == "." {
			return nil
		}
		name := filepath.ToSlash(rel)
		entries++
		if entries > maxEntries {
			return errNoPack{fmt.Sprintf("the item folder has over %d entries", maxEntries)}
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		hdr := &tar.Header{Name: name, Mode: int64(info.Mode().Perm()), ModTime: info.ModTime(), Format: tar.FormatPAX}
		var size int64
		switch {
		case d.IsDir():
			hdr.Typeflag, hdr.Name = tar.TypeDir, name+"/"
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			if !links.StaysIn(name, target) || !links.ResolvesIn(realDir, p) {
				return errNoPack{fmt.Sprintf("%s is a link out of the item folder", name)}
			}
			hdr.Typeflag, hdr.Linkname = tar.TypeSymlink, target
		case info.Mode().IsRegular():
			hdr.Typeflag, size = tar.TypeReg, info.Size()
			hdr.Size = size
		default:
			return errNoPack{fmt.Sprintf("%s is not a regular file, folder or link", name)}
		}
		total += 512 + (size+511)/512*512 + int64(len(name)/100)*512
		if total > maxBytes {
			return errNoPack{fmt.Sprintf("the item folder packs to over %d bytes (core.MaxArchiveBytes)", maxBytes)}
		}
		if hdr.Typeflag != tar.TypeReg {
			return tw.WriteHeader(hdr)
		}
		return copyFile(tw, hdr, p)
	})
	if err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if int64(buf.Len()) > maxBytes {
		return nil, errNoPack{fmt.Sprintf("the item folder packs to over %d bytes (core.MaxArchiveBytes)", maxBytes)}
	}
	return buf.Bytes(), nil
}

// copyFile writes one regular file, opened without following links; a
// file that changed size while packed is an error.
func copyFile(tw *tar.Writer, hdr *tar.Header, p string) error {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() || st.Size() != hdr.Size {
		return fmt.Errorf("%s changed while it was packed", hdr.Name)
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	n, err := io.CopyN(tw, f, hdr.Size)
	if err != nil || n != hdr.Size {
		return fmt.Errorf("%s changed while it was packed: %v", hdr.Name, err)
	}
	return nil
}

// isNoPack reports whether err says the folder cannot be packed (as
// opposed to an I/O failure) and returns the reason.
func isNoPack(err error) (string, bool) {
	var np errNoPack
	if errors.As(err, &np) {
		return np.reason, true
	}
	return "", false
}
