package api

import (
	"time"

	"testing"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/internal/jobs"
)

// TestToolCallTimeoutHoldsLongestCall: the default route deadline of a
// tool call outlasts the longest call the default ceiling allows (its
// timeout moved for CPU wait as far as core.MostWall lets it) and the
// queued job's own deadline past that, so such a call ends with its own
// answer (ok or timeout), not the route's 504.
func TestToolCallTimeoutHoldsLongestCall(t *testing.T) {
	d := DefaultConfig()
	job := core.MostWall(d.MaxLimits.Timeout) + jobs.DefaultMargin
	if d.ToolCallTimeout <= job {
		t.Fatalf("ToolCallTimeout %v, want more than the longest job's deadline %v (timeout %v)", d.ToolCallTimeout, job, d.MaxLimits.Timeout)
	}
	c, err := Config{InsecureLocal: true}.withDefaults()
	if err != nil || c.ToolCallTimeout != d.ToolCallTimeout {
		t.Fatalf("withDefaults: ToolCallTimeout %v, err %v; want %v", c.ToolCallTimeout, err, d.ToolCallTimeout)
	}
	// A server that raises the ceiling gets a route deadline past its
	// longest call, unless it set one.
	raised := d.MaxLimits
	raised.Timeout = 20 * time.Minute
	c, err = Config{InsecureLocal: true, MaxLimits: raised}.withDefaults()
	if job := core.MostWall(raised.Timeout) + jobs.DefaultMargin; err != nil || c.ToolCallTimeout <= job {
		t.Fatalf("ceiling %v: ToolCallTimeout %v, err %v; want more than %v", raised.Timeout, c.ToolCallTimeout, err, job)
	}
	c, err = Config{InsecureLocal: true, MaxLimits: raised, ToolCallTimeout: time.Minute}.withDefaults()
	if err != nil || c.ToolCallTimeout != time.Minute {
		t.Fatalf("explicit ToolCallTimeout: %v, err %v; want 1m", c.ToolCallTimeout, err)
	}
}
