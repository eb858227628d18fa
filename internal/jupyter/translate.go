package jupyter

import (
	"strings"

	"github.com/airlock-dev/airlock/core"
)

// streamContent is a stream message's content.
func streamContent(name, text string) map[string]any {
	return map[string]any{"name": name, "text": text}
}

// bundle turns a MIME bundle into Jupyter's data (image/png stays base64
// text, as Jupyter sends it).
func bundle(data map[string]string) map[string]any {
	out := make(map[string]any, len(data))
	for k, v := range data {
		out[k] = v
	}
	return out
}

// displayContent is a display_data message's content.
func displayContent(data map[string]string) map[string]any {
	return map[string]any{"data": bundle(data), "metadata": map[string]any{}, "transient": map[string]any{}}
}

// resultContent is an execute_result message's content.
func resultContent(count int, data map[string]string) map[string]any {
	return map[string]any{"execution_count": count, "data": bundle(data), "metadata": map[string]any{}}
}

// failure is what an unsuccessful cell reports: the error message's and
// the error reply's ename, evalue and traceback.
type failure struct {
	Name, Value string
	Traceback   []string
}

// content is the error message's content.
func (f failure) content() map[string]any {
	tb := f.Traceback
	if tb == nil {
		tb = []string{}
	}
	return map[string]any{"ename": f.Name, "evalue": f.Value, "traceback": tb}
}

// outcomeNames names what Airlock stopped, for the error of a cell that
// did not end by itself.
var outcomeNames = map[core.Status]string{
	core.StatusTimeout:     "TimeoutError",
	core.StatusOOM:         "MemoryError",
	core.StatusOutputLimit: "OutputLimitExceeded",
	core.StatusRejected:    "Rejected",
}

// cellFailure says why res is not a success, or nil when it is one.
func cellFailure(res core.Result) *failure {
	if res.Status == core.StatusOK {
		return nil
	}
	if e := res.Error; e != nil && res.Status == core.StatusError {
		return &failure{Name: e.Name, Value: e.Value, Traceback: e.Traceback}
	}
	name := outcomeNames[res.Status]
	if name == "" {
		name = "Error"
		if res.ExitCode != 0 {
			name = "SystemExit"
		}
	}
	msg := res.Message
	if msg == "" {
		msg = strings.TrimSpace(string(res.Status))
	}
	return &failure{Name: name, Value: msg, Traceback: []string{name + ": " + msg}}
}

// platformFailure reports a platform error (the cell may not have run).
func platformFailure(err error) *failure {
	code := core.CodeOf(err)
	msg := err.Error()
	return &failure{Name: "AirlockError", Value: string(code) + ": " + msg, Traceback: []string{"AirlockError: " + string(code) + ": " + msg}}
}

// rest returns what full holds beyond sent, when sent is its prefix (the
// live stream fell behind); else "".
func rest(full, sent string) string {
	if len(full) > len(sent) && strings.HasPrefix(full, sent) {
		return full[len(sent):]
	}
	return ""
}
