package main

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// figure is one headline number of the bench, measured quiet and (with
// -hog) again beside a CPU hog.
type figure struct {
	name  string
	unit  string // "ms" (lower is better) or "calls/s" (higher is better)
	quiet float64
	hog   float64
	isHog bool // a value for the hog pass was recorded
	// isQuiet: a value for the quiet pass was recorded (a section that
	// failed in the quiet pass has none: the table shows "—", not 0).
	isQuiet bool
}

// figure records a headline number of the current pass (quiet or hog).
func (r *report) figure(name, unit string, v float64) {
	for _, f := range r.figs {
		if f.name == name {
			if r.hogPass {
				f.hog, f.isHog = v, true
			} else {
				f.quiet, f.isQuiet = v, true
			}
			return
		}
	}
	f := &figure{name: name, unit: unit}
	if r.hogPass {
		f.hog, f.isHog = v, true
	} else {
		f.quiet, f.isQuiet = v, true
	}
	r.figs = append(r.figs, f)
}

// figureMS records a duration in milliseconds.
func (r *report) figureMS(name string, d time.Duration) {
	if d > 0 {
		r.figure(name, "ms", float64(d)/float64(time.Millisecond))
	}
}

// figuresTable is the side-by-side table of the headline numbers: quiet,
// beside the CPU hog, and the hog's slowdown (issue 33's goal: each within
// 3× of its quiet value).
func (r *report) figuresTable() *table {
	t := &table{title: "Headline figures — quiet against a two-core CPU hog (scripts/busy.sh), in one run",
		head: []string{"figure", "quiet", "with CPU hog", "slowdown (hog / quiet)"}}
	for _, f := range r.figs {
		quiet, hog, slow := "—", "—", "—"
		if f.isQuiet {
			quiet = fmt.Sprintf("%.1f %s", f.quiet, f.unit)
		}
		if f.isHog {
			hog = fmt.Sprintf("%.1f %s", f.hog, f.unit)
			switch {
			case !f.isQuiet:
			case f.unit == "calls/s" && f.hog > 0:
				slow = times(f.quiet / f.hog)
			case f.unit != "calls/s" && f.quiet > 0:
				slow = times(f.hog / f.quiet)
			}
		}
		t.row(f.name, quiet, hog, slow)
	}
	t.note("Slowdown: how many times worse the figure is with the hog (for calls/s, quiet over hog). The hog is scripts/busy.sh with AIRLOCK_BUSY_HOGS=2 (two busy loops at normal priority) running for the whole second pass.")
	return t
}

// hog is a running CPU hog.
type hog struct{ cmd *exec.Cmd }

// startHog starts scripts/busy.sh with n busy loops around a long sleep,
// in its own process group.
func startHog(n int) (*hog, error) {
	cmd := exec.Command("bash", "scripts/busy.sh", "sleep", "86400")
	cmd.Env = append(os.Environ(), fmt.Sprintf("AIRLOCK_BUSY_HOGS=%d", n))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start CPU hog: %w", err)
	}
	return &hog{cmd: cmd}, nil
}

// stop ends the hog's process group and waits for it.
func (h *hog) stop() {
	_ = syscall.Kill(-h.cmd.Process.Pid, syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = h.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-h.cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
}
