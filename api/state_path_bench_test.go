package api

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/keys"
	"github.com/airlock-dev/airlock/state"
)

// BenchmarkSessionCallPath is the Go side of a warm session call through
// REST (the fake sandbox answers at once) on the embedded store, without
// and with a call id (an implicit idempotency key), quiet and beside a
// synced write every 10 ms (what automatic snapshots and flushes cost the
// committer); it reports p50 and p99 per call (issue 33: the store must
// add no disk sync and no wait for one). Each call is followed by a 1 ms
// pause, counted in ns/op. Run with
// `go test -run x -bench SessionCallPath -benchtime 300x ./api/`.
func BenchmarkSessionCallPath(b *testing.B) {
	for _, v := range []struct{ withID, beside bool }{{false, false}, {false, true}, {true, false}, {true, true}} {
		withID, beside := v.withID, v.beside
		b.Run(fmt.Sprint("id=", withID, "/beside_synced_writes=", beside), func(b *testing.B) {
			st, err := state.OpenBolt(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			ks, _ := keys.New("alice:" + keyAlice)
			srv, err := New(Config{Keys: ks, RateBurst: 1 << 20, RatePerSecond: -1, Heartbeat: time.Hour},
				Deps{Dispatcher: &fakeDispatcher{}, Sessions: newFakeSessions(), Runs: newFakeRuns(), State: st, Batches: state.NewMemory(time.Now)})
			if err != nil {
				b.Fatal(err)
			}
			do := func(path, body string) *httptest.ResponseRecorder {
				req := httptest.NewRequest("POST", path, strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer "+keyAlice)
				rec := httptest.NewRecorder()
				srv.ServeHTTP(rec, req)
				return rec
			}
			rec := do("/v1/sessions", "{}")
			if rec.Code != http.StatusCreated {
				b.Fatal(rec.Code, rec.Body.String())
			}
			id := strings.Split(strings.Split(rec.Body.String(), `"id":"`)[1], `"`)[0]
			stop := make(chan struct{})
			done := make(chan struct{})
			go func() {
				defer close(done)
				if !beside {
					return
				}
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					case <-time.After(10 * time.Millisecond):
					}
					_, _ = st.Put(b.Context(), state.Key{Kind: "other", ID: "x"}, []byte(fmt.Sprint(i)), state.PutOptions{})
				}
			}()
			var d []time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				body := fmt.Sprintf(`{"id":"call_%d","type":"function","function":{"name":"run_python","arguments":"{\"code\":\"print(1)\"}"}}`, i)
				if !withID {
					body = `{"type":"function","function":{"name":"run_python","arguments":"{\"code\":\"print(1)\"}"}}`
				}
				t := time.Now()
				rec := do("/v1/sessions/"+id+"/tool-calls", body)
				d = append(d, time.Since(t))
				if rec.Code != http.StatusOK {
					b.Fatal(rec.Code, rec.Body.String())
				}
				time.Sleep(time.Millisecond)
			}
			b.StopTimer()
			close(stop)
			<-done
			sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
			b.ReportMetric(float64(d[len(d)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(d[len(d)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}
