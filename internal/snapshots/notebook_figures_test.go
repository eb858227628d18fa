package snapshots

import (
	"encoding/base64"
	"encoding/json"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
)

// TestNotebookKeepsFigures: a session call whose matplotlib figure came
// back as an artifact (figure-1.png, not a display) is logged with the
// figure, and the exported notebook shows it as an image/png display_data
// output, as Jupyter would; a file the code saved under outputs/ stays an
// artifact only.
func TestNotebookKeepsFigures(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\nfake")
	res := core.Result{Status: core.StatusOK, ExecutionCount: 2, Artifacts: []core.Artifact{
		{Name: "figure-1.png", MIME: "image/png", Size: int64(len(png)), Data: png},
		{Name: "outputs/p.png", MIME: "image/png", Size: int64(len(png)), Data: png},
	}}
	c := CallOf(core.Request{Code: "plt.plot([1, 2]); plt.show()"}, res, time.Now())
	nb, err := Notebook([]Call{c})
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Cells []struct {
			Outputs []struct {
				OutputType string            `json:"output_type"`
				Data       map[string]string `json:"data"`
			} `json:"outputs"`
		} `json:"cells"`
	}
	if err := json.Unmarshal(nb, &doc); err != nil {
		t.Fatal(err)
	}
	outs := doc.Cells[0].Outputs
	if len(outs) != 1 || outs[0].OutputType != "display_data" || outs[0].Data["image/png"] != base64.StdEncoding.EncodeToString(png) {
		t.Fatalf("the figure's cell outputs: %+v", outs)
	}
}
