package batch

import (
	"encoding/json"
	"testing"

	"github.com/airlock-dev/airlock/agent"
	"github.com/airlock-dev/airlock/dispatcher"
	"github.com/airlock-dev/airlock/wire"
)

// TestItemCodeAndLineError: an item's code comes from its arguments as an
// object or as OpenAI's JSON string, a command, other arguments as they
// are, or a run's goal; a failed line's error names the platform error or
// the exception, an ok line has none.
func TestItemCodeAndLineError(t *testing.T) {
	str, _ := json.Marshal(`{"code": "print(1)"}`)
	for _, c := range []struct {
		it   Item
		want string
	}{
		{Item{Call: &dispatcher.Call{Arguments: json.RawMessage(`{"code": "x = 1"}`)}}, "x = 1"},
		{Item{Call: &dispatcher.Call{Arguments: str}}, "print(1)"},
		{Item{Call: &dispatcher.Call{Arguments: json.RawMessage(`{"command": "ls -l"}`)}}, "ls -l"},
		{Item{Call: &dispatcher.Call{Arguments: json.RawMessage(`{"path": "a.txt"}`)}}, `{"path": "a.txt"}`},
		{Item{Run: &agent.RunRequest{Goal: "sum the sales"}}, "sum the sales"},
		{Item{}, ""},
	} {
		if got := itemCode(c.it); got != c.want {
			t.Errorf("itemCode(%+v) = %q, want %q", c.it, got, c.want)
		}
	}
	exit := 1
	for _, c := range []struct {
		l    wire.BatchLine
		want string
	}{
		{wire.BatchLine{Status: "ok", Stderr: "warning\n"}, ""},
		{wire.BatchLine{Status: "error", ExitCode: &exit, Stderr: "Traceback...\nValueError: bad\n"}, "ValueError: bad"},
		{wire.BatchLine{Status: "unavailable", Error: &wire.BatchError{Code: "unavailable", Message: "no worker"}}, "unavailable: no worker"},
		{wire.BatchLine{Status: "timeout", Message: "over 30 s"}, "over 30 s"},
		{wire.BatchLine{Status: "rejected"}, "rejected"},
	} {
		if got := lineError(reportLine{BatchLine: c.l}); got != c.want {
			t.Errorf("lineError(%+v) = %q, want %q", c.l, got, c.want)
		}
	}
}
