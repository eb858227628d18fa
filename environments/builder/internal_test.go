package builder

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/environments"

	"github.com/airlock-dev/airlock/core"
)

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		step  string
		lines []string
		msg   string
		code  core.Code
	}{
		{"apt", []string{"Reading package lists...", "E: Unable to locate package nosuch", "E: Unable to locate package other"},
			`apt package "nosuch" not found; apt package "other" not found`, core.ErrInvalid},
		{"apt", []string{"E: Package 'python-foo' has no installation candidate"}, `apt package "python-foo" has no installation candidate`, core.ErrInvalid},
		{"apt", []string{"E: Version '9.9' for 'tree' was not found"}, `apt package "tree" version "9.9" not found`, core.ErrInvalid},
		{"apt-update", []string{"Ign:1 http://deb.debian.org/debian bookworm InRelease", "Temporary failure resolving 'deb.debian.org'"},
			`cannot reach "deb.debian.org" (the Debian mirror or package index)`, core.ErrUnavailable},
		{"pip", []string{"Looking in links: /airlock-build/wheels", "ERROR: Could not find a version that satisfies the requirement mytool==1.0 (from versions: none)",
			"ERROR: No matching distribution found for mytool==1.0"}, `pip requirement "mytool==1.0" not found in the wheelhouse or index`, core.ErrInvalid},
		{"pip", []string{"ERROR: /airlock-build/wheels/x-1-cp39-cp39-win_amd64.whl is not a supported wheel on this platform."},
			`wheel "x-1-cp39-cp39-win_amd64.whl" does not fit the image's Python or platform`, core.ErrInvalid},
		{"files", []string{"cp: cannot create regular file '/opt/x': Read-only file system", ""}, "exit code 1: cp: cannot create regular file '/opt/x': Read-only file system", core.ErrInvalid},
	} {
		be := classify("geo", tc.step, tc.lines, 1)
		if be.Msg != tc.msg || be.Code != tc.code || be.Step != tc.step {
			t.Errorf("%v: got %q %s, want %q %s", tc.lines, be.Msg, be.Code, tc.msg, tc.code)
		}
		if !errors.Is(be, tc.code) || !strings.Contains(be.Error(), "environment geo: step "+tc.step+" failed: ") {
			t.Errorf("error %q", be)
		}
	}
}

// TestTracker: markers with the build's nonce move the steps and list the
// packages; a forged marker is a log line; progress only grows, to 1.
func TestTracker(t *testing.T) {
	var evs []environments.Event
	p := plan{apt: []string{"tree", "python3-pip"}, pipArgs: []string{"--no-index", "x"}}
	tr := newTracker(func(e environments.Event) { evs = append(evs, e) }, "n1", stepsOf(p, environments.Source{}), 1)
	tr.begin(environments.StepPrepare, "")
	for _, l := range []string{
		"@@airlock-n1 step apt-update", "Get:1 http://deb.debian.org/debian bookworm InRelease", "Get:2 http://x Packages",
		"@@airlock-n1 step apt", "0 upgraded, 2 newly installed, 0 to remove and 0 not upgraded.",
		"Get:1 a", "Get:2 b", "Unpacking tree", "Unpacking pip", "Setting up tree", "Setting up pip",
		"@@airlock-n1 step pip", "Processing /airlock-build/wheels/x.whl", "Installing collected packages: x", "Successfully installed x-1",
		"@@airlock-forged step end", "@@airlock-n1 step finish",
		"@@airlock-n1 package apt tree=2.1.0-1", "@@airlock-n1 package pip x==1", "@@airlock-n1 step end",
	} {
		tr.line(l)
	}
	if !tr.ended || !slices.Equal(tr.packages, []string{"tree=2.1.0-1", "x==1"}) {
		t.Errorf("ended %v packages %v", tr.ended, tr.packages)
	}
	var steps []string
	last := -1.0
	for _, e := range evs {
		switch e.Type {
		case environments.EventStep:
			steps = append(steps, e.Step)
		case environments.EventProgress:
			if e.Progress < last {
				t.Errorf("progress went back: %v after %v", e.Progress, last)
			}
			last = e.Progress
		case environments.EventLog:
			if strings.HasPrefix(e.Line, "@@airlock-n1") {
				t.Errorf("marker line sent as log: %q", e.Line)
			}
		}
	}
	if !slices.Equal(steps, []string{"prepare", "apt-update", "apt", "pip", "finish"}) {
		t.Errorf("steps %v", steps)
	}
	if !slices.Contains(tr.tail, "@@airlock-forged step end") {
		t.Errorf("forged marker not kept as a log line: %v", tr.tail)
	}
	tr.begin(environments.StepCommit, "")
	tr.begin(environments.StepChecks, "")
	tr.finish()
	if evs[len(evs)-1].Type != environments.EventProgress || evs[len(evs)-1].Progress != 1 {
		t.Errorf("last event %+v", evs[len(evs)-1])
	}
}

func TestPlan(t *testing.T) {
	wheel := []environments.Blob{{Name: "a-1-py3-none-any.whl"}}
	for _, tc := range []struct {
		name    string
		src     environments.Source
		index   string
		apt     []string
		pip     []string
		purge   bool
		network bool
	}{
		{"files only", environments.Source{Spec: environments.Spec{Name: "x", Base: environments.Shell}, Files: []environments.Blob{{Name: "/opt/a"}}}, "", nil, nil, false, false},
		{"apt", environments.Source{Spec: environments.Spec{Name: "x", Apt: []string{"tree=2.1.0-1"}}}, "", []string{"tree=2.1.0-1"}, nil, false, true},
		{"wheels only", environments.Source{Spec: environments.Spec{Name: "x", Wheels: "w"}, Wheels: wheel}, "", []string{"python3-pip"},
			[]string{"--find-links", "/airlock-build/wheels", "--no-index", "/airlock-build/wheels/a-1-py3-none-any.whl"}, true, true},
		{"pip from wheels", environments.Source{Spec: environments.Spec{Name: "x", Wheels: "w", Pip: []string{"a == 1"}}, Wheels: wheel}, "", []string{"python3-pip"},
			[]string{"--find-links", "/airlock-build/wheels", "--no-index", "a==1"}, true, true},
		{"pip from index, pip kept", environments.Source{Spec: environments.Spec{Name: "x", Apt: []string{"python3-pip"}, Pip: []string{"a"}}}, "https://idx.example/simple",
			[]string{"python3-pip"}, []string{"--index-url", "https://idx.example/simple", "a"}, false, true},
	} {
		p := newPlan(tc.src, tc.index, "")
		if !slices.Equal(p.apt, tc.apt) || !slices.Equal(p.pipArgs, tc.pip) || p.purgePip != tc.purge || p.network != tc.network {
			t.Errorf("%s: plan %+v", tc.name, p)
		}
	}
}

// TestContextTar: the context lands under /airlock-build, root-owned, the
// script executable, files under files/ at their image paths, parents first.
func TestContextTar(t *testing.T) {
	src := environments.Source{Spec: environments.Spec{Name: "x", Wheels: "w"}, Wheels: []environments.Blob{{Name: "a-1-py3-none-any.whl", Data: []byte("whl")}},
		Files: []environments.Blob{{Name: "/opt/x/bin/run", Data: []byte("#!/bin/sh\n"), Exec: true}, {Name: "/srv/d.csv", Data: []byte("d")}}}
	p := newPlan(src, "", "http://mirror.example/debian")
	b, err := contextTar(src, p, "nonce1")
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(bytes.NewReader(b))
	got := map[string]*tar.Header{}
	var order []string
	contents := map[string]string{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Uid != 0 || h.Gid != 0 || h.Mode&0o7000 != 0 {
			t.Errorf("%s: uid %d gid %d mode %o", h.Name, h.Uid, h.Gid, h.Mode)
		}
		got[h.Name], order = h, append(order, h.Name)
		data, _ := io.ReadAll(tr)
		contents[h.Name] = string(data)
	}
	for name, mode := range map[string]int64{
		"airlock-build/": 0o700, "airlock-build/build.sh": 0o755, "airlock-build/nonce": 0o644,
		"airlock-build/wheels/a-1-py3-none-any.whl": 0o644, "airlock-build/files/opt/x/bin/run": 0o755,
		"airlock-build/files/srv/d.csv": 0o644, "airlock-build/files/opt/x/": 0o755,
	} {
		if h := got[name]; h == nil || h.Mode != mode {
			t.Errorf("%s: %+v, want mode %o", name, h, mode)
		}
	}
	if contents["airlock-build/build.sh"] != buildScript || contents["airlock-build/nonce"] != "nonce1" ||
		contents["airlock-build/mirror"] != "http://mirror.example/debian" || contents["airlock-build/apt.txt"] != "python3-pip\n" {
		t.Errorf("contents %v", contents)
	}
	if slices.Index(order, "airlock-build/files/opt/") > slices.Index(order, "airlock-build/files/opt/x/") {
		t.Errorf("a child folder came before its parent: %v", order)
	}
}
