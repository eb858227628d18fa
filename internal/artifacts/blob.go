package artifacts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/state"
)

// State store kinds of an artifact: its record, and its bytes in chunks.
const (
	artifactKind = "artifact"
	chunkKind    = "artchunk"
)

// chunkBytes is the size of one chunk of an artifact's bytes, under
// state.MaxValueSize.
const chunkBytes = 4 << 20

// record is an artifact as kept in the state store, without its bytes.
type record struct {
	Session string `json:"session"`
	Name    string `json:"name"`
	MIME    string `json:"mime"`
	SHA256  string `json:"sha256"`
	Size    int64  `json:"size"`
	Chunks  int    `json:"chunks"`
}

// key is the store key of owner's artifact id.
func key(owner, id string) state.Key { return state.Key{Kind: artifactKind, Owner: owner, ID: id} }

// chunkKey is the store key of chunk i of owner's artifact id.
func chunkKey(owner, id string, i int) state.Key {
	return state.Key{Kind: chunkKind, Owner: owner, ID: id + "/" + strconv.Itoa(i)}
}

// notFound is the error of an artifact that is not (or no longer) kept.
func notFound() error {
	return core.Errorf("artifacts", core.ErrNotFound, "artifact not found or expired")
}

// meta reads owner's artifact record id.
func (s *Store) meta(ctx context.Context, owner, id string) (record, error) {
	it, err := s.st.Get(ctx, key(owner, id))
	switch {
	case errors.Is(err, state.ErrNotFound):
		return record{}, notFound()
	case err != nil:
		return record{}, fmt.Errorf("artifacts: read %s: %w", id, err)
	}
	var m record
	if err := json.Unmarshal(it.Value, &m); err != nil {
		return record{}, core.E("artifacts", core.ErrInternal, fmt.Errorf("decode %s: %w", id, err))
	}
	return m, nil
}

// write stores a's chunks, then its record, with the artifact TTL. kept is
// false when the record was already there (the same artifact, put
// concurrently): the chunks written are the same bytes.
func (s *Store) write(ctx context.Context, owner, session, id string, a core.Artifact) (kept bool, err error) {
	m := record{Session: session, Name: a.Name, MIME: a.MIME, SHA256: a.SHA256, Size: int64(len(a.Data))}
	opt := state.PutOptions{TTL: s.cfg.TTL}
	for off := 0; off < len(a.Data); off += chunkBytes {
		if _, err := s.st.Put(ctx, chunkKey(owner, id, m.Chunks), a.Data[off:min(off+chunkBytes, len(a.Data))], opt); err != nil {
			return false, fmt.Errorf("artifacts: write %s: %w", id, err)
		}
		m.Chunks++
	}
	b, err := json.Marshal(m)
	if err != nil {
		return false, fmt.Errorf("artifacts: encode %s: %w", id, err)
	}
	opt.IfVersion = -1
	switch _, err := s.st.Put(ctx, key(owner, id), b, opt); {
	case errors.Is(err, state.ErrConflict):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("artifacts: write %s: %w", id, err)
	}
	return true, nil
}

// read returns the bytes of owner's artifact id described by m.
func (s *Store) read(ctx context.Context, owner, id string, m record) ([]byte, error) {
	data := make([]byte, 0, m.Size)
	for i := range m.Chunks {
		it, err := s.st.Get(ctx, chunkKey(owner, id, i))
		switch {
		case errors.Is(err, state.ErrNotFound):
			return nil, notFound() // expired between the record and this chunk
		case err != nil:
			return nil, fmt.Errorf("artifacts: read %s: %w", id, err)
		}
		data = append(data, it.Value...)
	}
	if int64(len(data)) != m.Size {
		return nil, core.E("artifacts", core.ErrInternal, fmt.Errorf("%s: %d bytes stored, %d recorded", id, len(data), m.Size))
	}
	return data, nil
}
