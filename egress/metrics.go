package egress

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// proxyMetrics are the proxy's Prometheus series. Labels are bounded sets
// (kind, result, reason); owners and hosts are in the audit events, never
// in labels.
type proxyMetrics struct {
	attempts *prometheus.CounterVec
	bytes    *prometheus.CounterVec
	open     prometheus.Gauge
	calls    prometheus.Gauge
}

// newProxyMetrics builds the series and registers them with reg (nil:
// kept but not exported).
func newProxyMetrics(reg prometheus.Registerer) (*proxyMetrics, error) {
	m := &proxyMetrics{
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "airlock_egress_attempts_total",
			Help: "Connection attempts through the egress proxy by kind (connect, http), result (allowed, refused) and reason.",
		}, []string{"kind", "result", "reason"}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "airlock_egress_bytes_total",
			Help: "Bytes relayed by the egress proxy, both ways, by kind.",
		}, []string{"kind"}),
		open: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "airlock_egress_client_connections",
			Help: "Client connections open to the egress proxy.",
		}),
		calls: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "airlock_egress_registered_calls",
			Help: "Calls registered with the egress proxy (sandboxes that may use it now).",
		}),
	}
	return m, register(reg, m.attempts, m.bytes, m.open, m.calls)
}

// attempt counts one finished attempt.
func (m *proxyMetrics) attempt(kind string, allowed bool, reason string) {
	m.attempts.WithLabelValues(kind, result(allowed), reason).Inc()
}

// result is the result label of an attempt.
func result(allowed bool) string {
	if allowed {
		return "allowed"
	}
	return "refused"
}

// fetchMetrics are the fetcher's Prometheus series.
type fetchMetrics struct {
	attempts *prometheus.CounterVec
	bytes    prometheus.Counter
}

// newFetchMetrics builds the series and registers them with reg (nil:
// kept but not exported).
func newFetchMetrics(reg prometheus.Registerer) (*fetchMetrics, error) {
	m := &fetchMetrics{
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "airlock_fetch_attempts_total",
			Help: "fetch_url hops by result (allowed, refused) and reason.",
		}, []string{"result", "reason"}),
		bytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "airlock_fetch_bytes_total",
			Help: "Bytes fetch_url moved on the wire, both ways.",
		}),
	}
	return m, register(reg, m.attempts, m.bytes)
}

// register registers cs with reg (nil: none).
func register(reg prometheus.Registerer, cs ...prometheus.Collector) error {
	if reg == nil {
		return nil
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("register: %w", err)
		}
	}
	return nil
}
