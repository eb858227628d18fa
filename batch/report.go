package batch

import (
	"fmt"
	"html/template"
	"io"

	"github.com/airlock-dev/airlock/wire"
)

var reportTmpl = template.Must(template.New("report").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Batch {{.S.ID}}</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:2rem;color:#222}
table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #ddd;padding:.25rem .5rem;text-align:left}
.bad{color:#b00}.ok{color:#070}.hist{display:flex;align-items:flex-end;height:120px;gap:2px;border-bottom:1px solid #999}
.bar{background:#4a7;flex:1;min-width:4px}.lbl{display:flex;justify-content:space-between;font-size:12px;color:#666}
pre{margin:0;max-width:40rem;overflow:hidden;text-overflow:ellipsis;white-space:pre-wrap}
</style></head><body>
<h1>Batch {{.S.ID}}</h1>
<p>Status <b>{{.S.Status}}</b> · total {{.S.RequestCounts.Total}} · completed {{.S.RequestCounts.Completed}} · failed {{.S.RequestCounts.Failed}}
· p50 {{.S.DurationMS.P50}} ms · p95 {{.S.DurationMS.P95}} ms · CPU {{printf "%.1f" .S.CPUSeconds}} s{{if .S.CPUSecondsEstimated}} (estimated: {{.S.CPUMeasuredItems}} of the items measured, wall time for the others){{end}}</p>
<h2>Duration histogram</h2>
<div class="hist" id="histogram">{{range .Bins}}<div class="bar" style="height:{{.Pct}}%" title="{{.Label}}: {{.N}}"></div>{{end}}</div>
<div class="lbl"><span>0 ms</span><span>{{.MaxMS}} ms</span></div>
<h2>Items</h2>
<table id="items"><thead><tr><th>custom_id</th><th>status</th><th>exit</th><th>duration ms</th><th>code</th><th>output</th><th>error</th></tr></thead><tbody>
{{range .Lines}}<tr><td>{{.CustomID}}</td><td class="{{if .Failed}}bad{{else}}ok{{end}}">{{.Status}}</td><td>{{.Exit}}</td><td>{{.DurationMS}}</td><td><pre class="code">{{.ShortCode}}</pre></td><td><pre>{{.Short}}</pre></td><td class="bad">{{.Err}}</td></tr>
{{end}}</tbody></table></body></html>
`))

type reportBin struct {
	Label string
	N     int
	Pct   int
}

type reportLine struct {
	wire.BatchLine
	Short string
	Exit  string
	// ShortCode is the start of the item's code; Err its error in one
	// line (lineError), empty for an item that did not fail.
	ShortCode string
	Err       string
}

// Report writes the self-contained HTML report of a batch: a per-item
// table and a duration histogram, inline CSS, no external assets.
func Report(w io.Writer, b Batch, lines []wire.BatchLine) error {
	s := Summarize(b, lines)
	const nbins = 20
	bins := make([]reportBin, nbins)
	maxMS := s.DurationMS.Max
	if maxMS == 0 {
		maxMS = 1
	}
	top := 0
	for _, l := range lines {
		i := int(l.DurationMS * nbins / (maxMS + 1))
		bins[i].N++
		if bins[i].N > top {
			top = bins[i].N
		}
	}
	for i := range bins {
		bins[i].Label = fmt.Sprintf("%d–%d ms", int64(i)*maxMS/nbins, int64(i+1)*maxMS/nbins)
		if top > 0 {
			bins[i].Pct = bins[i].N * 100 / top
		}
	}
	rl := make([]reportLine, len(lines))
	for i, l := range lines {
		short := l.Stdout
		if l.FinalAnswer != "" {
			short = l.FinalAnswer
		}
		rl[i] = reportLine{BatchLine: l, Short: bound(short, 200), ShortCode: bound(l.Code, 400)}
		rl[i].Err = bound(lineError(rl[i]), 400)
		if l.ExitCode != nil {
			rl[i].Exit = fmt.Sprint(*l.ExitCode)
		}
	}
	return reportTmpl.Execute(w, map[string]any{"S": s, "Bins": bins, "MaxMS": maxMS, "Lines": rl})
}
