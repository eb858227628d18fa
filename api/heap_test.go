package api

import (
	"context"
	"encoding/binary"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/dispatcher"
	"github.com/airlock-dev/airlock/internal/jobs"
	"github.com/airlock-dev/airlock/keys"
	"github.com/airlock-dev/airlock/queue"
	"github.com/airlock-dev/airlock/state"
)

// outputsEngine is a sandbox engine whose every call writes seven files
// of size bytes to /work/outputs, each different from all before.
type outputsEngine struct {
	size  int
	calls atomic.Int64
}

// Handle implements jobs.Engine.
func (e *outputsEngine) Handle(_ context.Context, _ core.Request) (core.Result, error) {
	n := e.calls.Add(1)
	res := core.Result{Status: core.StatusOK, Stdout: "wrote 7 files\n"}
	for i := range 7 {
		data := make([]byte, e.size)
		binary.LittleEndian.PutUint64(data, uint64(n))
		data[8] = byte(i)
		res.Artifacts = append(res.Artifacts, core.Artifact{Name: fmt.Sprintf("outputs/part-%d.bin", i), MIME: "application/octet-stream",
			Size: int64(len(data)), Data: data})
	}
	return res, nil
}

// registryTools serves the dispatcher's registry as ToolsJSON.
type registryTools struct{ *dispatcher.Dispatcher }

// ToolsJSON implements Dispatcher.
func (d registryTools) ToolsJSON() []map[string]any { return d.Registry().OpenAIToolsJSON() }

// heapBytes is the live heap after a full collection.
func heapBytes() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// TestArtifactsDoNotGrowTheHeap is issue 26's attack: calls that each write
// 7 MiB of outputs grew the server's Go heap by some 14 MiB a call (594 MiB
// after 28 calls), past every artifact quota, because the in-process queue
// kept each call's outcome, artifact bytes included, for two minutes, and
// the API kept a second copy of each artifact in memory. Through the real
// in-process queue, jobs runner, dispatcher, API and embedded (Bolt) state
// store, 200 such calls leave the heap within 100 MiB of where it started,
// while the key's artifact quota (16 MiB here, on disk) keeps refusing
// what it cannot hold. (The
// race detector slows JSON ~10×: under it the files are 128 KiB, 175 MiB
// in all, 233 MiB as the queue's JSON kept them, still over twice the
// bound.)
func TestArtifactsDoNotGrowTheHeap(t *testing.T) {
	q, err := queue.NewMemory(queue.Config{}, queue.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	eng := &outputsEngine{size: 1 << 20}
	if raceEnabled {
		eng.size = 128 << 10
	}
	w, err := q.NewWorker(queue.WorkerConfig{Concurrency: 2}, jobs.NewRunner(eng))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done; _ = q.Close() })
	st, err := state.OpenBolt(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	ks, err := keys.New("alice:" + keyAlice)
	if err != nil {
		t.Fatal(err)
	}
	disp := dispatcher.New(dispatcher.DefaultConfig(), jobs.NewClient(q, jobs.ClientConfig{}), nil)
	srv, err := New(Config{Keys: ks, RatePerSecond: -1, ArtifactOwnerMaxBytes: 16 << 20}, Deps{Dispatcher: registryTools{disp}, State: st})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	call := func(i int) {
		body := fmt.Sprintf(`{"id":"call_%d","function":{"name":"run_python","arguments":{"code":"write(%d)"}}}`, i, i)
		req, _ := http.NewRequest("POST", ts.URL+"/v1/tool-calls", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+keyAlice)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("call %d: %d", i, res.StatusCode)
		}
	}
	call(0) // warm the server's own structures
	start := heapBytes()
	began := time.Now()
	for i := 1; i <= 200; i++ {
		call(i)
	}
	grown := heapBytes() - start
	t.Logf("200 calls of 7 × %d KiB of outputs in %v: heap %+.1f MiB", eng.size>>10, time.Since(began).Round(time.Second), float64(grown)/(1<<20))
	if grown > 100<<20 {
		t.Fatalf("the heap grew by %.0f MiB over 200 calls, over the 100 MiB bound", float64(grown)/(1<<20))
	}
	if used, n, err := srv.artifacts.Usage(context.Background(), "alice"); err != nil || used > 16<<20 || n == 0 {
		t.Fatalf("alice holds %d bytes in %d artifacts; her quota is 16 MiB: %v", used, n, err)
	}
}
