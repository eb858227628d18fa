package sandbox

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"path"
	"strings"

	"github.com/airlock-dev/airlock/core"
)

// mimeByExt is Airlock's own extension table for artifacts; what the
// controller claims is never used.
var mimeByExt = map[string]string{
	".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif",
	".webp": "image/webp", ".svg": "image/svg+xml", ".pdf": "application/pdf",
	".csv": "text/csv; charset=utf-8", ".tsv": "text/tab-separated-values; charset=utf-8",
	".json": "application/json", ".txt": "text/plain; charset=utf-8", ".md": "text/markdown; charset=utf-8",
	".html": "text/html; charset=utf-8", ".htm": "text/html; charset=utf-8",
	".xlsx":    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
	".parquet": "application/vnd.apache.parquet", ".zip": "application/zip",
}

// artifactMIME types a file from its extension, else by sniffing its bytes.
func artifactMIME(name string, data []byte) string {
	if m, ok := mimeByExt[strings.ToLower(path.Ext(name))]; ok {
		return m
	}
	return http.DetectContentType(data)
}

// validArtifactName: relative, clean, no "..", no NUL, bounded.
func validArtifactName(n string) bool {
	if n == "" || len(n) > 1024 || strings.ContainsRune(n, 0) || strings.HasPrefix(n, "/") || path.Clean(n) != n {
		return false
	}
	for _, part := range strings.Split(n, "/") {
		if part == ".." || part == "." {
			return false
		}
	}
	return true
}

// checkArtifacts re-validates what the controller returned: at most
// maxCount files, at most maxBytes in all, sane names, size and hash
// recomputed, MIME chosen here. Refused files become warnings.
func checkArtifacts(in []ctlArtifact, maxCount, maxBytes int) ([]core.Artifact, []string) {
	var out []core.Artifact
	var warn []string
	total := 0
	for _, a := range in {
		switch {
		case !validArtifactName(a.Name):
			warn = append(warn, fmt.Sprintf("artifact %q refused: not a clean relative name", a.Name))
			continue
		case len(out) >= maxCount:
			warn = append(warn, fmt.Sprintf("artifact %s skipped: more than %d artifacts", a.Name, maxCount))
			continue
		case total+len(a.Data) > maxBytes:
			warn = append(warn, fmt.Sprintf("artifact %s skipped: artifacts over %d bytes in all", a.Name, maxBytes))
			continue
		}
		total += len(a.Data)
		sum := sha256.Sum256(a.Data)
		out = append(out, core.Artifact{Name: a.Name, MIME: artifactMIME(a.Name, a.Data),
			Size: int64(len(a.Data)), SHA256: hex.EncodeToString(sum[:]), Data: a.Data})
	}
	return out, warn
}
