package api

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// httpMetrics are the API's own Prometheus metrics.
type httpMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	inFlight prometheus.Gauge
}

// newHTTPMetrics creates the metrics and registers them on reg.
func newHTTPMetrics(reg prometheus.Registerer) (*httpMetrics, error) {
	m := &httpMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "airlock", Subsystem: "http", Name: "requests_total",
			Help: "HTTP requests answered, by method, route pattern and status code.",
		}, []string{"method", "route", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "airlock", Subsystem: "http", Name: "request_duration_seconds",
			Help:    "HTTP request latency, by method and route pattern.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120},
		}, []string{"method", "route"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "airlock", Subsystem: "http", Name: "in_flight_requests",
			Help: "HTTP requests being served, including open event streams.",
		}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.duration, m.inFlight} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("api metrics: %w", err)
		}
	}
	return m, nil
}

// observe records one answered request. Labels are bounded whatever the
// client sends: methods outside the standard set become "other", and the
// route is a registered pattern or "unmatched" (see observe middleware).
func (m *httpMetrics) observe(method, route string, code int, d time.Duration) {
	method = methodLabel(method)
	m.requests.WithLabelValues(method, route, strconv.Itoa(code)).Inc()
	m.duration.WithLabelValues(method, route).Observe(d.Seconds())
}

// methodLabel folds any non-standard HTTP method into "other".
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions:
		return m
	}
	return "other"
}
