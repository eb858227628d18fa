package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"

	"github.com/airlock-dev/airlock/core"
	"github.com/gin-gonic/gin"
)

// decodeJSON reads the request body into v. An empty body leaves v as is
// when allowEmpty; malformed JSON is a 400, an oversized body a 413.
func decodeJSON(c *gin.Context, v any, allowEmpty bool) error {
	data, err := io.ReadAll(c.Request.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return err
		}
		return newError(core.ErrInvalid, "could not read the request body")
	}
	if len(bytes.TrimSpace(data)) == 0 {
		if allowEmpty {
			return nil
		}
		return newError(core.ErrInvalid, "request body is empty; send a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return newError(core.ErrInvalid, "malformed JSON body: "+err.Error())
	}
	if dec.More() {
		return newError(core.ErrInvalid, "malformed JSON body: trailing data after the object")
	}
	return nil
}

// limitsBody is the wire form of sandbox limits. Every field lowers the
// server default; zero means the default.
type limitsBody struct {
	MemoryBytes    int64   `json:"memory_bytes,omitempty"`
	CPUs           float64 `json:"cpus,omitempty"`
	Pids           int64   `json:"pids,omitempty"`
	TimeoutSeconds float64 `json:"timeout_seconds,omitempty"`
	OutputBytes    int     `json:"output_bytes,omitempty"`
	TmpfsBytes     int64   `json:"tmpfs_bytes,omitempty"`
	NoFile         int64   `json:"nofile,omitempty"`
	FileSizeBytes  int64   `json:"file_size_bytes,omitempty"`
}

// toSandbox checks the values are not negative and converts them.
func (l *limitsBody) toSandbox() (core.Limits, error) {
	if l == nil {
		return core.Limits{}, nil
	}
	if l.MemoryBytes < 0 || l.CPUs < 0 || l.Pids < 0 || l.TimeoutSeconds < 0 || l.OutputBytes < 0 ||
		l.TmpfsBytes < 0 || l.NoFile < 0 || l.FileSizeBytes < 0 {
		return core.Limits{}, newError(core.ErrInvalid, "limits must not be negative")
	}
	return core.Limits{
		Memory:      l.MemoryBytes,
		CPUs:        l.CPUs,
		Pids:        l.Pids,
		Timeout:     core.Seconds(l.TimeoutSeconds), // saturating: 9.3e9 stays over the ceiling
		OutputBytes: l.OutputBytes,
		TmpfsBytes:  l.TmpfsBytes,
		NoFile:      l.NoFile,
		FileSize:    l.FileSizeBytes,
	}, nil
}

// inputFolder resolves an input folder name from the operator's allowlist.
func (s *Server) inputFolder(name string) (string, error) {
	if name == "" {
		return "", nil
	}
	p, ok := s.cfg.InputFolders[name]
	if !ok {
		return "", newError(core.ErrInvalid, fmt.Sprintf("unknown input folder %q", name)).
			withDetails(map[string]any{"allowed": s.inputNames()})
	}
	// The host path is the operator's business: the client hears the name.
	if st, err := os.Stat(p); err != nil || !st.IsDir() {
		s.log.Warn("api: input folder is not available", "input", name, "path", p, "err", err)
		return "", newError(core.ErrInvalid, fmt.Sprintf("input folder %s is not available", name))
	}
	return p, nil
}

// inputNames lists the allowed input folder names.
func (s *Server) inputNames() []string {
	names := make([]string, 0, len(s.cfg.InputFolders))
	for n := range s.cfg.InputFolders {
		names = append(names, n)
	}
	return names
}
