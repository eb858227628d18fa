// Package envtest helps tests of environments: it writes real, minimal
// pure-Python wheels into a local wheelhouse, and reads the pinned base
// images the tests build from.
package envtest

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Wheel writes the pure-Python wheel name-version-py3-none-any.whl into
// dir: modules maps a path inside the wheel ("mytool/__init__.py") to its
// source. The wheel carries METADATA, WHEEL and a RECORD with every file's
// sha256 and size, as pip checks them. It returns the wheel's path.
func Wheel(dir, name, version string, modules map[string]string) (string, error) {
	dist := strings.ReplaceAll(name, "-", "_")
	info := fmt.Sprintf("%s-%s.dist-info", dist, version)
	files := map[string]string{}
	for p, src := range modules {
		files[p] = src
	}
	files[info+"/METADATA"] = fmt.Sprintf("Metadata-Version: 2.1\nName: %s\nVersion: %s\nSummary: a test wheel written by envtest\n", name, version)
	files[info+"/WHEEL"] = "Wheel-Version: 1.0\nGenerator: airlock-envtest\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var record strings.Builder
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, p := range paths {
		data := []byte(files[p])
		sum := sha256.Sum256(data)
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", p, base64.RawURLEncoding.EncodeToString(sum[:]), len(data))
		w, err := zw.Create(p)
		if err != nil {
			return "", fmt.Errorf("envtest: wheel %s: %w", p, err)
		}
		if _, err := w.Write(data); err != nil {
			return "", fmt.Errorf("envtest: wheel %s: %w", p, err)
		}
	}
	fmt.Fprintf(&record, "%s/RECORD,,\n", info)
	w, err := zw.Create(info + "/RECORD")
	if err != nil {
		return "", fmt.Errorf("envtest: wheel RECORD: %w", err)
	}
	if _, err := w.Write([]byte(record.String())); err != nil {
		return "", fmt.Errorf("envtest: wheel RECORD: %w", err)
	}
	if err := zw.Close(); err != nil {
		return "", fmt.Errorf("envtest: wheel: %w", err)
	}
	path := filepath.Join(dir, fmt.Sprintf("%s-%s-py3-none-any.whl", dist, version))
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return "", fmt.Errorf("envtest: write the wheel: %w", err)
	}
	return path, nil
}
