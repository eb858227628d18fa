package builder_test

import (
	"regexp"
	"testing"

	"github.com/airlock-dev/airlock/environments"
	"github.com/airlock-dev/airlock/environments/builder"
)

func baseSource() environments.Source {
	return environments.Source{
		Spec: environments.Spec{Name: "geo", Base: "python", Apt: []string{"tree", "python3-toolz"}, Pip: []string{"demo==1.0", "b>=2"},
			Wheels: "./wh", Env: map[string]string{"A": "1", "B": "2"}, CheckImports: []string{"toolz", "demo"},
			CheckCommands: []string{"tree --version"}, Egress: []string{"a.example"}},
		Wheels: []environments.Blob{{Name: "demo-1.0-py3-none-any.whl", Data: []byte("wheel")}},
		Files:  []environments.Blob{{Name: "/opt/geo/a.csv", Data: []byte("a,b\n")}},
	}
}

func TestHashStableAndShaped(t *testing.T) {
	h := builder.Hash(baseSource(), "sha256:base", "")
	if !regexp.MustCompile(`^[0-9a-f]{16}$`).MatchString(h) {
		t.Fatalf("hash %q", h)
	}
	if h2 := builder.Hash(baseSource(), "sha256:base", ""); h2 != h {
		t.Errorf("same inputs: %s then %s", h, h2)
	}
	// Order and spacing of list entries, the wheelhouse's path and egress
	// do not change the image.
	same := map[string]func(*environments.Source){
		"apt order":      func(s *environments.Source) { s.Spec.Apt = []string{"python3-toolz", "tree"} },
		"pip order":      func(s *environments.Source) { s.Spec.Pip = []string{"b>=2", "demo == 1.0"} },
		"imports order":  func(s *environments.Source) { s.Spec.CheckImports = []string{"demo", "toolz"} },
		"wheels folder":  func(s *environments.Source) { s.Spec.Wheels = "../elsewhere" },
		"egress":         func(s *environments.Source) { s.Spec.Egress = []string{"b.example:443"} },
		"env map insert": func(s *environments.Source) { s.Spec.Env = map[string]string{"B": "2", "A": "1"} },
	}
	for name, mod := range same {
		s := baseSource()
		mod(&s)
		if got := builder.Hash(s, "sha256:base", ""); got != h {
			t.Errorf("%s changed the hash", name)
		}
	}
	changed := map[string]func(*environments.Source){
		"name":          func(s *environments.Source) { s.Spec.Name = "geo2" },
		"base":          func(s *environments.Source) { s.Spec.Base = "shell" },
		"apt":           func(s *environments.Source) { s.Spec.Apt = []string{"tree"} },
		"apt version":   func(s *environments.Source) { s.Spec.Apt = []string{"tree=2.1.0-1", "python3-toolz"} },
		"pip":           func(s *environments.Source) { s.Spec.Pip = []string{"demo==1.1", "b>=2"} },
		"env value":     func(s *environments.Source) { s.Spec.Env = map[string]string{"A": "1", "B": "3"} },
		"imports":       func(s *environments.Source) { s.Spec.CheckImports = []string{"toolz"} },
		"commands":      func(s *environments.Source) { s.Spec.CheckCommands = []string{"tree -v"} },
		"wheel bytes":   func(s *environments.Source) { s.Wheels[0].Data = []byte("wheel2") },
		"wheel name":    func(s *environments.Source) { s.Wheels[0].Name = "demo-1.1-py3-none-any.whl" },
		"file bytes":    func(s *environments.Source) { s.Files[0].Data = []byte("a,b\n1,2\n") },
		"file path":     func(s *environments.Source) { s.Files[0].Name = "/opt/geo/b.csv" },
		"file exec bit": func(s *environments.Source) { s.Files[0].Exec = true },
		"no files":      func(s *environments.Source) { s.Files = nil },
	}
	seen := map[string]string{h: "original"}
	for name, mod := range changed {
		s := baseSource()
		s.Wheels = append([]environments.Blob(nil), s.Wheels...)
		s.Files = append([]environments.Blob(nil), s.Files...)
		mod(&s)
		got := builder.Hash(s, "sha256:base", "")
		if prev, dup := seen[got]; dup {
			t.Errorf("%s gives the hash of %s", name, prev)
		}
		seen[got] = name
	}
	if builder.Hash(baseSource(), "sha256:other", "") == h {
		t.Error("another base image ID kept the hash")
	}
	if builder.Hash(baseSource(), "sha256:base", "https://idx.example/simple") == h {
		t.Error("another package index kept the hash")
	}
}
