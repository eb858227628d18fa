package builder

import (
	"archive/tar"
	"bytes"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/environments"
)

// plan is what one build does, decided from its Source on the host.
type plan struct {
	apt      []string // packages apt-get installs (the spec's, and python3-pip for pip)
	aptNames []string // the spec's package names, for the package list
	pipArgs  []string // pip install's arguments after its fixed options
	purgePip bool     // remove python3-pip again once pip is done
	network  bool     // the build container needs the bridge network
	mirror   string   // the Debian mirror to use ("" keeps the base image's)
}

// newPlan decides a build: pip is installed from apt only for the build
// (the sandbox has no network, so pip is no use in it), with --no-index
// and the wheelhouse, or the index, never PyPI by default.
func newPlan(src environments.Source, indexURL, mirror string) plan {
	p := plan{mirror: mirror}
	for _, a := range src.Spec.Apt {
		p.apt = append(p.apt, a)
		name, _, _ := strings.Cut(a, "=")
		p.aptNames = append(p.aptNames, name)
	}
	usesPip := len(src.Spec.Pip) > 0 || len(src.Wheels) > 0
	if usesPip {
		if !slices.Contains(p.aptNames, "python3-pip") {
			p.apt = append(p.apt, "python3-pip")
			p.purgePip = true
		}
		if len(src.Wheels) > 0 {
			p.pipArgs = append(p.pipArgs, "--find-links", buildDir+"/wheels")
		}
		if indexURL != "" {
			p.pipArgs = append(p.pipArgs, "--index-url", indexURL)
		} else {
			p.pipArgs = append(p.pipArgs, "--no-index")
		}
		if len(src.Spec.Pip) > 0 {
			p.pipArgs = append(p.pipArgs, normalizeReqs(src.Spec.Pip)...)
		} else {
			for _, w := range src.Wheels {
				p.pipArgs = append(p.pipArgs, buildDir+"/wheels/"+w.Name)
			}
		}
	}
	p.network = len(p.apt) > 0 || indexURL != ""
	return p
}

// ctxFile is one file of buildDir.
type ctxFile struct {
	name string
	data []byte
	exec bool
}

// contextTime is every context entry's modification time.
var contextTime = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// contextTar packs the build context, extracted at "/" of the build
// container: buildDir with the script, the lists, the wheels and the
// files under files/ at their image paths, everything owned by root.
func contextTar(src environments.Source, p plan, nonce string) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := map[string]bool{}
	addDir := func(d string) error {
		var parts []string
		for d != "/" && d != "." && !dirs[d] {
			parts = append(parts, d)
			d = path.Dir(d)
		}
		sort.Strings(parts) // parents first
		for _, d := range parts {
			dirs[d] = true
			mode := int64(0o755)
			if d == buildDir {
				mode = 0o700
			}
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: strings.TrimPrefix(d, "/") + "/", Mode: mode, ModTime: contextTime}); err != nil {
				return err
			}
		}
		return nil
	}
	addFile := func(name string, data []byte, exec bool) error {
		if err := addDir(path.Dir(name)); err != nil {
			return err
		}
		mode := int64(0o644)
		if exec {
			mode = 0o755
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(name, "/"), Mode: mode, Size: int64(len(data)), ModTime: contextTime}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	lines := func(l []string) []byte {
		if len(l) == 0 {
			return nil
		}
		return []byte(strings.Join(l, "\n") + "\n")
	}
	files := []ctxFile{
		{"build.sh", []byte(buildScript), true},
		{"nonce", []byte(nonce), false},
		{"apt.txt", lines(p.apt), false},
		{"apt.list", lines(p.aptNames), false},
		{"pip.args", lines(p.pipArgs), false},
		{"mirror", []byte(p.mirror), false},
	}
	if p.purgePip {
		files = append(files, ctxFile{"purge-pip", nil, false})
	}
	for _, f := range files {
		if err := addFile(buildDir+"/"+f.name, f.data, f.exec); err != nil {
			return nil, fmt.Errorf("environments: pack the build context: %w", err)
		}
	}
	for _, w := range src.Wheels {
		if err := addFile(buildDir+"/wheels/"+w.Name, w.Data, false); err != nil {
			return nil, fmt.Errorf("environments: pack wheel %s: %w", w.Name, err)
		}
	}
	for _, f := range src.Files {
		if err := addFile(buildDir+"/files"+f.Name, f.Data, f.Exec); err != nil {
			return nil, fmt.Errorf("environments: pack file %s: %w", f.Name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("environments: pack the build context: %w", err)
	}
	return buf.Bytes(), nil
}
