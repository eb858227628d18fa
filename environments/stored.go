package environments

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/state"
)

// MaxStoredSourceBytes bounds the source (spec, wheels and files, JSON
// encoded) that SaveSource keeps in the state store for other hosts to
// build from. A larger one is not stored: only hosts that already hold
// its image serve it (SaveSource says so in its error).
const MaxStoredSourceBytes = 64 << 20

// sourceChunkBytes is the size of one stored chunk (under state.MaxValueSize).
const sourceChunkBytes = 4 << 20

// sourceKind is the state-store kind of stored sources: per environment
// and content hash, a manifest ("NAME/HASH") and its chunks ("NAME/HASH/N").
const sourceKind = "environment-source"

// storedSource is a Source as it is kept in the state store.
type storedSource struct {
	Spec   Spec         `json:"spec"`
	Wheels []storedBlob `json:"wheels,omitempty"`
	Files  []storedBlob `json:"files,omitempty"`
}

// storedBlob is a Blob as it is kept in the state store.
type storedBlob struct {
	Name string `json:"name"`
	Data []byte `json:"data"`
	Exec bool   `json:"exec,omitempty"`
}

// sourceManifest names a stored source's chunks and checks their bytes.
type sourceManifest struct {
	Chunks int    `json:"chunks"`
	Bytes  int    `json:"bytes"`
	SHA256 string `json:"sha256"`
}

func manifestKey(name, hash string) state.Key {
	return state.Key{Kind: sourceKind, ID: name + "/" + hash}
}

func chunkKey(name, hash string, i int) state.Key {
	return state.Key{Kind: sourceKind, ID: fmt.Sprintf("%s/%s/%d", name, hash, i)}
}

// SaveSource keeps src, the source of environment image hash, in the
// state store (chunks first, the manifest last, so a reader never sees a
// half-written one), so any worker can build the image from it. A source
// over MaxStoredSourceBytes is refused with core.ErrInvalid. Saving the
// same hash again is a no-op.
func (r *Registry) SaveSource(ctx context.Context, src Source, hash string) error {
	name := src.Spec.Name
	if _, err := r.store.Get(ctx, manifestKey(name, hash)); err == nil {
		return nil
	}
	ss := storedSource{Spec: src.Spec}
	for _, b := range src.Wheels {
		ss.Wheels = append(ss.Wheels, storedBlob(b))
	}
	for _, b := range src.Files {
		ss.Files = append(ss.Files, storedBlob(b))
	}
	data, err := json.Marshal(ss)
	if err != nil {
		return fmt.Errorf("environments: encode the source of %s: %w", name, err)
	}
	if len(data) > MaxStoredSourceBytes {
		return core.Errorf("environments", core.ErrInvalid, fmt.Sprintf("the source of %s is %d bytes encoded, over the %d bytes kept in the state store: only hosts that hold its image serve it", name, len(data), MaxStoredSourceBytes))
	}
	sum := sha256.Sum256(data)
	man := sourceManifest{Bytes: len(data), SHA256: hex.EncodeToString(sum[:])}
	for off := 0; off < len(data); off += sourceChunkBytes {
		end := min(off+sourceChunkBytes, len(data))
		if _, err := r.store.Put(ctx, chunkKey(name, hash, man.Chunks), data[off:end], state.PutOptions{}); err != nil {
			return fmt.Errorf("environments: store the source of %s: %w", name, err)
		}
		man.Chunks++
	}
	mb, _ := json.Marshal(man)
	if _, err := r.store.Put(ctx, manifestKey(name, hash), mb, state.PutOptions{}); err != nil {
		return fmt.Errorf("environments: store the source of %s: %w", name, err)
	}
	return nil
}

// LoadSource reads the stored source of environment name's image hash
// and checks it again (NewSource). A missing one is core.ErrNotFound.
func (r *Registry) LoadSource(ctx context.Context, name, hash string) (Source, error) {
	it, err := r.store.Get(ctx, manifestKey(name, hash))
	if errors.Is(err, state.ErrNotFound) {
		return Source{}, core.Errorf("environments", core.ErrNotFound, fmt.Sprintf("no stored source of environment %s (image %s): build it again with `airlock env build` so other hosts can build it", name, hash))
	}
	if err != nil {
		return Source{}, fmt.Errorf("environments: read the source of %s: %w", name, err)
	}
	var man sourceManifest
	if err := json.Unmarshal(it.Value, &man); err != nil {
		return Source{}, fmt.Errorf("environments: decode the source manifest of %s: %w", name, err)
	}
	var buf bytes.Buffer
	for i := range man.Chunks {
		c, err := r.store.Get(ctx, chunkKey(name, hash, i))
		if err != nil {
			return Source{}, fmt.Errorf("environments: read chunk %d of the source of %s: %w", i, name, err)
		}
		buf.Write(c.Value)
	}
	sum := sha256.Sum256(buf.Bytes())
	if buf.Len() != man.Bytes || hex.EncodeToString(sum[:]) != man.SHA256 {
		return Source{}, core.Errorf("environments", core.ErrInternal, fmt.Sprintf("the stored source of %s (image %s) is damaged: build it again", name, hash))
	}
	var ss storedSource
	if err := json.Unmarshal(buf.Bytes(), &ss); err != nil {
		return Source{}, fmt.Errorf("environments: decode the source of %s: %w", name, err)
	}
	blobs := func(in []storedBlob) []Blob {
		out := make([]Blob, 0, len(in))
		for _, b := range in {
			out = append(out, Blob(b))
		}
		return out
	}
	return NewSource(ss.Spec, blobs(ss.Wheels), blobs(ss.Files))
}

// DeleteSources removes every stored source of environment name except
// that of hash keep ("" removes all).
func (r *Registry) DeleteSources(ctx context.Context, name, keep string) error {
	var errs []error
	after := name + "/"
	for {
		items, err := r.store.List(ctx, sourceKind, "", after, 100)
		if err != nil {
			return fmt.Errorf("environments: list the sources of %s: %w", name, err)
		}
		for _, it := range items {
			id := it.Key.ID
			if !strings.HasPrefix(id, name+"/") {
				return errors.Join(errs...)
			}
			if keep != "" && (id == name+"/"+keep || strings.HasPrefix(id, name+"/"+keep+"/")) {
				continue
			}
			if err := r.store.Delete(ctx, it.Key, 0); err != nil {
				errs = append(errs, err)
			}
		}
		if len(items) < 100 {
			return errors.Join(errs...)
		}
		after = items[len(items)-1].Key.ID
	}
}
