package queue

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are one queue's Prometheus instruments, shared by its workers.
type metrics struct {
	inflight prometheus.Gauge
	retries  prometheus.Counter
	dead     prometheus.Counter
	wait     prometheus.Histogram
	e2e      *prometheus.HistogramVec
}

// latencyBuckets span 250µs to 10 minutes.
var latencyBuckets = prometheus.ExponentialBucketsRange(0.00025, 600, 20)

// newMetrics builds the instruments and registers them, with a depth gauge
// computed by depth at scrape time, on reg (nil registers nothing).
func newMetrics(reg prometheus.Registerer, backend string, depth func() float64) (*metrics, error) {
	labels := prometheus.Labels{"backend": backend}
	m := &metrics{
		inflight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "airlock_queue_inflight_jobs", ConstLabels: labels,
			Help: "Jobs currently running in this process's workers.",
		}),
		retries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "airlock_queue_retries_total", ConstLabels: labels,
			Help: "Job deliveries after the first (reclaimed from a dead, stalled or stopped worker).",
		}),
		dead: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "airlock_queue_dead_letters_total", ConstLabels: labels,
			Help: "Jobs moved to the dead-letter stream after too many deliveries.",
		}),
		wait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "airlock_queue_wait_seconds", ConstLabels: labels, Buckets: latencyBuckets,
			Help: "Time from a job's acceptance to its start on a worker.",
		}),
		e2e: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "airlock_queue_job_seconds", ConstLabels: labels, Buckets: latencyBuckets,
			Help: "End-to-end time of Queue.Do as the caller saw it, by outcome.",
		}, []string{"outcome"}),
	}
	if reg == nil {
		return m, nil
	}
	depthGauge := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "airlock_queue_depth", ConstLabels: labels,
		Help: "Accepted jobs not yet finished (queued plus running), queue-wide.",
	}, depth)
	for _, c := range []prometheus.Collector{m.inflight, m.retries, m.dead, m.wait, m.e2e, depthGauge} {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if errors.As(err, &are) {
				return nil, fmt.Errorf("queue: metrics already registered (one queue per registerer): %w", err)
			}
			return nil, fmt.Errorf("queue: register metrics: %w", err)
		}
	}
	return m, nil
}
