package snapshots

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/airlock-dev/airlock/core"
)

// Notebook writes calls as an nbformat 4 notebook (minor 5): one code
// cell per call, with its outputs as the session returned them (streams,
// rich displays such as tables and images, the cell's value, the error).
// Airlock's own programs (file and SQL tools) are left out; a shell call
// becomes a %%bash cell.
func Notebook(calls []Call) ([]byte, error) {
	cells := []map[string]any{}
	for i, c := range calls {
		if c.Generated {
			continue
		}
		src := c.Code
		if c.Language == core.Shell {
			src = "%%bash\n" + src
		}
		var count any
		if c.ExecutionCount > 0 {
			count = c.ExecutionCount
		}
		stdout, display := valueOnce(c)
		outs := []map[string]any{}
		if stdout != "" {
			outs = append(outs, map[string]any{"output_type": "stream", "name": "stdout", "text": lines(stdout)})
		}
		if c.Stderr != "" && c.Error == nil {
			outs = append(outs, map[string]any{"output_type": "stream", "name": "stderr", "text": lines(c.Stderr)})
		}
		for _, d := range display {
			data := map[string]any{}
			for mime, v := range d.Data {
				if strings.HasPrefix(mime, "text/") || mime == "image/svg+xml" {
					data[mime] = lines(v)
				} else if strings.HasSuffix(mime, "json") {
					var j any
					if json.Unmarshal([]byte(v), &j) == nil {
						data[mime] = j
					}
				} else {
					data[mime] = v // base64, as nbformat keeps binary data
				}
			}
			if len(data) == 0 {
				continue
			}
			if d.Result {
				outs = append(outs, map[string]any{"output_type": "execute_result", "execution_count": count, "data": data, "metadata": map[string]any{}})
			} else {
				outs = append(outs, map[string]any{"output_type": "display_data", "data": data, "metadata": map[string]any{}})
			}
		}
		if e := c.Error; e != nil {
			tb := e.Traceback
			if tb == nil {
				tb = []string{}
			}
			outs = append(outs, map[string]any{"output_type": "error", "ename": e.Name, "evalue": e.Value, "traceback": tb})
		}
		cells = append(cells, map[string]any{"cell_type": "code", "id": fmt.Sprintf("call-%d", i+1), "metadata": map[string]any{"airlock": map[string]any{"status": c.Status}},
			"execution_count": count, "source": lines(src), "outputs": outs})
	}
	nb := map[string]any{
		"nbformat": 4, "nbformat_minor": 5,
		"metadata": map[string]any{
			"kernelspec":    map[string]any{"name": "python3", "display_name": "Python 3", "language": "python"},
			"language_info": map[string]any{"name": "python"},
		},
		"cells": cells,
	}
	b, err := json.MarshalIndent(nb, "", " ")
	if err != nil {
		return nil, fmt.Errorf("notebook: encode: %w", err)
	}
	return b, nil
}

// valueOnce returns c's stdout and displays with its value shown once: a
// call outside notebook mode prints the value's repr as the last of its
// stdout and sends the value's rich form as a display, so the last display
// whose text/plain ends stdout is the cell's value. It becomes the
// execute_result (after the other outputs, as Jupyter shows it) and its
// repr leaves stdout. Otherwise both are returned as they are.
func valueOnce(c Call) (string, []core.Display) {
	if c.Language == core.Shell {
		return c.Stdout, c.Display
	}
	for _, d := range c.Display {
		if d.Result {
			return c.Stdout, c.Display
		}
	}
	for i := len(c.Display) - 1; i >= 0; i-- {
		text := c.Display[i].Data["text/plain"]
		if text == "" || !strings.HasSuffix(c.Stdout, text+"\n") {
			continue
		}
		if before := strings.TrimSuffix(c.Stdout, text+"\n"); before != "" && !strings.HasSuffix(before, "\n") {
			continue // the repr is the end of a longer line, not a line of its own
		}
		out := make([]core.Display, 0, len(c.Display))
		out = append(out, c.Display[:i]...)
		out = append(out, c.Display[i+1:]...)
		value := c.Display[i]
		value.Result = true
		return strings.TrimSuffix(c.Stdout, text+"\n"), append(out, value)
	}
	return c.Stdout, c.Display
}

// lines splits text into nbformat's list of lines, each keeping its "\n".
func lines(s string) []string {
	out := strings.SplitAfter(s, "\n")
	if len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	if out == nil {
		out = []string{}
	}
	return out
}
