package batch

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/airlock-dev/airlock/state"
	"github.com/airlock-dev/airlock/wire"

	"github.com/airlock-dev/airlock/dispatcher"
)

// toolLine turns a dispatcher result into a result line.
func (m *Manager) toolLine(owner string, it Item, res dispatcher.Result) *wire.BatchLine {
	l := &wire.BatchLine{Status: string(res.Status), DurationMS: res.DurationMS, Message: res.Reason}
	if res.Err != nil && res.Sandbox == nil {
		l.Error = &wire.BatchError{Code: string(res.Status), Message: res.Content}
	}
	sb := res.Sandbox
	if sb == nil {
		if l.Message == "" {
			l.Message = res.Content
		}
		return l
	}
	exit := sb.ExitCode
	l.ExitCode = &exit
	l.Stdout, l.Stderr, l.Truncated = bound(sb.Stdout, m.cfg.OutputBytes), bound(sb.Stderr, m.cfg.OutputBytes), sb.Truncated
	if len(sb.Stdout) > m.cfg.OutputBytes || len(sb.Stderr) > m.cfg.OutputBytes {
		l.Truncated = true
	}
	if sb.Message != "" {
		l.Message = sb.Message
	}
	l.CPUSeconds = sb.CPUSeconds
	if sb.DurationMS > 0 {
		l.DurationMS = sb.DurationMS
	}
	if len(sb.Artifacts) > 0 {
		if m.cfg.Artifacts != nil {
			l.Artifacts = m.cfg.Artifacts(owner, sb.Artifacts)
		} else {
			for _, a := range sb.Artifacts {
				l.Artifacts = append(l.Artifacts, wire.Artifact{Name: a.Name, MIME: a.MIME, Size: a.Size, SHA256: a.SHA256})
			}
		}
	}
	return l
}

func bound(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

func lineID(customID string, attempt int) string { return customID + "\x00" + strconv.Itoa(attempt) }

// loggedLines lists the (custom_id, attempt) pairs already in the log.
func (m *Manager) loggedLines(ctx context.Context, owner, id string) (map[string]bool, error) {
	seen := map[string]bool{}
	err := m.rangeLog(ctx, owner, id, func(l wire.BatchLine) { seen[lineID(l.CustomID, l.Attempt)] = true })
	return seen, err
}

func (m *Manager) rangeLog(ctx context.Context, owner, id string, fn func(wire.BatchLine)) error {
	return m.rangeLogPaged(ctx, owner, id, 1000, func(l wire.BatchLine) error { fn(l); return nil })
}

// rangeLogPaged hands the results log to fn in order, reading page
// entries at a time; an error from fn stops it and is returned as is.
func (m *Manager) rangeLogPaged(ctx context.Context, owner, id string, page int, fn func(wire.BatchLine) error) error {
	var after int64
	for {
		es, err := m.store.Range(ctx, logKey(kindResult, owner, id), after, page, 0)
		if err != nil {
			return fmt.Errorf("batch: read results of %s: %w", id, err)
		}
		for _, e := range es {
			after = e.Seq
			var l wire.BatchLine
			if json.Unmarshal(e.Data, &l) == nil {
				if err := fn(l); err != nil {
					return err
				}
			}
		}
		if len(es) < page {
			return nil
		}
	}
}

// streamPage is how many log entries EachResult holds at once (a line
// keeps up to Config.OutputBytes of stdout and of stderr).
const streamPage = 64

// EachResult hands fn the lines Results returns (one per item, its latest
// attempt, in order of completion) without holding them all: a first
// pass over the log notes each item's latest attempt, a second hands
// those lines over streamPage entries at a time. Errors before the first
// call of fn (an unknown batch, the store) are returned before any line;
// an error from fn stops it and is returned as is.
func (m *Manager) EachResult(ctx context.Context, owner, id string, fn func(*wire.BatchLine) error) error {
	if _, _, err := m.getBatch(ctx, owner, id); err != nil {
		return err
	}
	latest := map[string]int{}
	err := m.rangeLogPaged(ctx, owner, id, streamPage, func(l wire.BatchLine) error {
		if a, ok := latest[l.CustomID]; !ok || l.Attempt > a {
			latest[l.CustomID] = l.Attempt
		}
		return nil
	})
	if err != nil {
		return err
	}
	return m.rangeLogPaged(ctx, owner, id, streamPage, func(l wire.BatchLine) error {
		if a, ok := latest[l.CustomID]; !ok || a != l.Attempt {
			return nil
		}
		delete(latest, l.CustomID) // one line per item
		return fn(&l)
	})
}

// Results returns the batch's result lines, one per item (its latest
// attempt), in order of completion.
func (m *Manager) Results(ctx context.Context, owner, id string) ([]wire.BatchLine, error) {
	if _, _, err := m.getBatch(ctx, owner, id); err != nil {
		return nil, err
	}
	type pos struct {
		line wire.BatchLine
		at   int
	}
	latest := map[string]pos{}
	n := 0
	err := m.rangeLog(ctx, owner, id, func(l wire.BatchLine) {
		n++
		if p, ok := latest[l.CustomID]; ok && p.line.Attempt > l.Attempt {
			return
		}
		latest[l.CustomID] = pos{l, n}
	})
	if err != nil {
		return nil, err
	}
	ps := make([]pos, 0, len(latest))
	for _, p := range latest {
		ps = append(ps, p)
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].at < ps[j].at })
	out := make([]wire.BatchLine, len(ps))
	for i, p := range ps {
		out[i] = p.line
	}
	return out, nil
}

// Summarize computes the summary of a batch from its lines.
func Summarize(b Batch, lines []wire.BatchLine) wire.BatchSummary {
	s := wire.BatchSummary{ID: b.ID, Object: "batch.summary", Status: b.Status, RequestCounts: b.RequestCounts, Statuses: map[string]int{}}
	ds := make([]int64, 0, len(lines))
	for _, l := range lines {
		s.Statuses[l.Status]++
		if l.Status == ItemCancelled || l.Status == ItemExpired {
			continue
		}
		ds = append(ds, l.DurationMS)
		s.DurationMS.Sum += l.DurationMS
		if l.CPUSeconds > 0 {
			s.CPUSeconds += l.CPUSeconds
			s.CPUMeasuredItems++
		} else {
			// No CPU accounting from the sandbox: the item's wall time
			// bounds what one core could have spent.
			s.CPUSeconds += float64(l.DurationMS) / 1000
			s.CPUSecondsEstimated = true
		}
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	if len(ds) > 0 {
		s.DurationMS.P50 = ds[(len(ds)-1)*50/100]
		s.DurationMS.P95 = ds[(len(ds)-1)*95/100]
		s.DurationMS.Max = ds[len(ds)-1]
	}
	end := b.CompletedAt
	if end == 0 {
		end = b.CancelledAt
	}
	if end > 0 && b.InProgressAt > 0 {
		s.WallSeconds = float64(end - b.InProgressAt)
	}
	return s
}

// Events returns progress snapshots (batch records as JSON) with Seq >
// after, waiting up to wait for the next one.
func (m *Manager) Events(ctx context.Context, owner, id string, after int64, wait time.Duration) ([]state.Entry, error) {
	if _, _, err := m.getBatch(ctx, owner, id); err != nil {
		return nil, err
	}
	es, err := m.store.Range(ctx, logKey(kindEvent, owner, id), after, 100, wait)
	if err != nil {
		return nil, fmt.Errorf("batch: read events of %s: %w", id, err)
	}
	return es, nil
}
