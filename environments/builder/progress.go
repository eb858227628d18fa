package builder

import (
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/environments"
)

// Step weights: a rough share of a typical build's time, for the progress
// estimate only.
var stepWeights = map[string]float64{
	environments.StepPrepare: 2, environments.StepAptUpdate: 15, environments.StepApt: 35, environments.StepPip: 20, environments.StepFiles: 3,
	environments.StepFinish: 5, environments.StepCommit: 8, environments.StepChecks: 12,
}

// Bounds of what a build keeps of its log.
const (
	tailLines   = 60
	maxLineLen  = 2000
	stepLogKeep = 400 // lines of the current step kept to classify a failure
)

var aptCountRe = regexp.MustCompile(`^\d+ upgraded, (\d+) newly installed`)

// tracker follows one build's output: the current step, the estimated
// progress, the packages the script reported and the end of the log. It
// sends the build's step, log and progress events.
type tracker struct {
	send     environments.EventFunc
	marker   string   // the script's marker prefix, "@@airlock-NONCE "
	steps    []string // the steps this build runs, in order
	step     string
	done     float64 // weight of the finished steps
	total    float64
	frac     float64 // fraction of the current step
	sent     float64 // progress last sent
	aptTotal int     // packages apt installs (from its summary line)
	aptSeen  int     // Get/Unpacking/Setting up lines seen
	pipReqs  int
	pipSeen  int
	updSeen  int
	packages []string
	tail     []string // the last tailLines lines
	stepLog  []string // the current step's lines (bounded)
	ended    bool     // the script reached its last line
}

// newTracker starts a tracker for a build running steps.
func newTracker(emit environments.EventFunc, nonce string, steps []string, pipReqs int) *tracker {
	t := &tracker{send: emit, marker: "@@airlock-" + nonce + " ", steps: steps, pipReqs: max(pipReqs, 1)}
	for _, s := range steps {
		t.total += stepWeights[s]
	}
	return t
}

// stepsOf lists the steps a build of p runs.
func stepsOf(p plan, src environments.Source) []string {
	steps := []string{environments.StepPrepare}
	if len(p.apt) > 0 {
		steps = append(steps, environments.StepAptUpdate, environments.StepApt)
	}
	if len(p.pipArgs) > 0 {
		steps = append(steps, environments.StepPip)
	}
	if len(src.Files) > 0 {
		steps = append(steps, environments.StepFiles)
	}
	return append(steps, environments.StepFinish, environments.StepCommit, environments.StepChecks)
}

// emit stamps and sends ev.
func (t *tracker) emit(ev environments.Event) {
	ev.Time = time.Now()
	t.send(ev)
}

// begin moves to step (an earlier step is finished).
func (t *tracker) begin(step, what string) {
	if t.step != "" {
		t.done += stepWeights[t.step]
	}
	t.step, t.frac, t.stepLog = step, 0, nil
	t.emit(environments.Event{Type: environments.EventStep, Step: step, Line: what})
	t.progress()
}

// line handles one line of the build's output.
func (t *tracker) line(l string) {
	if len(l) > maxLineLen {
		l = l[:maxLineLen] + "…"
	}
	if rest, ok := strings.CutPrefix(l, t.marker); ok {
		t.marked(rest)
		return
	}
	t.tail = append(t.tail, l)
	if len(t.tail) > tailLines {
		t.tail = t.tail[len(t.tail)-tailLines:]
	}
	if len(t.stepLog) < stepLogKeep {
		t.stepLog = append(t.stepLog, l)
	} else { // keep the step's first lines and the latest ones
		copy(t.stepLog[stepLogKeep/2:], t.stepLog[stepLogKeep/2+1:])
		t.stepLog[len(t.stepLog)-1] = l
	}
	t.emit(environments.Event{Type: environments.EventLog, Step: t.step, Line: l})
	t.estimate(l)
}

// marked handles a line of the script's own: a step or a package.
func (t *tracker) marked(rest string) {
	kind, arg, _ := strings.Cut(rest, " ")
	switch kind {
	case "step":
		if arg == stepEnd {
			t.ended = true
			return
		}
		t.begin(arg, stepWhat[arg])
	case "package":
		src, pkg, _ := strings.Cut(arg, " ")
		if (src == "apt" || src == "pip") && pkg != "" && len(t.packages) < 1000 {
			t.packages = append(t.packages, pkg)
		}
	}
}

// stepWhat describes the script's steps.
var stepWhat = map[string]string{
	environments.StepAptUpdate: "apt-get update from the Debian mirror",
	environments.StepApt:       "apt-get install",
	environments.StepPip:       "pip install",
	environments.StepFiles:     "copying the spec's files",
	environments.StepFinish:    "package list, clean-up, modes, setuid/setgid strip",
}

// estimate advances the current step's fraction from what its tools print.
func (t *tracker) estimate(l string) {
	switch t.step {
	case environments.StepAptUpdate:
		if strings.HasPrefix(l, "Get:") || strings.HasPrefix(l, "Hit:") {
			t.updSeen++
			t.frac = min(float64(t.updSeen)/5, 0.9)
		}
	case environments.StepApt:
		if m := aptCountRe.FindStringSubmatch(l); m != nil {
			t.aptTotal, _ = strconv.Atoi(m[1])
		}
		if t.aptTotal > 0 && (strings.HasPrefix(l, "Get:") || strings.HasPrefix(l, "Unpacking ") || strings.HasPrefix(l, "Setting up ")) {
			t.aptSeen++
			t.frac = min(float64(t.aptSeen)/float64(3*t.aptTotal), 1)
		}
	case environments.StepPip:
		switch {
		case strings.HasPrefix(l, "Processing ") || strings.HasPrefix(l, "Collecting "):
			t.pipSeen++
			t.frac = min(float64(t.pipSeen)/float64(t.pipReqs), 1) * 0.6
		case strings.HasPrefix(l, "Installing collected packages"):
			t.frac = 0.7
		case strings.HasPrefix(l, "Successfully installed"):
			t.frac = 1
		}
	}
	t.progress()
}

// progress sends the estimate when it moved by at least 1%.
func (t *tracker) progress() {
	p := t.fraction()
	if p-t.sent >= 0.01 || (p == 1 && t.sent < 1) {
		t.sent = p
		t.emit(environments.Event{Type: environments.EventProgress, Step: t.step, Progress: p})
	}
}

// fraction is the estimated share of the build done.
func (t *tracker) fraction() float64 {
	if t.total == 0 {
		return 0
	}
	return min((t.done+stepWeights[t.step]*t.frac)/t.total, 1)
}

// finish marks the build complete.
func (t *tracker) finish() {
	t.done, t.frac, t.step = t.total, 0, ""
	t.progress()
}
