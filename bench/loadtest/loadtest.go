package loadtest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// DefaultBody is the tool call the load test sends: print(1) in Python.
const DefaultBody = `{"id":"call_bench","type":"function","function":{"name":"run_python","arguments":"{\"code\":\"print(1)\"}"}}`

// Options configures Run.
type Options struct {
	// BaseURL is the server, e.g. http://127.0.0.1:8080. Loopback only.
	BaseURL string
	// APIKey is sent as a Bearer token when not empty.
	APIKey string
	// Concurrency lists the client counts to measure; default 1, 8 and 32.
	Concurrency []int
	// Requests is the number of requests per level; default 200.
	Requests int
	// Body is the request body; default DefaultBody.
	Body []byte
	// Client sends the requests; nil means a client with enough idle
	// connections per host for the highest concurrency.
	Client *http.Client
}

// Result is one concurrency level's measurement.
type Result struct {
	Concurrency int
	Requests    int
	Elapsed     time.Duration
	RPS         float64
	P50, P99    time.Duration
	Max         time.Duration
	// Status counts answers by HTTP status; transport failures are Errors.
	Status map[int]int
	Errors int
}

// Unexpected counts answers other than 200 and 429, plus transport errors.
// A healthy server under load answers only those two.
func (r Result) Unexpected() int {
	n := r.Errors
	for code, c := range r.Status {
		if code != http.StatusOK && code != http.StatusTooManyRequests {
			n += c
		}
	}
	return n
}

// String renders the result as one line.
func (r Result) String() string {
	codes := make([]int, 0, len(r.Status))
	for c := range r.Status {
		codes = append(codes, c)
	}
	sort.Ints(codes)
	var mix []string
	for _, c := range codes {
		mix = append(mix, fmt.Sprintf("%d×%d", c, r.Status[c]))
	}
	if r.Errors > 0 {
		mix = append(mix, fmt.Sprintf("err×%d", r.Errors))
	}
	return fmt.Sprintf("c=%-3d n=%-5d %8.1f req/s  p50 %-9v p99 %-9v max %-9v  %s",
		r.Concurrency, r.Requests, r.RPS, r.P50.Round(10*time.Microsecond), r.P99.Round(10*time.Microsecond),
		r.Max.Round(10*time.Microsecond), strings.Join(mix, " "))
}

// Run measures each concurrency level in turn.
func Run(ctx context.Context, o Options) ([]Result, error) {
	target, err := endpoint(o.BaseURL)
	if err != nil {
		return nil, err
	}
	if len(o.Concurrency) == 0 {
		o.Concurrency = []int{1, 8, 32}
	}
	if o.Requests <= 0 {
		o.Requests = 200
	}
	if len(o.Body) == 0 {
		o.Body = []byte(DefaultBody)
	}
	if o.Client == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = slices.Max(o.Concurrency)
		o.Client = &http.Client{Transport: tr, Timeout: 5 * time.Minute}
	}
	out := make([]Result, 0, len(o.Concurrency))
	for _, c := range o.Concurrency {
		if c <= 0 {
			return out, fmt.Errorf("loadtest: concurrency %d must be positive", c)
		}
		r, err := level(ctx, o, target, c)
		if err != nil {
			return out, err
		}
		out = append(out, r)
	}
	return out, nil
}

// endpoint checks base is a loopback http(s) URL and returns the tool-call URL.
func endpoint(base string) (string, error) {
	u, err := url.Parse(strings.TrimRight(base, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("loadtest: base URL %q must be http(s)://HOST:PORT", base)
	}
	host := u.Hostname()
	ip := net.ParseIP(host)
	if !strings.EqualFold(host, "localhost") && (ip == nil || !ip.IsLoopback()) {
		return "", fmt.Errorf("loadtest: refusing non-loopback target %q", host)
	}
	return u.String() + "/v1/tool-calls", nil
}

// level sends o.Requests requests from c clients and summarises them.
func level(ctx context.Context, o Options, target string, c int) (Result, error) {
	jobs := make(chan struct{})
	type sample struct {
		d    time.Duration
		code int // 0 for a transport error
	}
	samples := make([]sample, 0, o.Requests)
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	for range c {
		wg.Go(func() {
			for range jobs {
				t := time.Now()
				code := send(ctx, o, target)
				mu.Lock()
				samples = append(samples, sample{time.Since(t), code})
				mu.Unlock()
			}
		})
	}
feed:
	for range o.Requests {
		select {
		case jobs <- struct{}{}:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	elapsed := time.Since(start)
	if err := ctx.Err(); err != nil {
		return Result{}, fmt.Errorf("loadtest: %w", err)
	}
	r := Result{Concurrency: c, Requests: len(samples), Elapsed: elapsed, Status: map[int]int{}}
	ds := make([]time.Duration, 0, len(samples))
	for _, s := range samples {
		ds = append(ds, s.d)
		if s.code == 0 {
			r.Errors++
		} else {
			r.Status[s.code]++
		}
	}
	slices.Sort(ds)
	if n := len(ds); n > 0 {
		r.P50, r.P99, r.Max = ds[(n-1)*50/100], ds[(n-1)*99/100], ds[n-1]
		r.RPS = float64(n) / elapsed.Seconds()
	}
	return r, nil
}

// send makes one request and returns its status (0 on a transport error).
func send(ctx context.Context, o Options, target string) int {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(o.Body))
	if err != nil {
		return 0
	}
	req.Header.Set("Content-Type", "application/json")
	if o.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+o.APIKey)
	}
	res, err := o.Client.Do(req)
	if err != nil {
		return 0
	}
	_, _ = io.Copy(io.Discard, res.Body)
	_ = res.Body.Close()
	return res.StatusCode
}
