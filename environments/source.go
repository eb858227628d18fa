package environments

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// Blob is one file a build copies into the image: a wheel (Name is its
// file name) or a spec file (Name is its absolute path in the image).
type Blob struct {
	Name string
	Data []byte
	// Exec makes the file executable (mode 0755, else 0644).
	Exec bool
}

// Source is everything a build reads: the spec and the bytes of every
// wheel and file it names, read once, so the content hash and the image
// are made from the same bytes.
type Source struct {
	Spec Spec
	// Wheels are the wheel folder's *.whl files, sorted by name.
	Wheels []Blob
	// Files are the spec's files (folders expanded), sorted by path.
	Files []Blob
}

// MaxSourceBytes bounds the wheels and files of one build together.
const MaxSourceBytes = 512 << 20

// wheelRe is a wheel file name (PEP 427): name-version(-build)?-py-abi-platform.whl.
var wheelRe = regexp.MustCompile(`^[A-Za-z0-9_.]+-[A-Za-z0-9_.!+]+(-[0-9][A-Za-z0-9_]*)?-[A-Za-z0-9_.]+-[A-Za-z0-9_.]+-[A-Za-z0-9_.]+\.whl$`)

// Load reads the spec file at specPath (YAML or JSON) and the wheels and
// files it names, relative to the spec's folder. Only the operator's own
// command line uses it: a spec that comes over the API carries its bytes
// instead (NewSource), never paths on the server.
func Load(specPath string) (Source, error) {
	data, err := os.ReadFile(specPath)
	if err != nil {
		return Source{}, invalid(fmt.Sprintf("read the spec: %v", err))
	}
	spec, err := Parse(data)
	if err != nil {
		return Source{}, err
	}
	l := loader{dir: filepath.Dir(specPath)}
	src := Source{Spec: spec}
	if spec.Wheels != "" {
		if src.Wheels, err = l.wheels(spec.Wheels); err != nil {
			return Source{}, err
		}
	}
	for _, dest := range sortedKeys(spec.Files) {
		blobs, err := l.files(dest, spec.Files[dest])
		if err != nil {
			return Source{}, err
		}
		src.Files = append(src.Files, blobs...)
	}
	return NewSource(spec, src.Wheels, src.Files)
}

// NewSource checks a spec with its wheels and files (as they would come
// over the API) and returns them as a Source: wheel names are wheel file
// names, file destinations are under FileRoots, none lies inside another,
// and the bytes are within MaxSourceBytes.
func NewSource(spec Spec, wheels, files []Blob) (Source, error) {
	if err := spec.Validate(); err != nil {
		return Source{}, err
	}
	src := Source{Spec: spec, Wheels: append([]Blob(nil), wheels...), Files: append([]Blob(nil), files...)}
	sort.Slice(src.Wheels, func(i, j int) bool { return src.Wheels[i].Name < src.Wheels[j].Name })
	sort.Slice(src.Files, func(i, j int) bool { return src.Files[i].Name < src.Files[j].Name })
	var total int64
	for i, w := range src.Wheels {
		if !wheelRe.MatchString(w.Name) || strings.Contains(w.Name, "/") {
			return Source{}, invalid(fmt.Sprintf("wheels: %q is not a wheel file name", w.Name))
		}
		if i > 0 && src.Wheels[i-1].Name == w.Name {
			return Source{}, invalid(fmt.Sprintf("wheels: %q appears twice", w.Name))
		}
		total += int64(len(w.Data))
	}
	if spec.Wheels != "" && len(src.Wheels) == 0 {
		return Source{}, invalid(fmt.Sprintf("wheels %q: no .whl files in it", spec.Wheels))
	}
	if spec.Wheels == "" && len(src.Wheels) > 0 {
		return Source{}, invalid("wheels: the spec names no wheels folder but wheels were given")
	}
	for i, f := range src.Files {
		if p := checkDest(f.Name); p != "" {
			return Source{}, invalid(fmt.Sprintf("files: %q: %s", f.Name, p))
		}
		if i > 0 && (src.Files[i-1].Name == f.Name || strings.HasPrefix(f.Name, src.Files[i-1].Name+"/")) {
			return Source{}, invalid(fmt.Sprintf("files: %q lies inside (or repeats) the file %q", f.Name, src.Files[i-1].Name))
		}
		total += int64(len(f.Data))
	}
	if total > MaxSourceBytes {
		return Source{}, invalid(fmt.Sprintf("wheels and files: %d bytes, over the %d-byte limit", total, MaxSourceBytes))
	}
	if err := filesMatch(spec, src.Files); err != nil {
		return Source{}, err
	}
	return src, nil
}

// filesMatch checks that the files sent are those the spec names: every
// destination of spec.Files has its file (or, for a folder, files under
// it), and every file sent lies at or under one of them.
func filesMatch(spec Spec, files []Blob) error {
	under := func(name, dest string) bool {
		return name == dest || strings.HasPrefix(name, strings.TrimSuffix(dest, "/")+"/")
	}
	for _, dest := range sortedKeys(spec.Files) {
		if !slices.ContainsFunc(files, func(f Blob) bool { return under(f.Name, dest) }) {
			return invalid(fmt.Sprintf("files: %q: no file was sent for it (send it in \"files\" as {name: %q, content})", dest, dest))
		}
	}
	for _, f := range files {
		if !slices.ContainsFunc(sortedKeys(spec.Files), func(dest string) bool { return under(f.Name, dest) }) {
			return invalid(fmt.Sprintf("files: %q was sent but the spec's files do not name it", f.Name))
		}
	}
	return nil
}

// loader reads a spec's wheels and files relative to its folder.
type loader struct {
	dir   string
	total int64
}

// read reads one regular file, counting it against MaxSourceBytes.
func (l *loader) read(field, p string) ([]byte, fs.FileMode, error) {
	st, err := os.Lstat(p)
	if err != nil {
		return nil, 0, invalid(fmt.Sprintf("%s: %v", field, err))
	}
	if !st.Mode().IsRegular() {
		return nil, 0, invalid(fmt.Sprintf("%s: %s is not a regular file (links, devices and sockets are not copied)", field, p))
	}
	if st.Mode()&(fs.ModeSetuid|fs.ModeSetgid) != 0 {
		return nil, 0, invalid(fmt.Sprintf("%s: %s has the setuid or setgid bit; environments never carry such files", field, p))
	}
	if l.total += st.Size(); l.total > MaxSourceBytes {
		return nil, 0, invalid(fmt.Sprintf("%s: wheels and files are over the %d-byte limit", field, MaxSourceBytes))
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, 0, invalid(fmt.Sprintf("%s: %v", field, err))
	}
	return data, st.Mode(), nil
}

// wheels reads the *.whl files of the folder rel.
func (l *loader) wheels(rel string) ([]Blob, error) {
	dir := filepath.Join(l.dir, filepath.FromSlash(rel))
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, invalid(fmt.Sprintf("wheels %q: %v", rel, err))
	}
	var out []Blob
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".whl") {
			continue
		}
		data, _, err := l.read("wheels", filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		out = append(out, Blob{Name: e.Name(), Data: data})
	}
	return out, nil
}

// files reads the source rel of destination dest: a file, or a folder
// whose regular files land under dest with the same relative paths.
func (l *loader) files(dest, rel string) ([]Blob, error) {
	field := fmt.Sprintf("files %q", dest)
	src := filepath.Join(l.dir, filepath.FromSlash(rel))
	st, err := os.Lstat(src)
	if err != nil {
		return nil, invalid(fmt.Sprintf("%s: %v", field, err))
	}
	if !st.IsDir() {
		data, mode, err := l.read(field, src)
		if err != nil {
			return nil, err
		}
		return []Blob{{Name: dest, Data: data, Exec: mode&0o111 != 0}}, nil
	}
	var out []Blob
	err = filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return invalid(fmt.Sprintf("%s: %v", field, err))
		}
		if d.IsDir() {
			return nil
		}
		data, mode, err := l.read(field, p)
		if err != nil {
			return err
		}
		r, _ := filepath.Rel(src, p)
		out = append(out, Blob{Name: path.Join(dest, filepath.ToSlash(r)), Data: data, Exec: mode&0o111 != 0})
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, invalid(fmt.Sprintf("%s: the folder %q holds no files", field, rel))
	}
	return out, nil
}
