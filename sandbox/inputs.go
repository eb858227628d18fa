package sandbox

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/internal/links"
)

// Bounds of an input folder (Request.Mount). The folder is never mounted:
// Airlock copies it (a tar packed on the host, unpacked by the controller)
// into the container's own /workspace tmpfs, so no host path is visible in
// the sandbox, not even in /proc/self/mountinfo. The tar is streamed to
// the controller in chunks (input_stream.go) and unpacked as it arrives,
// so neither side holds it whole and one request line's size does not
// bound it: Config.InputMaxBytes and Config.InputMaxEntries do. A folder
// past a bound is refused naming it; past the /workspace size the message
// names tmpfs_bytes, and past what memory_bytes can take, memory_bytes
// (inputMemory).
const (
	// DefaultInputMaxEntries is Config.InputMaxEntries unless set: the
	// files, folders and links of an input folder.
	DefaultInputMaxEntries = 20000
	// DefaultInputMaxBytes is Config.InputMaxBytes unless set: the tar an
	// input folder packs to (its files' bytes, 512-byte headers and padding).
	DefaultInputMaxBytes = 256 << 20
)

// inputMemory is the least memory_bytes with which a container can take a
// streamed copy of an input folder: its files in the /workspace tmpfs
// (charged to the container's memory, in whole pages), about a KiB of the
// unpacker's bookkeeping per entry, the chunks in flight (a request line,
// its decoded bytes and the unpacker's queue: under 8 MiB), on top of what
// the controller, zygote and spare kernels use (about 32 MiB without the
// page cache, which the kernel reclaims first).
func inputMemory(s *inputScan) int64 {
	return s.pages + int64(len(s.entries))<<10 + 8<<20 + 32<<20
}

// inputMemoryLine is the same for an image whose controller cannot take a
// streamed input (older than featureArchiveStream): the tar travels in one
// request line, which the controller holds a few times over while it
// decodes it (measured: 4.5-5.5 times the tar at the peak).
func inputMemoryLine(packed int64) int64 { return 6*packed + 32<<20 }

// inputEntry is one entry of an input folder, as it will be unpacked.
type inputEntry struct {
	rel  string // slash path relative to the folder
	kind byte   // kindDir, kindFile or kindLink
	perm fs.FileMode
	size int64
	link string // a link's target
}

// inputScan is an input folder walked on the host: what will be copied.
type inputScan struct {
	dir     string // the resolved folder
	entries []inputEntry
	bytes   int64    // the files' sizes together
	pages   int64    // the same in whole tmpfs pages, what /workspace must hold
	packed  int64    // the size of the tar it packs to
	skipped []string // links out of the folder and special files, left out
}

// inputRefusal is a refused input folder: core.ErrInvalid with a message
// that names entries relative to the folder, never its host path.
func inputRefusal(msg string) error { return core.Errorf("", core.ErrInvalid, "the input folder "+msg) }

// scanInput walks the resolved input folder dir: folders, regular files and
// links that stay inside it; links leading out of it (their target could
// name a host path) and special files are left out and listed in skipped;
// folders on another filesystem are copied empty. An entry the server
// cannot read, over maxEntries entries or a tar over maxPacked bytes is
// refused, naming what was wrong. Nothing is read but metadata.
func scanInput(dir string, maxEntries int, maxPacked int64) (*inputScan, error) {
	var root syscall.Stat_t
	if err := syscall.Stat(dir, &root); err != nil {
		return nil, inputRefusal("cannot be examined: " + errnoText(err))
	}
	if err := syscall.Access(dir, 5); err != nil { // r-x
		return nil, inputRefusal("itself cannot be read by the server: " + errnoText(err))
	}
	s := &inputScan{dir: dir, packed: 1024} // the tar's two end blocks
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		rel, rerr := filepath.Rel(dir, p)
		if rerr != nil {
			return rerr
		}
		if err != nil {
			return inputRefusal(fmt.Sprintf("entry %q cannot be read: %s", filepath.ToSlash(rel), errnoText(err)))
		}
		if rel == "." {
			return nil
		}
		rel = filepath.ToSlash(rel)
		if len(s.entries) >= maxEntries {
			return inputRefusal(fmt.Sprintf("has more than %d entries (files, folders and links), the most this server copies into a sandbox (--input-max-entries): give a smaller folder", maxEntries))
		}
		if err := inputName(rel); err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return inputRefusal(fmt.Sprintf("entry %q cannot be examined: %s", rel, errnoText(err)))
		}
		e := inputEntry{rel: rel, perm: info.Mode().Perm()}
		switch {
		case info.IsDir():
			e.kind = kindDir
			if err := syscall.Access(p, 5); err != nil {
				return inputRefusal(fmt.Sprintf("folder %q cannot be read by the server: %s", rel, errnoText(err)))
			}
			if err := s.add(e, maxPacked); err != nil {
				return err
			}
			if st, ok := info.Sys().(*syscall.Stat_t); ok && st.Dev != root.Dev {
				return fs.SkipDir // another filesystem: copied empty
			}
			return nil
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return inputRefusal(fmt.Sprintf("link %q cannot be read: %s", rel, errnoText(err)))
			}
			if !links.StaysIn(rel, target) || !links.ResolvesIn(dir, p) {
				s.skipped = append(s.skipped, rel)
				return nil
			}
			e.kind, e.link = kindLink, target
		case info.Mode().IsRegular():
			if err := syscall.Access(p, 4); err != nil { // r--
				return inputRefusal(fmt.Sprintf("file %q cannot be read by the server: %s", rel, errnoText(err)))
			}
			e.kind, e.size = kindFile, info.Size()
		default:
			s.skipped = append(s.skipped, rel)
			return nil
		}
		return s.add(e, maxPacked)
	})
	var refused *core.Error
	if errors.As(err, &refused) {
		return nil, err
	}
	if err != nil {
		return nil, inputRefusal("cannot be examined: " + errnoText(err))
	}
	return s, nil
}

// add counts e in, refusing the folder once its tar would pass maxPacked.
func (s *inputScan) add(e inputEntry, maxPacked int64) error {
	s.entries = append(s.entries, e)
	s.bytes += e.size
	s.pages += (e.size + tmpfsPage - 1) / tmpfsPage * tmpfsPage
	s.packed += 512 + (e.size+511)/512*512
	if len(e.rel) >= 99 || len(e.link) >= 99 || !isASCII(e.rel) || !isASCII(e.link) {
		// a PAX header for the long or non-ASCII name: its own block and
		// records ("NN path=...\n", "NN linkpath=...\n") in whole blocks
		s.packed += 512 + (int64(len(e.rel)+len(e.link))+64+511)/512*512
	}
	if s.packed > maxPacked {
		return inputRefusal(fmt.Sprintf("packs to more than %d bytes, the most this server copies into a sandbox (--input-max-bytes): give a smaller folder", maxPacked))
	}
	return nil
}

// isASCII reports whether s is plain ASCII (a tar header holds it as is).
func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// inputName refuses a name the controller could not unpack (the archive
// bounds of archive.go), naming it.
func inputName(rel string) error {
	switch {
	case len(rel) > archiveMaxPath:
		return inputRefusal(fmt.Sprintf("entry %.80q... has a path longer than %d bytes", rel, archiveMaxPath))
	case strings.Count(rel, "/") >= archiveMaxDepth:
		return inputRefusal(fmt.Sprintf("entry %q is nested deeper than %d folders", rel, archiveMaxDepth))
	}
	return nil
}

// warnings describes what the copy left out, for the call's result.
func (s *inputScan) warnings() []string {
	if len(s.skipped) == 0 {
		return nil
	}
	names := s.skipped
	more := ""
	if len(names) > 5 {
		names, more = names[:5], fmt.Sprintf(" and %d more", len(s.skipped)-5)
	}
	return []string{fmt.Sprintf("the input folder's links leading out of it and special files are not copied into the sandbox: %s%s",
		strings.Join(names, ", "), more)}
}

// pack returns the scanned entries as an uncompressed tar (packTo).
func (s *inputScan) pack() ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(int(min(s.packed, core.MaxArchiveBytes)))
	if err := s.packTo(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// packTo writes the scanned entries to w as an uncompressed tar. Files are
// opened without following links and must still have their scanned size.
func (s *inputScan) packTo(w io.Writer) error {
	tw := tar.NewWriter(w)
	for _, e := range s.entries {
		h := &tar.Header{Name: e.rel, Mode: int64(e.perm), Format: tar.FormatPAX}
		switch e.kind {
		case kindDir:
			h.Typeflag, h.Name = tar.TypeDir, e.rel+"/"
		case kindLink:
			h.Typeflag, h.Linkname = tar.TypeSymlink, e.link
		default:
			h.Typeflag, h.Size = tar.TypeReg, e.size
		}
		if e.kind != kindFile {
			if err := tw.WriteHeader(h); err != nil {
				return fmt.Errorf("sandbox: pack the input folder: %w", err)
			}
			continue
		}
		if err := s.packFile(tw, h); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("sandbox: pack the input folder: %w", err)
	}
	return nil
}

// packFile copies one regular file into tw.
func (s *inputScan) packFile(tw *tar.Writer, h *tar.Header) error {
	changed := inputRefusal(fmt.Sprintf("file %q changed while it was copied into the sandbox: try again", h.Name))
	f, err := os.OpenFile(filepath.Join(s.dir, filepath.FromSlash(h.Name)), os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ELOOP) {
			return changed
		}
		return inputRefusal(fmt.Sprintf("file %q cannot be read by the server: %s", h.Name, errnoText(err)))
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() || st.Size() != h.Size {
		return changed
	}
	if err := tw.WriteHeader(h); err != nil {
		return fmt.Errorf("sandbox: pack the input folder: %w", err)
	}
	if n, err := io.CopyN(tw, f, h.Size); err != nil || n != h.Size {
		return changed
	}
	return nil
}

// errnoText describes a file-system error without the path it carries.
func errnoText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		err = le.Err
	}
	return err.Error()
}
