package batchinput

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/batch"
	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/dispatcher"
	"github.com/airlock-dev/airlock/internal/links"
	"github.com/airlock-dev/airlock/wire"
)

// Folder is one folder a map batch runs over.
type Folder struct {
	ID   string // its path under the input folder, slash-separated: the item's custom_id
	Path string // its real host path, links resolved
	Name string // input/ID: the mount's name in results
}

// invalid is a bad_request refusal with msg.
func invalid(msg string) error { return core.Errorf("", core.ErrInvalid, msg) }

// ParseWindow parses a completion window such as "24h".
func ParseWindow(v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, invalid(fmt.Sprintf(`"completion_window" %q is not a positive duration such as "24h"`, v))
	}
	return d, nil
}

// Expand makes the batch of map spec m: the template call tmpl (already
// checked, without a mount) once per uploaded archive, or once per folder
// m.Each matches under input folder m.Input, which resolve turns into its
// host path. It refuses (bad_request) what does not go together, and
// (too_large) more than max items.
func Expand(m wire.BatchMapSpec, tmpl dispatcher.Call, resolve func(input string) (string, error), archives [][]byte, max int) (batch.Spec, error) {
	if tmpl.Mount != "" {
		return batch.Spec{}, invalid(`the tool_call template must not name "input"; the map spec's "input" and "each" choose the mounts`)
	}
	spec := batch.Spec{Concurrency: m.Concurrency, Metadata: m.Metadata}
	if m.CompletionWindow != "" {
		var err error
		if spec.CompletionWindow, err = ParseWindow(m.CompletionWindow); err != nil {
			return batch.Spec{}, err
		}
	}
	if archives != nil {
		if m.Each != "" || m.Input != "" {
			return batch.Spec{}, invalid(`"each" and "input" do not go with uploaded archives`)
		}
		if len(archives) > max {
			return batch.Spec{}, core.Errorf("", core.ErrTooLarge, fmt.Sprintf("%d archives, over the limit of %d items", len(archives), max))
		}
		spec.Archives = archives
		for i := range archives {
			call := tmpl
			spec.Items = append(spec.Items, batch.Item{CustomID: fmt.Sprintf("archive-%d", i), Call: &call, Archive: i + 1})
		}
		return spec, nil
	}
	if m.Input == "" || m.Each == "" {
		return batch.Spec{}, invalid(`a map spec needs "each" (a glob) and "input" (an input folder name)`)
	}
	root, err := resolve(m.Input)
	if err != nil {
		return batch.Spec{}, err
	}
	folders, err := Folders(root, m.Input, m.Each, max)
	if err != nil {
		return batch.Spec{}, err
	}
	for _, f := range folders {
		call := tmpl
		call.Mount, call.MountName = f.Path, f.Name
		spec.Items = append(spec.Items, batch.Item{CustomID: f.ID, Call: &call})
	}
	return spec, nil
}

// Folders returns the folders glob each matches under root (the input
// folder named input), sorted: a match that is not a folder, or whose
// links lead out of root, is left out. A glob that is absolute, holds
// "..", is malformed or matches nothing is bad_request; more than max
// folders too_large.
func Folders(root, input, each string, max int) ([]Folder, error) {
	if filepath.IsAbs(each) || strings.Contains(filepath.ToSlash(each), "..") {
		return nil, invalid(`"each" must be a relative glob without ".."`)
	}
	matches, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(each)))
	if err != nil {
		return nil, invalid(fmt.Sprintf(`"each" is not a valid glob: %v`, err))
	}
	sort.Strings(matches)
	realRoot, _ := filepath.EvalSymlinks(root)
	var out []Folder
	for _, p := range matches {
		real, ok := inside(realRoot, p)
		if !ok {
			continue
		}
		id, _ := filepath.Rel(root, p)
		id = filepath.ToSlash(id)
		out = append(out, Folder{ID: id, Path: real, Name: input + "/" + id})
	}
	if len(out) == 0 {
		return nil, invalid(fmt.Sprintf("%q matched no folders in input folder %s", each, input))
	}
	if len(out) > max {
		return nil, core.Errorf("", core.ErrTooLarge, fmt.Sprintf("the map spec makes %d items, over the limit of %d", len(out), max))
	}
	return out, nil
}

// inside resolves p's links and returns its real path when it is a folder
// that stays within realRoot (links.ResolvesIn: the one rule of the
// packers), never a link out of the input folder.
func inside(realRoot, p string) (string, bool) {
	if !links.ResolvesIn(realRoot, p) {
		return "", false
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", false
	}
	st, err := os.Stat(real)
	return real, err == nil && st.IsDir()
}
