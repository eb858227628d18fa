package environments

import "time"

// EventType is the kind of a build event.
type EventType string

// The build events, in the order a build sends them: steps with their log
// lines and progress, then exactly one of done or failed.
const (
	EventStep     EventType = "step"     // a step began (Step)
	EventLog      EventType = "log"      // one line of the build's output (Line)
	EventProgress EventType = "progress" // the build's estimated progress (Progress, 0 to 1)
	EventDone     EventType = "done"     // the image is built and checked, or was already (Record)
	EventFailed   EventType = "failed"   // the build failed (Step, Error, Record)
)

// Event is one build event.
type Event struct {
	Type EventType `json:"type"`
	// Time is when the builder saw it.
	Time time.Time `json:"time"`
	// Step is the step that began (step), the current one (log,
	// progress) or the one that failed (failed).
	Step string `json:"step,omitempty"`
	// Line is a log line (log) or what a step is doing (step).
	Line string `json:"line,omitempty"`
	// Progress is the estimated fraction of the build done (progress).
	Progress float64 `json:"progress,omitempty"`
	// Error says what failed, naming the package or step (failed).
	Error string `json:"error,omitempty"`
	// Record is the environment's record at the end (done, failed).
	Record *Record `json:"record,omitempty"`
}

// EventFunc receives a build's events, in order, from the building
// goroutine; it must not block for long.
type EventFunc func(Event)

// Build steps, in order, as the events name them.
const (
	StepPrepare   = "prepare"    // hash, base image, build container
	StepAptUpdate = "apt-update" // apt-get update from the Debian mirror
	StepApt       = "apt"        // apt-get install
	StepPip       = "pip"        // pip install from the wheelhouse or index
	StepFiles     = "files"      // the spec's files
	StepFinish    = "finish"     // package list, clean-up, modes, setuid strip
	StepCommit    = "commit"     // the container becomes the image
	StepChecks    = "checks"     // the checks that refuse a bad image
)
