package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/wire"
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

// limitsOf checks a request's limits are not negative and converts them;
// nil means none.
func limitsOf(l *wire.Limits) (core.Limits, error) {
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
		Timeout:     time.Duration(l.TimeoutSeconds * float64(time.Second)),
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
