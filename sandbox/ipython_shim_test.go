package sandbox

import (
	"context"
	"encoding/base64"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/internal/testscale"
)

// TestIPythonDisplayShim: notebooks' `from IPython.display import ...`
// works (the image's IPython shim): display(HTML(...)) is a display with
// text/html, Markdown text/markdown, JSON application/json, Image
// image/png, and clear_output is Airlock's.
func TestIPythonDisplayShim(t *testing.T) {
	t.Parallel() // functional: containers of its own engine only
	e := newTestEngine(t, nil)
	s := openSession(t, e, "o")
	code := `from IPython.display import display, HTML, Markdown, Image, clear_output, JSON, Latex, SVG, Javascript
import IPython, io
from PIL import Image as PILImage
buf = io.BytesIO(); PILImage.new('RGB', (2, 2)).save(buf, format='PNG')
display(HTML('<b>x</b>'))
display(Markdown('*m*'), JSON({'a': 1}), Image(data=buf.getvalue()))
IPython.display.display({'text/html': '<i>raw</i>'}, raw=True)
print(IPython.get_ipython())`
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(time.Minute))
	defer cancel()
	r, err := e.SessionExec(ctx, core.Request{SessionID: s.ID, Owner: "o", Notebook: true, Language: core.Python, Code: code})
	if err != nil || r.Status != core.StatusOK || r.Stdout != "None\n" || len(r.Display) != 5 {
		t.Fatalf("IPython.display: %v %s %+v", err, brief(r), r.Display)
	}
	d := r.Display
	if d[0].Data["text/html"] != "<b>x</b>" || d[0].Data["text/plain"] != "<IPython.core.display.HTML object>" {
		t.Errorf("HTML: %+v", d[0].Data)
	}
	if d[1].Data["text/markdown"] != "*m*" || d[2].Data["application/json"] != `{"a": 1}` || d[4].Data["text/html"] != "<i>raw</i>" {
		t.Errorf("Markdown, JSON, raw: %+v %+v %+v", d[1].Data, d[2].Data, d[4].Data)
	}
	if png, err := base64.StdEncoding.DecodeString(d[3].Data["image/png"]); err != nil || len(png) < 8 || string(png[1:4]) != "PNG" {
		t.Errorf("Image: %+v", d[3].Data)
	}
}
