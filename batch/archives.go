package batch

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/state"
)

// archiveChunk is the size of one stored piece of an uploaded archive
// (a record holds at most state.MaxValueSize).
const archiveChunk = 4 << 20

// archiveMeta is the record naming an uploaded archive's chunks.
type archiveMeta struct {
	Size   int    `json:"size"`
	Chunks int    `json:"chunks"`
	SHA256 string `json:"sha256"`
}

func archiveKey(owner, id string, n int) state.Key {
	return state.Key{Kind: kindArc, Owner: owner, ID: fmt.Sprintf("%s/%04d", id, n)}
}

func chunkKey(owner, id string, n, c int) state.Key {
	return state.Key{Kind: kindArc, Owner: owner, ID: fmt.Sprintf("%s/%04d/%03d", id, n, c)}
}

// archiveTTL is how long a batch's archives are kept: its completion
// window plus Config.ArchiveRetention (for retries). It is never below a
// second: a TTL of 0 or less would keep the records forever.
func (m *Manager) archiveTTL(b Batch) time.Duration {
	return max(time.Unix(b.ExpiresAt, 0).Sub(m.cfg.Now())+m.cfg.ArchiveRetention, time.Second)
}

// putArchive stores uploaded archive n of batch id (1-based) in chunks.
func (m *Manager) putArchive(ctx context.Context, owner, id string, n int, data []byte, ttl time.Duration) error {
	if len(data) > core.MaxArchiveBytes {
		return core.E("batch.archive", core.ErrTooLarge, fmt.Errorf("archive %d is %d bytes, over the limit of %d bytes (16 MiB)", n, len(data), core.MaxArchiveBytes))
	}
	sum := sha256.Sum256(data)
	meta := archiveMeta{Size: len(data), SHA256: hex.EncodeToString(sum[:])}
	for c := 0; c*archiveChunk < len(data) || c == 0; c++ {
		end := min((c+1)*archiveChunk, len(data))
		if _, err := m.store.Put(ctx, chunkKey(owner, id, n, c), data[c*archiveChunk:end], state.PutOptions{TTL: ttl}); err != nil {
			return fmt.Errorf("batch: store archive %d of %s: %w", n, id, err)
		}
		meta.Chunks++
	}
	raw, _ := json.Marshal(meta)
	if _, err := m.store.Put(ctx, archiveKey(owner, id, n), raw, state.PutOptions{TTL: ttl}); err != nil {
		return fmt.Errorf("batch: store archive %d of %s: %w", n, id, err)
	}
	return nil
}

// errArchiveGone: the archive's records expired (or were never written).
var errArchiveGone = errors.New("the uploaded archive is no longer stored")

// getArchive reads uploaded archive n of batch id and checks its digest.
func (m *Manager) getArchive(ctx context.Context, owner, id string, n int) ([]byte, error) {
	it, err := m.store.Get(ctx, archiveKey(owner, id, n))
	if errors.Is(err, state.ErrNotFound) {
		return nil, errArchiveGone
	}
	if err != nil {
		return nil, fmt.Errorf("batch: read archive %d of %s: %w", n, id, err)
	}
	var meta archiveMeta
	if err := json.Unmarshal(it.Value, &meta); err != nil {
		return nil, fmt.Errorf("batch: decode archive %d of %s: %w", n, id, err)
	}
	var buf bytes.Buffer
	buf.Grow(meta.Size)
	for c := 0; c < meta.Chunks; c++ {
		p, err := m.store.Get(ctx, chunkKey(owner, id, n, c))
		if errors.Is(err, state.ErrNotFound) {
			return nil, errArchiveGone
		}
		if err != nil {
			return nil, fmt.Errorf("batch: read archive %d of %s: %w", n, id, err)
		}
		buf.Write(p.Value)
	}
	sum := sha256.Sum256(buf.Bytes())
	if buf.Len() != meta.Size || hex.EncodeToString(sum[:]) != meta.SHA256 {
		return nil, core.E("batch.archive", core.ErrInternal, fmt.Errorf("archive %d of %s is damaged in the store", n, id))
	}
	return buf.Bytes(), nil
}

// refreshArchives re-stores the archives the items use with a new TTL
// (on retry); an archive already gone stays gone and its items fail.
func (m *Manager) refreshArchives(ctx context.Context, b Batch, used map[int]bool) error {
	for n := range used {
		data, err := m.getArchive(ctx, b.Owner, b.ID, n)
		if errors.Is(err, errArchiveGone) {
			continue
		}
		if err != nil {
			return err
		}
		if err := m.putArchive(ctx, b.Owner, b.ID, n, data, m.archiveTTL(b)); err != nil {
			return err
		}
	}
	return nil
}
