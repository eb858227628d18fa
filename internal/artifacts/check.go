package artifacts

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/airlock-dev/airlock/core"
)

// maxArtifactName bounds an artifact's name in bytes.
const maxArtifactName = 255

// Check re-validates what a sandbox result says about its
// artifacts, trusting none of it: at most maxCount artifacts and maxBytes
// of data in total; names relative, clean, without "..", NUL or control
// characters, of bounded length; Size and SHA256 recomputed from the bytes;
// the MIME type derived from the name by Go's own table, never taken from
// the container. What is dropped is said in the returned warnings.
func Check(arts []core.Artifact, maxCount int, maxBytes int64) ([]core.Artifact, []string) {
	var warns []string
	if len(arts) > maxCount {
		warns = append(warns, fmt.Sprintf("%d artifacts returned, over the limit of %d: the first %d are kept", len(arts), maxCount, maxCount))
		arts = arts[:maxCount]
	}
	out := make([]core.Artifact, 0, len(arts))
	var total int64
	for _, a := range arts {
		if why := badArtifactName(a.Name); why != "" {
			warns = append(warns, "an artifact was dropped: its name "+why)
			continue
		}
		size := int64(len(a.Data))
		if total+size > maxBytes {
			warns = append(warns, fmt.Sprintf("artifact %s dropped: the call's artifacts are over %d bytes", a.Name, maxBytes))
			continue
		}
		total += size
		sum := sha256.Sum256(a.Data)
		out = append(out, core.Artifact{Name: a.Name, MIME: mimeByName(a.Name), Size: size,
			SHA256: hex.EncodeToString(sum[:]), Data: a.Data})
	}
	return out, warns
}

// badArtifactName says what is wrong with name, or "" when it is fine.
func badArtifactName(name string) string {
	switch {
	case name == "":
		return "is empty"
	case len(name) > maxArtifactName:
		return fmt.Sprintf("is longer than %d bytes", maxArtifactName)
	case !utf8.ValidString(name):
		return "is not UTF-8"
	case strings.ContainsFunc(name, func(r rune) bool { return r == 0 || unicode.IsControl(r) }):
		return "contains NUL or control characters"
	case strings.HasPrefix(name, "/") || strings.Contains(name, `\`):
		return "is not a relative path"
	case path.Clean(name) != name:
		return "is not a clean path"
	}
	for _, seg := range strings.Split(name, "/") {
		if seg == ".." || seg == "." {
			return `contains a "." or ".." segment`
		}
	}
	return ""
}

// mimeByName maps name's extension to a type by the API's own table:
// deterministic, not the host's mime.types and not what the container
// claimed. Unknown extensions are application/octet-stream.
func mimeByName(name string) string {
	switch strings.ToLower(path.Ext(name)) {
	case ".png":
		return "image/png"
	case ".jpg", ".jpeg":
		return "image/jpeg"
	case ".gif":
		return "image/gif"
	case ".webp":
		return "image/webp"
	case ".svg":
		return "image/svg+xml"
	case ".pdf":
		return "application/pdf"
	case ".txt", ".log":
		return "text/plain"
	case ".md":
		return "text/markdown"
	case ".csv":
		return "text/csv"
	case ".tsv":
		return "text/tab-separated-values"
	case ".json":
		return "application/json"
	case ".html", ".htm":
		return "text/html"
	case ".xml":
		return "application/xml"
	case ".zip":
		return "application/zip"
	case ".gz":
		return "application/gzip"
	}
	return "application/octet-stream"
}
