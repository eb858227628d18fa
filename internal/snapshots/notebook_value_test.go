package snapshots

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
)

// nbOutput is one output of an exported cell.
type nbOutput struct {
	OutputType string            `json:"output_type"`
	Text       []string          `json:"text"`
	Data       map[string]any    `json:"data"`
	Count      *int              `json:"execution_count"`
	Metadata   map[string]string `json:"-"`
}

// exportOne exports c and returns its cell's outputs.
func exportOne(t *testing.T, c Call) []nbOutput {
	t.Helper()
	nb, err := Notebook([]Call{c})
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Cells []struct {
			Outputs []nbOutput `json:"outputs"`
		} `json:"cells"`
	}
	if err := json.Unmarshal(nb, &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Cells[0].Outputs
}

// TestNotebookValueShownOnce: a REST session call whose value is a
// DataFrame returns its repr at the end of stdout and its table as a
// display; the exported notebook showed the value twice (a text stream and
// a table, issue 32's "every value is shown two or three times") and
// before the cell's figure. It is now the cell's execute_result (the
// table with its text), once, after the figure, with the execution count;
// the rest of stdout stays a stream.
func TestNotebookValueShownOnce(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\nfake")
	res := core.Result{Status: core.StatusOK, ExecutionCount: 3, Stdout: "rows 1\n   a\n0  1\n",
		Display:   []core.Display{{Data: map[string]string{"text/html": "<table></table>", "text/plain": "   a\n0  1"}}},
		Artifacts: []core.Artifact{{Name: "figure-1.png", MIME: "image/png", Size: int64(len(png)), Data: png}}}
	outs := exportOne(t, CallOf(core.Request{Code: "print('rows', 1)\nplt.plot([1]); plt.show()\ndf"}, res, time.Now()))
	if len(outs) != 3 || outs[0].OutputType != "stream" || len(outs[0].Text) != 1 || outs[0].Text[0] != "rows 1\n" ||
		outs[1].OutputType != "display_data" || outs[1].Data["image/png"] == nil ||
		outs[2].OutputType != "execute_result" || outs[2].Data["text/html"] == nil || outs[2].Count == nil || *outs[2].Count != 3 {
		t.Fatalf("outputs %+v", outs)
	}

	// A display() the code made, followed by other output, is left as is.
	res = core.Result{Status: core.StatusOK, ExecutionCount: 1, Stdout: "x\ndone\n",
		Display: []core.Display{{Data: map[string]string{"text/plain": "x"}}}}
	outs = exportOne(t, CallOf(core.Request{Code: "display('x'); print('x'); print('done')"}, res, time.Now()))
	if len(outs) != 2 || outs[0].OutputType != "stream" || outs[1].OutputType != "display_data" {
		t.Fatalf("outputs %+v", outs)
	}
}
