package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// Client talks to one Airlock server. It is safe for concurrent use.
type Client struct {
	base      *url.URL
	key       string
	hc        *http.Client
	userAgent string
}

// Option configures a Client.
type Option func(*Client)

// WithAPIKey sends key as `Authorization: Bearer KEY` on every request.
// Without it the server must run in insecure-local mode.
func WithAPIKey(key string) Option { return func(c *Client) { c.key = key } }

// WithHTTPClient uses hc for every request instead of a default client.
// Tool calls can take minutes and event streams last long: give hc no
// overall Timeout and bound calls with their context instead.
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.hc = hc } }

// WithUserAgent sets the User-Agent header.
func WithUserAgent(ua string) Option { return func(c *Client) { c.userAgent = ua } }

// New returns a client of the server at baseURL, e.g. "http://127.0.0.1:8080".
func New(baseURL string, opts ...Option) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(baseURL, "/"))
	if err != nil {
		return nil, fmt.Errorf("airlock client: base URL %q: %w", baseURL, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("airlock client: base URL %q: want http(s)://host[:port]", baseURL)
	}
	c := &Client{base: u, hc: &http.Client{}, userAgent: "airlock-go-client/1"}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// request is one API request.
type request struct {
	method, path string
	query        url.Values
	header       http.Header
	body         io.Reader
	contentType  string
}

// jsonBody encodes v as a request body.
func (r *request) jsonBody(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("airlock client: encode %s %s body: %w", r.method, r.path, err)
	}
	r.body, r.contentType = bytes.NewReader(b), "application/json"
	return nil
}

// send performs r and returns the answer when its status is 2xx; any
// other status becomes an *APIError. The caller closes the body.
func (c *Client) send(ctx context.Context, r *request) (*http.Response, error) {
	target := c.base.String() + r.path // r.path is already escaped
	if len(r.query) > 0 {
		target += "?" + r.query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, r.method, target, r.body)
	if err != nil {
		return nil, fmt.Errorf("airlock client: %s %s: %w", r.method, r.path, err)
	}
	for k, vs := range r.header {
		req.Header[k] = vs
	}
	if r.contentType != "" {
		req.Header.Set("Content-Type", r.contentType)
	}
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	req.Header.Set("User-Agent", c.userAgent)
	res, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("airlock client: %s %s: %w", r.method, r.path, err)
	}
	if res.StatusCode < 200 || res.StatusCode > 299 {
		defer res.Body.Close()
		return nil, readAPIError(res)
	}
	return res, nil
}

// doJSON performs r and decodes a JSON answer into out (nil: discard).
func (c *Client) doJSON(ctx context.Context, r *request, out any) error {
	if r.header == nil {
		r.header = http.Header{}
	}
	r.header.Set("Accept", "application/json")
	res, err := c.send(ctx, r)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if out == nil {
		_, _ = io.Copy(io.Discard, res.Body)
		return nil
	}
	if err := json.NewDecoder(res.Body).Decode(out); err != nil {
		return fmt.Errorf("airlock client: %s %s: decode answer: %w", r.method, r.path, err)
	}
	return nil
}

// doBytes performs r and returns the whole answer as a Download.
func (c *Client) doBytes(ctx context.Context, r *request) (*Download, error) {
	res, err := c.send(ctx, r)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, fmt.Errorf("airlock client: %s %s: read answer: %w", r.method, r.path, err)
	}
	return newDownload(res, data), nil
}

// seg escapes one path segment.
func seg(s string) string { return url.PathEscape(s) }

// filePath escapes a slash-separated file path segment by segment.
func filePath(p string) string {
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for i, s := range parts {
		parts[i] = url.PathEscape(s)
	}
	return strings.Join(parts, "/")
}
