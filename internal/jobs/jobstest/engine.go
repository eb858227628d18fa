package jobstest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"sync"

	"github.com/airlock-dev/airlock/core"
)

// file is one stored file: its running hash, size and (when small) bytes.
type file struct {
	h    hash.Hash
	size int64
	data []byte // kept only up to keepBytes, for downloads in tests
}

// DefaultKeepBytes is how much of each file NewEngine keeps for OpFileGet.
const DefaultKeepBytes = 4 << 20

// Engine is a fake sandbox engine holding sessions' files.
type Engine struct {
	// MaxFile refuses a file growing past this many bytes (0: no limit).
	MaxFile int64
	// KeepBytes is how much of each file is kept for OpFileGet (a download
	// returns at most this much); 0 keeps only sizes and sums.
	KeepBytes int

	mu    sync.Mutex
	files map[string]*file
	puts  int
	gets  int
}

// NewEngine returns an empty engine.
func NewEngine() *Engine { return &Engine{files: map[string]*file{}, KeepBytes: DefaultKeepBytes} }

// Handle implements jobs.Engine: sessions always exist, file ops work on
// the stored files, anything else answers ok.
func (e *Engine) Handle(_ context.Context, req core.Request) (core.Result, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	key := req.SessionID + "/" + req.Path
	switch req.Op {
	case core.OpSessionOpen:
		return core.Result{Status: core.StatusOK, SessionID: "s-" + req.Owner}, nil
	case core.OpFilePut:
		e.puts++
		f := e.files[key]
		off := req.Offset
		if off == 0 || f == nil {
			if off != 0 {
				return core.Result{Status: core.StatusRejected, Message: fmt.Sprintf("offset %d: no such file", off)}, nil
			}
			f = &file{h: sha256.New()}
			e.files[key] = f
		}
		if off != f.size {
			return core.Result{Status: core.StatusRejected, Message: fmt.Sprintf("offset %d is not the file size %d", off, f.size)}, nil
		}
		if e.MaxFile > 0 && f.size+int64(len(req.Data)) > e.MaxFile {
			return core.Result{Status: core.StatusRejected, Message: "file too large"}, nil
		}
		f.h.Write(req.Data)
		f.size += int64(len(req.Data))
		if len(f.data) < e.KeepBytes {
			f.data = append(f.data, req.Data[:min(len(req.Data), e.KeepBytes-len(f.data))]...)
		}
		return core.Result{Status: core.StatusOK, Size: f.size}, nil
	case core.OpFileGet:
		e.gets++
		f := e.files[key]
		if f == nil {
			return core.Result{Status: core.StatusRejected, Message: "no such file"}, nil
		}
		lo := min(req.Offset, int64(len(f.data)))
		hi := int64(len(f.data))
		if req.Length > 0 {
			hi = min(hi, lo+req.Length)
		}
		return core.Result{Status: core.StatusOK, Data: bytes.Clone(f.data[lo:hi]), Size: int64(len(f.data))}, nil
	}
	return core.Result{Status: core.StatusOK}, nil
}

// File returns the size and hex SHA-256 of session's path, ok false when
// it does not exist.
func (e *Engine) File(session, path string) (size int64, sum string, ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	f := e.files[session+"/"+path]
	if f == nil {
		return 0, "", false
	}
	return f.size, hex.EncodeToString(f.h.Sum(nil)), true
}

// Ops returns how many OpFilePut and OpFileGet requests were handled.
func (e *Engine) Ops() (puts, gets int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.puts, e.gets
}
