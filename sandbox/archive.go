package sandbox

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strconv"
	"strings"

	"github.com/airlock-dev/airlock/core"
)

// Bounds of a Request.Archive, checked on the host before a container is
// touched and again by the controller while it unpacks (airlock_archive.py
// keeps the same numbers).
const (
	// ArchiveMaxEntries bounds the entries (files, folders, links) of an archive.
	ArchiveMaxEntries = 10000
	// ArchiveMaxBytes bounds the bytes an archive unpacks to.
	ArchiveMaxBytes = 256 << 20
	// ArchiveMaxRatio bounds unpacked bytes over packed bytes, past
	// archiveRatioFloor unpacked bytes (a small archive is never a bomb).
	ArchiveMaxRatio = 200
)

const (
	archiveRatioFloor  = 1 << 20
	archiveMaxDepth    = 64
	archiveMaxPath     = 4096
	archiveMaxLink     = 4095
	archiveHeaderSlack = 16 << 20 // tar headers and padding beyond the entries' data
	tmpfsPage          = 4096
)

// archiveSummary is what listing an archive found.
type archiveSummary struct {
	Format  string // tar, tar.gz or zip
	Entries int
	Bytes   int64 // sum of the regular files' sizes
	Pages   int64 // Bytes rounded up to whole tmpfs pages per file
}

// archiveBounds are the limits one listing applies.
type archiveBounds struct {
	entries  int
	bytes    int64
	ratio    int64
	fileSize int64 // largest single file (the fsize ulimit); 0: none
}

// listArchive checks every entry of a tar, tar.gz or zip archive without
// writing anything: names (relative, no ".."), types (files, folders,
// links; no devices, FIFOs or sparse files), link targets (lexically inside
// the archive; the controller also resolves them for real), duplicates and
// the bounds. A refusal is core.ErrInvalid naming the entry. Reading stops
// at the first refusal, and a compressed stream is never read past the
// bounds, so a bomb costs at most ratio times its packed size.
func listArchive(data []byte, b archiveBounds) (archiveSummary, error) {
	fmtName, err := archiveFormat(data)
	if err != nil {
		return archiveSummary{}, err
	}
	l := &lister{b: b, packed: max(int64(len(data)), 1), kinds: map[string]byte{}, links: map[string]string{}}
	l.sum.Format = fmtName
	if fmtName == "zip" {
		err = l.zip(data)
	} else {
		err = l.tar(data, fmtName == "tar.gz")
	}
	if err == nil {
		err = l.resolveLinks()
	}
	return l.sum, err
}

// archiveFormat tells the supported formats apart by their magic bytes.
func archiveFormat(data []byte) (string, error) {
	switch {
	case bytes.HasPrefix(data, []byte("PK\x03\x04")), bytes.HasPrefix(data, []byte("PK\x05\x06")):
		return "zip", nil
	case bytes.HasPrefix(data, []byte{0x1f, 0x8b}):
		return "tar.gz", nil
	case bytes.HasPrefix(data, []byte("BZh")):
		return "", archiveRefusal("the archive is bzip2-compressed; send a tar, tar.gz or zip")
	case bytes.HasPrefix(data, []byte("\xfd7zXZ\x00")):
		return "", archiveRefusal("the archive is xz-compressed; send a tar, tar.gz or zip")
	case bytes.HasPrefix(data, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		return "", archiveRefusal("the archive is zstd-compressed; send a tar, tar.gz or zip")
	}
	return "tar", nil
}

func archiveRefusal(msg string) error { return core.Errorf("sandbox.archive", core.ErrInvalid, msg) }

// entryRefusal names the entry: its name inside the archive, never a host path.
func entryRefusal(name, why string) error {
	return archiveRefusal("archive entry " + strconv.Quote(name) + ": " + why)
}

// lister holds one listing's running state.
type lister struct {
	b      archiveBounds
	packed int64
	sum    archiveSummary
	kinds  map[string]byte   // path -> kindDir, kindFile or kindLink, as the controller would create it
	links  map[string]string // symlink path -> target
	order  []string          // symlink paths in archive order
}

// What a path of the archive becomes in /workspace.
const (
	kindDir  = 'd'
	kindFile = 'f' // a regular file or a hard link to one
	kindLink = 'l'
)

// entryParts splits an entry's name into its components, refusing names
// that could leave the workspace.
func entryParts(name string) ([]string, error) {
	if name == "" || name == "." || name == "./" {
		return nil, nil
	}
	switch {
	case strings.ContainsRune(name, 0):
		return nil, entryRefusal(name, "the name contains NUL")
	case strings.HasPrefix(name, "/"):
		return nil, entryRefusal(name, "absolute paths are not allowed")
	case len(name) > archiveMaxPath:
		return nil, entryRefusal(name, fmt.Sprintf("the name is longer than %d bytes", archiveMaxPath))
	}
	var parts []string
	for _, p := range strings.Split(name, "/") {
		switch {
		case p == "" || p == ".":
			continue
		case p == "..":
			return nil, entryRefusal(name, `the path leaves /workspace ("..")`)
		case len(p) > 255:
			return nil, entryRefusal(name, "a path component is longer than 255 bytes")
		}
		parts = append(parts, p)
	}
	if len(parts) > archiveMaxDepth {
		return nil, entryRefusal(name, fmt.Sprintf("nested deeper than %d folders", archiveMaxDepth))
	}
	return parts, nil
}

// entry counts one entry and claims its path as the controller would
// create it: parents become folders (never through a link or a file), a
// folder may repeat, anything else appears once.
func (l *lister) entry(name string, kind byte) ([]string, error) {
	l.sum.Entries++
	if l.sum.Entries > l.b.entries {
		return nil, entryRefusal(name, fmt.Sprintf("the archive has more than %d entries", l.b.entries))
	}
	parts, err := entryParts(name)
	if err != nil {
		return nil, err
	}
	for i := 1; i < len(parts); i++ {
		p := strings.Join(parts[:i], "/")
		switch l.kinds[p] {
		case 0:
			l.kinds[p] = kindDir
		case kindDir:
		default:
			return nil, entryRefusal(name, "its folder "+strconv.Quote(parts[i-1])+" is a link or a file")
		}
	}
	key := strings.Join(parts, "/")
	if key == "" {
		if kind != kindDir {
			return nil, entryRefusal(name, "only a folder can be the workspace itself")
		}
		return parts, nil
	}
	switch had := l.kinds[key]; {
	case had == 0:
		l.kinds[key] = kind
	case had == kindDir && kind == kindDir:
	case had == kindDir:
		return nil, entryRefusal(name, "a folder of the same name came before it")
	case kind == kindDir:
		return nil, entryRefusal(name, "a file or link of the same name came before it")
	default:
		return nil, entryRefusal(name, "the path appears twice in the archive")
	}
	return parts, nil
}

// file adds a regular file's size to the totals.
func (l *lister) file(name string, size int64) error {
	if size < 0 {
		return entryRefusal(name, "the size is negative")
	}
	if l.b.fileSize > 0 && size > l.b.fileSize {
		return entryRefusal(name, fmt.Sprintf("the file is %d bytes, over the %d-byte file size limit", size, l.b.fileSize))
	}
	l.sum.Bytes += size
	l.sum.Pages += (size + tmpfsPage - 1) / tmpfsPage * tmpfsPage
	if l.sum.Bytes > l.b.bytes {
		return entryRefusal(name, fmt.Sprintf("the archive unpacks to more than %d bytes", l.b.bytes))
	}
	if l.sum.Bytes > archiveRatioFloor && l.sum.Bytes > l.b.ratio*l.packed {
		return entryRefusal(name, fmt.Sprintf("the archive unpacks to more than %d times its packed size of %d bytes (a compression bomb?)", l.b.ratio, l.packed))
	}
	return nil
}

// symlink records a link whose target is relative and lexically inside.
func (l *lister) symlink(name string, parts []string, target string) error {
	if err := symlinkTarget(name, parts, target); err != nil {
		return err
	}
	key := strings.Join(parts, "/")
	l.links[key] = target
	l.order = append(l.order, key)
	return nil
}

// resolveLinks follows every symlink through the others, as the kernel
// will: a chain (a -> ".", b -> "a/..") must not leave the workspace.
func (l *lister) resolveLinks() error {
	for _, key := range l.order {
		parts := strings.Split(key, "/")
		if _, ok := l.walk(parts[:len(parts)-1], []string{parts[len(parts)-1]}, 0); !ok {
			return entryRefusal(key, "the link points outside /workspace (through other links)")
		}
	}
	return nil
}

// walk resolves comps from the folder cur (components below the root),
// expanding links; ok is false when the path leaves the root or loops.
func (l *lister) walk(cur, comps []string, depth int) ([]string, bool) {
	cur = append([]string(nil), cur...)
	for _, c := range comps {
		switch c {
		case "", ".":
			continue
		case "..":
			if len(cur) == 0 {
				return nil, false
			}
			cur = cur[:len(cur)-1]
			continue
		}
		cur = append(cur, c)
		target, isLink := l.links[strings.Join(cur, "/")]
		if !isLink {
			continue
		}
		if depth >= 40 || strings.HasPrefix(target, "/") {
			return nil, false
		}
		var ok bool
		if cur, ok = l.walk(cur[:len(cur)-1], strings.Split(target, "/"), depth+1); !ok {
			return nil, false
		}
	}
	return cur, true
}

// symlinkTarget refuses a target that is absolute or leaves the workspace lexically.
func symlinkTarget(name string, parts []string, target string) error {
	if target == "" || strings.ContainsRune(target, 0) || len(target) > archiveMaxLink {
		return entryRefusal(name, "the link target is empty, too long or contains NUL")
	}
	if strings.HasPrefix(target, "/") {
		return entryRefusal(name, "the link points outside /workspace (absolute target "+strconv.Quote(target)+")")
	}
	dir := strings.Join(parts[:len(parts)-1], "/")
	if j := path.Clean(path.Join(dir, target)); j == ".." || strings.HasPrefix(j, "../") {
		return entryRefusal(name, "the link points outside /workspace (target "+strconv.Quote(target)+")")
	}
	return nil
}

// hardlinkTarget requires a regular file listed before the link.
func (l *lister) hardlinkTarget(name, target string) error {
	tparts, err := entryParts(target)
	if err != nil {
		return entryRefusal(name, "the hard link points outside /workspace (target "+strconv.Quote(target)+")")
	}
	if l.kinds[strings.Join(tparts, "/")] != kindFile || len(tparts) == 0 {
		return entryRefusal(name, "a hard link must point to a regular file that comes before it in the archive (target "+strconv.Quote(target)+")")
	}
	return nil
}

// boundedReader fails once more than left bytes were read from r.
type boundedReader struct {
	r    io.Reader
	left int64
}

var errArchiveStream = errors.New("the decompressed archive is larger than its bounds allow (a compression bomb?)")

func (b *boundedReader) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return n, errArchiveStream
	}
	return n, err
}

func (l *lister) tar(data []byte, gz bool) error {
	var r io.Reader = bytes.NewReader(data)
	if gz {
		zr, err := gzip.NewReader(r)
		if err != nil {
			return archiveRefusal("the archive is not a valid tar.gz (" + err.Error() + ")")
		}
		r = &boundedReader{r: zr, left: l.b.bytes + archiveHeaderSlack}
	}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			if l.sum.Entries == 0 && !gz && len(data) > 0 && !tarEndOnly(data) {
				return archiveRefusal("the archive is not a valid tar, tar.gz or zip")
			}
			return nil
		}
		if err != nil && !errors.Is(err, tar.ErrInsecurePath) {
			if errors.Is(err, errArchiveStream) {
				return archiveRefusal(errArchiveStream.Error())
			}
			return archiveRefusal("the archive is not a valid " + l.sum.Format + ", tar.gz or zip (" + err.Error() + ")")
		}
		if h.Typeflag == tar.TypeXGlobalHeader {
			continue // pax global header (git archive writes one): not an entry
		}
		if err := l.tarEntry(h); err != nil {
			return err
		}
	}
}

// tarEndOnly reports whether data is only zero blocks (an empty tar).
func tarEndOnly(data []byte) bool {
	return len(bytes.Trim(data, "\x00")) == 0
}

func (l *lister) tarEntry(h *tar.Header) error {
	name := h.Name
	kind := byte(kindFile)
	switch h.Typeflag {
	case tar.TypeDir:
		kind = kindDir
	case tar.TypeSymlink:
		kind = kindLink
	case tar.TypeLink:
		// checked against the files listed so far, before it claims its own path
		if err := l.hardlinkTarget(name, h.Linkname); err != nil {
			return err
		}
	}
	parts, err := l.entry(name, kind)
	if err != nil {
		return err
	}
	for k := range h.PAXRecords {
		if strings.HasPrefix(k, "GNU.sparse.") {
			return entryRefusal(name, "sparse files are not allowed")
		}
	}
	switch h.Typeflag {
	case tar.TypeDir:
		return nil
	case tar.TypeReg, tar.TypeRegA, tar.TypeCont:
		return l.file(name, h.Size)
	case tar.TypeSymlink:
		return l.symlink(name, parts, h.Linkname)
	case tar.TypeLink:
		return nil
	case tar.TypeChar, tar.TypeBlock:
		return entryRefusal(name, "devices are not allowed")
	case tar.TypeFifo:
		return entryRefusal(name, "FIFOs are not allowed")
	case tar.TypeGNUSparse:
		return entryRefusal(name, "sparse files are not allowed")
	}
	return entryRefusal(name, fmt.Sprintf("entries of type %q are not allowed", string(h.Typeflag)))
}

func (l *lister) zip(data []byte) error {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil && !errors.Is(err, zip.ErrInsecurePath) {
		return archiveRefusal("the archive is not a valid zip (" + err.Error() + ")")
	}
	for _, f := range zr.File {
		mode := f.Mode()
		name := f.Name
		dir := mode.IsDir() || strings.HasSuffix(name, "/")
		kind := byte(kindFile)
		switch {
		case mode&fs.ModeSymlink != 0:
			kind = kindLink
		case dir:
			kind = kindDir
		}
		parts, err := l.entry(name, kind)
		if err != nil {
			return err
		}
		switch {
		case f.Flags&0x1 != 0:
			return entryRefusal(name, "encrypted entries are not allowed")
		case mode&fs.ModeSymlink != 0:
			target, err := zipLink(f)
			if err != nil {
				return entryRefusal(name, err.Error())
			}
			if err := l.symlink(name, parts, target); err != nil {
				return err
			}
		case mode&fs.ModeDevice != 0, mode&fs.ModeCharDevice != 0:
			return entryRefusal(name, "devices are not allowed")
		case mode&(fs.ModeNamedPipe|fs.ModeSocket) != 0:
			return entryRefusal(name, "FIFOs and sockets are not allowed")
		case dir:
		default:
			if f.UncompressedSize64 > 1<<62 {
				return entryRefusal(name, "the size is out of range")
			}
			if err := l.file(name, int64(f.UncompressedSize64)); err != nil {
				return err
			}
		}
	}
	return nil
}

// zipLink reads a zip symlink's target (its content), bounded.
func zipLink(f *zip.File) (string, error) {
	if f.UncompressedSize64 > archiveMaxLink {
		return "", fmt.Errorf("the link target is longer than %d bytes", archiveMaxLink)
	}
	rc, err := f.Open()
	if err != nil {
		return "", fmt.Errorf("cannot be read (%v)", err)
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, archiveMaxLink+1))
	if err != nil {
		return "", fmt.Errorf("the data is corrupt (%v)", err)
	}
	return string(b), nil
}
