package sandbox

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the engine's Prometheus series; with no Registerer they are
// kept but never exported.
type metrics struct {
	bootWall *prometheus.HistogramVec
	bootCPU  *prometheus.HistogramVec
	warm     *prometheus.CounterVec
	idle     *prometheus.GaugeVec
	// warmMemory is the warm memory budget's use (Limits.Memory over the
	// idle and booting warm containers), exact at every change.
	warmMemory prometheus.Gauge
	unpack     prometheus.Histogram
	shares     *prometheus.CounterVec
	phases     *prometheus.HistogramVec // phases.go
	// stretchCalls and stretchSeconds count calls whose deadline moved
	// for time their code waited for a CPU, and the seconds it moved
	// (core.TimeoutStretch).
	stretchCalls   *prometheus.CounterVec
	stretchSeconds *prometheus.CounterVec
	sources        [3]atomic.Int64 // owner, generic, cold: the warm counter, readable here
}

// callSources are the values of the warm counter's source label.
var callSources = [3]string{"owner", "generic", "cold"}

// call counts one one-shot call by where its container came from.
func (m *metrics) call(source string) {
	m.warm.WithLabelValues(source).Inc()
	for i, s := range callSources {
		if s == source {
			m.sources[i].Add(1)
		}
	}
}

// WarmStats returns how many one-shot runner calls took their owner's
// warm container ("owner"), a generic warm one ("generic") or a new one
// ("cold") since the engine started.
func (e *Engine) WarmStats() map[string]int64 {
	out := map[string]int64{}
	for i, s := range callSources {
		out[s] = e.metrics.sources[i].Load()
	}
	return out
}

// newMetrics builds the series and registers them with reg (nil: none).
func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		bootWall: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "airlock_sandbox_boot_seconds", Help: "Wall time from container create to controller ready.",
			Buckets: []float64{0.25, 0.5, 1, 1.5, 2, 3, 5, 8, 13, 20},
		}, []string{"kind"}),
		bootCPU: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "airlock_sandbox_boot_cpu_seconds", Help: "CPU time a container used until its controller was ready (cgroup cpuacct).",
			Buckets: []float64{0.1, 0.25, 0.5, 1, 1.5, 2, 3, 5, 8},
		}, []string{"kind"}),
		warm: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "airlock_sandbox_calls_total",
			Help: "One-shot runner calls by where their container came from: owner (warm hit), generic (warm, new to the owner), cold (booted for the call).",
		}, []string{"source"}),
		idle: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "airlock_sandbox_idle_containers", Help: "Idle warm containers: generic, owned (an owner's interactive ones) or batch (an owner's batch-lane ones).",
		}, []string{"image", "kind"}),
		warmMemory: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "airlock_sandbox_warm_memory_bytes",
			Help: "Memory limits of the idle warm containers and those booting for the pools together; never above the warm memory budget.",
		}),
		unpack: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "airlock_sandbox_archive_unpack_seconds", Help: "Time the controller took to check and unpack a call's archive into /workspace.",
			Buckets: []float64{0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2, 5},
		}),
	}
	m.shares = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "airlock_sandbox_cpu_share_updates_total",
		Help: "CPU-share updates of warm containers: lowered for batch-lane calls (Config.BatchCPUShares), raised to the default when a generic one booted at low weight is ready; by result: ok or failed.",
	}, []string{"result"})
	m.phases = newPhaseHistogram()
	m.stretchCalls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "airlock_sandbox_stretched_calls_total",
		Help: "Calls whose deadline moved for time their code waited for a CPU (a busy machine or the call's cpus limit), by mode: oneshot or session.",
	}, []string{"mode"})
	m.stretchSeconds = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "airlock_sandbox_stretch_seconds_total",
		Help: "Seconds calls' deadlines moved for time their code waited for a CPU, by mode.",
	}, []string{"mode"})
	if reg != nil {
		for _, c := range []prometheus.Collector{m.bootWall, m.bootCPU, m.warm, m.idle, m.warmMemory, m.unpack, m.shares, m.phases, m.stretchCalls, m.stretchSeconds} {
			_ = reg.Register(c)
		}
	}
	return m
}

// unpacked records one archive's unpack time in the container.
func (m *metrics) unpacked(seconds float64) { m.unpack.Observe(seconds) }

// sharesUpdated counts one ContainerUpdate of a container's cpu.shares.
func (m *metrics) sharesUpdated(ok bool) {
	result := "ok"
	if !ok {
		result = "failed"
	}
	m.shares.WithLabelValues(result).Inc()
}

// stretched records how far one call's deadline moved (0: not at all).
func (m *metrics) stretched(mode string, d time.Duration) {
	if d > 0 {
		m.stretchCalls.WithLabelValues(mode).Inc()
		m.stretchSeconds.WithLabelValues(mode).Add(d.Seconds())
	}
}

// boot records one container's start cost; cpu < 0 means unknown.
func (m *metrics) boot(kind string, wall time.Duration, cpu float64) {
	m.bootWall.WithLabelValues(kind).Observe(wall.Seconds())
	if cpu >= 0 {
		m.bootCPU.WithLabelValues(kind).Observe(cpu)
	}
}
