package environments_test

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/environments"
	"github.com/airlock-dev/airlock/environments/envtest"
)

// issueExample is the spec of the issue, verbatim.
const issueExample = `name: geo                    # [a-z0-9-], unique
base: python                 # python or shell
apt: [python3-shapely]       # Debian packages
pip: [mytool==1.0]           # requirements, installed with pip at build time only
wheels: ./wheelhouse         # a folder of wheels (relative to the spec), used with --no-index
index_url: ""                # or the operator's package index
files: {/opt/geo/regions.csv: ./regions.csv}
env: {GEO_DATA: /opt/geo}    # non-secret
check_imports: [shapely, mytool]
check_commands: ["gdalinfo --version"]
`

func TestParseIssueExample(t *testing.T) {
	s, err := environments.Parse([]byte(issueExample))
	if err != nil {
		t.Fatal(err)
	}
	want := environments.Spec{
		Name: "geo", Base: "python", Apt: []string{"python3-shapely"}, Pip: []string{"mytool==1.0"},
		Wheels: "./wheelhouse", Files: map[string]string{"/opt/geo/regions.csv": "./regions.csv"},
		Env: map[string]string{"GEO_DATA": "/opt/geo"}, CheckImports: []string{"shapely", "mytool"},
		CheckCommands: []string{"gdalinfo --version"},
	}
	if d := cmp.Diff(want, s); d != "" {
		t.Errorf("spec (-want +got):\n%s", d)
	}
	// The same document as JSON parses to the same spec.
	js := `{"name":"geo","base":"python","apt":["python3-shapely"],"pip":["mytool==1.0"],"wheels":"./wheelhouse",
	"index_url":"","files":{"/opt/geo/regions.csv":"./regions.csv"},"env":{"GEO_DATA":"/opt/geo"},
	"check_imports":["shapely","mytool"],"check_commands":["gdalinfo --version"]}`
	j, err := environments.Parse([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, j); d != "" {
		t.Errorf("JSON spec (-want +got):\n%s", d)
	}
}

func TestParseDefaultsBaseAndAcceptsEgress(t *testing.T) {
	s, err := environments.Parse([]byte("name: lint\napt: [shellcheck]\negress: [pypi.internal.example, '*.corp.example:8443']\nenv: {DEBUG: 1, FAST: true}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Base != "python" || len(s.Egress) != 2 || s.Env["DEBUG"] != "1" || s.Env["FAST"] != "true" {
		t.Errorf("spec %+v", s)
	}
	// No egress field keeps the key's policy (nil); an empty list is no
	// network, and stays so through JSON (the stored record).
	for _, tc := range []struct {
		doc  string
		none bool
	}{{"name: a\n", true}, {"name: a\negress: []\n", false}, {`{"name":"a","egress":[]}`, false}} {
		s, err := environments.Parse([]byte(tc.doc))
		if err != nil || (s.Egress == nil) != tc.none {
			t.Fatalf("%q: egress %#v, %v", tc.doc, s.Egress, err)
		}
		b, _ := json.Marshal(s)
		var back environments.Spec
		if err := json.Unmarshal(b, &back); err != nil || (back.Egress == nil) != tc.none {
			t.Errorf("%q through JSON %s: egress %#v", tc.doc, b, back.Egress)
		}
	}
}

// TestParseRefuses: every refusal carries core.ErrInvalid and names the
// field (and the value) that was wrong.
func TestParseRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, spec string
		want       []string
	}{
		// A spec cannot choose the user, add capabilities, set an
		// entrypoint, mount anything or run commands: no such fields.
		{"root user", "name: x\nuser: root\n", []string{`unknown field "user"`, "sandbox's unprivileged user"}},
		{"uid 0", "name: x\nuid: 0\n", []string{`unknown field "uid"`}},
		{"entrypoint", "name: x\nentrypoint: [/bin/sh]\n", []string{`unknown field "entrypoint"`, "controller"}},
		{"cap_add", "name: x\ncap_add: [SYS_ADMIN]\n", []string{`unknown field "cap_add"`, "capability"}},
		{"privileged", "name: x\nprivileged: true\n", []string{`unknown field "privileged"`}},
		{"mounts", "name: x\nmounts: [/:/host]\n", []string{`unknown field "mounts"`}},
		{"volumes", "name: x\nvolumes: [/data]\n", []string{`unknown field "volumes"`}},
		{"run", "name: x\nrun: [chmod u+s /bin/bash]\n", []string{`unknown field "run"`}},
		{"setuid", "name: x\nsetuid: [/opt/x]\n", []string{`unknown field "setuid"`, "setuid"}},
		{"unknown", "name: x\npackages: [a]\n", []string{`unknown field "packages"`, "check_commands"}},
		{"duplicate", "name: x\nname: y\n", []string{`field "name" appears twice`}},
		{"not a mapping", "[a, b]\n", []string{"must be a mapping"}},
		{"bad yaml", "name: [x\n", []string{"not valid YAML"}},
		// Shapes.
		{"apt string", "name: x\napt: python3-toolz\n", []string{"apt: must be a list of strings"}},
		{"name number", "name: 12\n", []string{"name: must be a string"}},
		{"files list", "name: x\nfiles: [a]\n", []string{"files: must be a mapping"}},
		{"env nested", "name: x\nenv: {A: [1]}\n", []string{"env[A]: must be a string"}},
		{"files number source", "name: x\nfiles: {/opt/a: 1}\n", []string{"files[/opt/a]: must be a string"}},
		{"list of lists", "name: x\npip: [[a]]\n", []string{"pip[0]: must be a string"}},
		// Values.
		{"no name", "base: python\n", []string{"name: required"}},
		{"upper name", "name: Geo\n", []string{`name "Geo"`}},
		{"builtin name", "name: python\n", []string{`name "python": is a built-in`}},
		{"shell name", "name: shell\nbase: shell\n", []string{`name "shell": is a built-in`}},
		{"long name", "name: " + strings.Repeat("a", 41) + "\n", []string{"name"}},
		{"base", "name: x\nbase: alpine\n", []string{`base "alpine": must be python or shell`}},
		{"apt option", "name: x\napt: [-oAPT::Foo=1]\n", []string{`apt: "-oAPT::Foo=1": not a Debian package name`}},
		{"apt shell", "name: x\napt: ['a;rm -rf /']\n", []string{"apt:", "not a Debian package name"}},
		{"apt twice", "name: x\napt: [tree, tree]\n", []string{`apt: "tree" is listed twice`}},
		{"pip option", "name: x\nwheels: w\npip: ['--index-url=http://evil']\n", []string{"pip:", "no URLs, markers or pip options"}},
		{"pip url", "name: x\nwheels: w\npip: ['a @ https://evil/a.whl']\n", []string{"pip:"}},
		{"pip editable", "name: x\nwheels: w\npip: ['-e .']\n", []string{"pip:"}},
		{"pip marker", "name: x\nwheels: w\npip: [\"a; python_version<'3'\"]\n", []string{"pip:"}},
		{"wheels absolute", "name: x\nwheels: /srv/wheels\n", []string{`wheels "/srv/wheels": must be relative`}},
		{"index creds", "name: x\npip: [a]\nindex_url: https://u:p@idx.example/simple\n", []string{"index_url: must not carry credentials"}},
		{"index scheme", "name: x\npip: [a]\nindex_url: ftp://idx.example/\n", []string{"index_url: must be an http or https URL"}},
		{"index without pip", "name: x\nindex_url: https://idx.example/simple\n", []string{"index_url: set without pip"}},
		{"passwd", "name: x\nfiles: {/etc/passwd: ./passwd}\n", []string{`files: "/etc/passwd": files may only land under /opt/, /srv/, /usr/local/share/`}},
		{"usr bin", "name: x\nfiles: {/usr/bin/python3: ./py}\n", []string{`files: "/usr/bin/python3"`}},
		{"usr local bin", "name: x\nfiles: {/usr/local/bin/ls: ./ls}\n", []string{`files: "/usr/local/bin/ls"`}},
		{"loader path", "name: x\nfiles: {/usr/local/lib/python3.11/dist-packages/sitecustomize.py: ./s.py}\n", []string{"files:"}},
		{"controller", "name: x\nfiles: {/opt/airlock/controller.py: ./c.py}\n", []string{`"/opt/airlock/controller.py": is the Airlock controller's folder`}},
		{"dotdot", "name: x\nfiles: {/opt/../etc/shadow: ./s}\n", []string{"must be a clean path (/etc/shadow)"}},
		{"relative dest", "name: x\nfiles: {opt/a: ./a}\n", []string{"must be an absolute path"}},
		{"root of a root", "name: x\nfiles: {/opt: ./a}\n", []string{`files: "/opt"`}},
		{"work", "name: x\nfiles: {/work/a: ./a}\n", []string{`files: "/work/a"`}},
		{"absolute source", "name: x\nfiles: {/opt/a: /etc/shadow}\n", []string{`source "/etc/shadow" must be relative`}},
		{"PATH", "name: x\nenv: {PATH: /evil}\n", []string{"env: PATH: the sandbox owns PATH"}},
		{"HOME", "name: x\nenv: {HOME: /evil}\n", []string{"env: HOME: the sandbox owns HOME"}},
		{"LD_PRELOAD", "name: x\nenv: {LD_PRELOAD: /opt/x.so}\n", []string{"env: LD_PRELOAD: the sandbox owns LD_*"}},
		{"AIRLOCK", "name: x\nenv: {AIRLOCK_SPARES: '0'}\n", []string{"env: AIRLOCK_SPARES: the sandbox owns AIRLOCK_*"}},
		{"PYTHONPATH", "name: x\nenv: {PYTHONPATH: /opt}\n", []string{"env: PYTHONPATH: the sandbox owns PYTHON*"}},
		{"lower name", "name: x\nenv: {pythonpath: /opt}\n", []string{`env: "pythonpath": not a valid variable name`}},
		{"BASH_ENV", "name: x\nenv: {BASH_ENV: /opt/x}\n", []string{"env: BASH_ENV: the sandbox owns BASH_ENV"}},
		{"secret", "name: x\nenv: {API_TOKEN: abc}\n", []string{"env: API_TOKEN: looks like a secret"}},
		{"env name", "name: x\nenv: {1BAD: a}\n", []string{`env: "1BAD": not a valid variable name`}},
		{"module", "name: x\ncheck_imports: ['os; import x']\n", []string{"check_imports:", "not a Python module name"}},
		{"empty command", "name: x\ncheck_commands: ['  ']\n", []string{"check_commands:", "empty"}},
		{"shell pip", "name: x\nbase: shell\nwheels: w\n", []string{"wheels: needs base python"}},
		{"shell imports", "name: x\nbase: shell\ncheck_imports: [os]\n", []string{"check_imports: needs base python"}},
		{"egress url", "name: x\negress: ['http://a.example']\n", []string{"egress:"}},
		{"egress loopback", "name: x\negress: [localhost]\n", []string{`egress: "localhost": localhost names loopback`}},
		{"egress metadata", "name: x\negress: ['169.254.169.254']\n", []string{`egress: "169.254.169.254"`, "never reachable"}},
		{"egress port", "name: x\negress: ['a.example:0']\n", []string{`egress: "a.example:0": port "0" is not a number from 1 to 65535`}},
		{"too big", "name: x\n#" + strings.Repeat("a", environments.MaxSpecBytes) + "\n", []string{"over the 65536-byte limit"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := environments.Parse([]byte(tc.spec))
			if err == nil {
				t.Fatal("accepted")
			}
			if !errors.Is(err, core.ErrInvalid) {
				t.Errorf("error %v does not carry ErrInvalid", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// TestParseReportsEveryProblem: one error lists all of them.
func TestParseReportsEveryProblem(t *testing.T) {
	_, err := environments.Parse([]byte("name: Bad\nbase: alpine\napt: [-x]\nenv: {PATH: a}\n"))
	for _, w := range []string{`name "Bad"`, `base "alpine"`, `apt: "-x"`, "env: PATH"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("error %v lacks %q", err, w)
		}
	}
}

// TestLoadReadsWheelsAndFiles: a folder source lands file by file under
// its destination, executables stay executable, wheels are the folder's
// .whl files.
func TestLoadReadsWheelsAndFiles(t *testing.T) {
	dir := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(dir, "wh"), 0o755))
	must(t, os.MkdirAll(filepath.Join(dir, "data", "sub"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "data", "a.txt"), []byte("a"), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "data", "sub", "run"), []byte("#!/bin/sh\n"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "wh", "README"), []byte("not a wheel"), 0o644))
	if _, err := envtest.Wheel(filepath.Join(dir, "wh"), "demo", "2.0", map[string]string{"demo.py": "X = 1\n"}); err != nil {
		t.Fatal(err)
	}
	must(t, os.WriteFile(filepath.Join(dir, "env.yaml"), []byte("name: d\nwheels: wh\nfiles: {/opt/d: ./data}\n"), 0o644))
	src, err := environments.Load(filepath.Join(dir, "env.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(src.Wheels) != 1 || src.Wheels[0].Name != "demo-2.0-py3-none-any.whl" {
		t.Errorf("wheels %+v", src.Wheels)
	}
	if len(src.Files) != 2 || src.Files[0].Name != "/opt/d/a.txt" || src.Files[0].Exec || src.Files[1].Name != "/opt/d/sub/run" || !src.Files[1].Exec {
		t.Errorf("files %+v", src.Files)
	}
}

// TestLoadRefuses: a setuid source, a link, an empty wheelhouse, a missing
// file; a destination inside another file's.
func TestLoadRefuses(t *testing.T) {
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "tool"), []byte("x"), 0o755))
	must(t, os.Chmod(filepath.Join(dir, "tool"), 0o755|fs.ModeSetuid))
	must(t, os.Symlink("/etc/passwd", filepath.Join(dir, "link")))
	must(t, os.MkdirAll(filepath.Join(dir, "empty"), 0o755))
	for _, tc := range []struct{ spec, want string }{
		{"name: x\nfiles: {/opt/x/tool: ./tool}\n", "setuid or setgid bit"},
		{"name: x\nfiles: {/opt/x/passwd: ./link}\n", "not a regular file"},
		{"name: x\nwheels: ./empty\n", "no .whl files"},
		{"name: x\nfiles: {/opt/x/a: ./missing}\n", "missing"},
	} {
		must(t, os.WriteFile(filepath.Join(dir, "env.yaml"), []byte(tc.spec), 0o644))
		_, err := environments.Load(filepath.Join(dir, "env.yaml"))
		if err == nil || !errors.Is(err, core.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.spec, err, tc.want)
		}
	}
	spec := environments.Spec{Name: "x", Base: "python"}
	_, err := environments.NewSource(spec, nil, []environments.Blob{{Name: "/opt/a", Data: []byte("1")}, {Name: "/opt/a/b", Data: []byte("2")}})
	if err == nil || !strings.Contains(err.Error(), `"/opt/a/b" lies inside`) {
		t.Errorf("nested files: %v", err)
	}
	_, err = environments.NewSource(environments.Spec{Name: "x", Base: "python", Wheels: "w"}, []environments.Blob{{Name: "../evil.whl"}}, nil)
	if err == nil || !strings.Contains(err.Error(), "not a wheel file name") {
		t.Errorf("bad wheel name: %v", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
