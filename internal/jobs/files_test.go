package jobs

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/internal/jobs/jobstest"
)

// chunkStack is stack with a small chunk size and session "s-o" open.
func chunkStack(t *testing.T, eng Engine, chunk int) *Client {
	c := stack(t, eng)
	c.cfg.ChunkBytes = chunk
	if _, err := c.OpenSession(context.Background(), "o", core.Limits{}); err != nil {
		t.Fatal(err)
	}
	return c
}

func randomBytes(n int) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func TestPutGetFileChunked(t *testing.T) {
	eng := jobstest.NewEngine()
	c := chunkStack(t, eng, 1000)
	ctx := context.Background()
	data := randomBytes(10_500)
	n, err := c.PutFile(ctx, "o", "s-o", "d/f.bin", bytes.NewReader(data))
	if err != nil || n != int64(len(data)) {
		t.Fatalf("put: %d %v", n, err)
	}
	sum := sha256.Sum256(data)
	size, got, ok := eng.File("s-o", "d/f.bin")
	if !ok || size != int64(len(data)) || got != hex.EncodeToString(sum[:]) {
		t.Fatalf("stored %d %s", size, got)
	}
	if puts, _ := eng.Ops(); puts != 11 {
		t.Errorf("chunked put took %d jobs, want 11", puts)
	}
	var out bytes.Buffer
	var announced int64 = -1
	n, err = c.GetFile(ctx, "o", "s-o", "d/f.bin", func(sz int64) io.Writer { announced = sz; return &out })
	if err != nil || n != int64(len(data)) || announced != int64(len(data)) || !bytes.Equal(out.Bytes(), data) {
		t.Fatalf("get: n=%d announced=%d err=%v equal=%v", n, announced, err, bytes.Equal(out.Bytes(), data))
	}
	if _, gets := eng.Ops(); gets != 11 {
		t.Errorf("chunked get took %d jobs, want 11", gets)
	}
}

func TestPutFileEmptyAndCapped(t *testing.T) {
	eng := jobstest.NewEngine()
	c := chunkStack(t, eng, 1000)
	ctx := context.Background()
	if n, err := c.PutFile(ctx, "o", "s-o", "empty", bytes.NewReader(nil)); err != nil || n != 0 {
		t.Fatalf("empty: %d %v", n, err)
	}
	if size, _, ok := eng.File("s-o", "empty"); !ok || size != 0 {
		t.Fatal("empty file not created")
	}
	// a body cut by its cap while reading: the error comes back and the
	// partial file is truncated
	rec := httptest.NewRecorder()
	body := http.MaxBytesReader(rec, io.NopCloser(bytes.NewReader(randomBytes(5000))), 3500)
	_, err := c.PutFile(ctx, "o", "s-o", "big", body)
	var mbe *http.MaxBytesError
	if !errors.As(err, &mbe) {
		t.Fatalf("capped: %v", err)
	}
	if size, _, ok := eng.File("s-o", "big"); !ok || size != 0 {
		t.Fatalf("partial file kept %d bytes", size)
	}
}
