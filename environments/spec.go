package environments

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/airlock-dev/airlock/core"
)

// Spec is an environment's declarative description: the YAML file an
// operator keeps in version control, and the same document as JSON over
// the API. It has exactly these fields; anything else is refused.
type Spec struct {
	// Name is the environment's name: [a-z0-9-], unique, not a built-in.
	Name string `json:"name" yaml:"name"`
	// Base is the built-in environment it is built from: python or shell
	// (default python).
	Base string `json:"base" yaml:"base"`
	// Apt lists Debian packages (name or name=version).
	Apt []string `json:"apt,omitempty" yaml:"apt,omitempty"`
	// Pip lists requirements installed with pip at build time only.
	Pip []string `json:"pip,omitempty" yaml:"pip,omitempty"`
	// Wheels is a folder of wheels relative to the spec, used with
	// --no-index (with Pip empty, every wheel in it is installed).
	Wheels string `json:"wheels,omitempty" yaml:"wheels,omitempty"`
	// IndexURL is a package index for Pip ("" means the operator's, if any;
	// never PyPI by default).
	IndexURL string `json:"index_url,omitempty" yaml:"index_url,omitempty"`
	// Files maps an absolute path in the image to a file or folder
	// relative to the spec.
	Files map[string]string `json:"files,omitempty" yaml:"files,omitempty"`
	// Env sets non-secret variables in the image.
	Env map[string]string `json:"env,omitempty" yaml:"env,omitempty"`
	// CheckImports lists Python modules that must import in the sandbox.
	CheckImports []string `json:"check_imports,omitempty" yaml:"check_imports,omitempty"`
	// CheckCommands lists shell commands that must exit 0 in the sandbox.
	CheckCommands []string `json:"check_commands,omitempty" yaml:"check_commands,omitempty"`
	// Egress can only narrow the calling key's egress policy (entries as
	// the keys file's egress=: host, *.suffix or an address, optionally
	// :port; egress.Narrow). nil (no egress field) keeps the key's policy;
	// an empty list means no network, so the field is never omitted. It is
	// stored and validated here and enforced by the network layer; it is
	// not part of the image.
	Egress []string `json:"egress" yaml:"egress"`
}

// MaxSpecBytes bounds a spec document.
const MaxSpecBytes = 64 << 10

// fieldKind is how one spec field is decoded.
type fieldKind int

const (
	kindString fieldKind = iota
	kindList
	kindMap
)

// field is one spec field and how it is decoded.
type field struct {
	name string
	kind fieldKind
}

// fields are the spec's fields, in document order.
var fields = []field{
	{"name", kindString}, {"base", kindString}, {"apt", kindList}, {"pip", kindList},
	{"wheels", kindString}, {"index_url", kindString}, {"files", kindMap}, {"env", kindMap},
	{"check_imports", kindList}, {"check_commands", kindList}, {"egress", kindList},
}

// forbidden names fields a container definition could have and a spec
// never has, with why: they are refused like any unknown field, but the
// message says what the sandbox does instead.
var forbidden = map[string]string{
	"user":         "environments always run as the sandbox's unprivileged user",
	"uid":          "environments always run as the sandbox's unprivileged user",
	"privileged":   "sandboxes never run privileged",
	"cap_add":      "sandboxes drop every capability",
	"capabilities": "sandboxes drop every capability",
	"entrypoint":   "the sandbox starts its own controller",
	"cmd":          "the sandbox starts its own controller",
	"command":      "the sandbox starts its own controller",
	"run":          "builds run no arbitrary commands: list apt packages, pip requirements and files",
	"mounts":       "environments mount nothing; files are copied in at build time",
	"volumes":      "environments mount nothing; files are copied in at build time",
	"devices":      "sandboxes get no devices",
	"setuid":       "environments never carry setuid or setgid files",
	"mode":         "file modes are set by the build (0644, or 0755 for executables)",
	"network":      "a sandbox's network is the key's egress policy; use egress to narrow it",
}

// fieldNames lists the spec's fields for error messages.
func fieldNames() string {
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.name
	}
	return strings.Join(names, ", ")
}

// Parse reads a spec from YAML or JSON (a JSON document is YAML too),
// strictly: an unknown field is refused naming it, a value of the wrong
// shape is refused naming its field, and the result is validated
// (Validate). Every problem is reported, not only the first. The error
// carries core.ErrInvalid.
func Parse(data []byte) (Spec, error) {
	var s Spec
	if len(data) > MaxSpecBytes {
		return s, invalid(fmt.Sprintf("the spec is %d bytes, over the %d-byte limit", len(data), MaxSpecBytes))
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return s, invalid("the spec is not valid YAML or JSON: " + err.Error())
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return s, invalid("the spec must be a mapping of fields (" + fieldNames() + ")")
	}
	var probs []string
	seen := map[string]bool{}
	m := doc.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		name := k.Value
		if seen[name] {
			probs = append(probs, fmt.Sprintf("field %q appears twice", name))
			continue
		}
		seen[name] = true
		idx := slices.IndexFunc(fields, func(f field) bool { return f.name == name })
		if idx < 0 {
			if why, ok := forbidden[strings.ToLower(name)]; ok {
				probs = append(probs, fmt.Sprintf("unknown field %q: not allowed, %s", name, why))
			} else {
				probs = append(probs, fmt.Sprintf("unknown field %q (the fields are %s)", name, fieldNames()))
			}
			continue
		}
		if p := s.decodeField(name, fields[idx].kind, v); p != "" {
			probs = append(probs, p)
		}
	}
	if len(probs) > 0 {
		return s, invalid(strings.Join(probs, "; "))
	}
	if err := s.Validate(); err != nil {
		return s, err
	}
	return s, nil
}

// decodeField decodes one field's node into s; it returns a problem
// naming the field, or "".
func (s *Spec) decodeField(name string, kind fieldKind, v *yaml.Node) string {
	if v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
		return "" // an empty field is the zero value
	}
	switch kind {
	case kindString:
		if v.Kind != yaml.ScalarNode || v.Tag != "!!str" {
			return fmt.Sprintf("%s: must be a string", name)
		}
		*s.stringField(name) = v.Value
	case kindList:
		if v.Kind != yaml.SequenceNode {
			return fmt.Sprintf("%s: must be a list of strings", name)
		}
		out := make([]string, 0, len(v.Content))
		for i, e := range v.Content {
			if e.Kind != yaml.ScalarNode || e.Tag != "!!str" {
				return fmt.Sprintf("%s[%d]: must be a string", name, i)
			}
			out = append(out, e.Value)
		}
		*s.listField(name) = out
	case kindMap:
		if v.Kind != yaml.MappingNode {
			return fmt.Sprintf("%s: must be a mapping", name)
		}
		out := make(map[string]string, len(v.Content)/2)
		for i := 0; i+1 < len(v.Content); i += 2 {
			k, e := v.Content[i], v.Content[i+1]
			if k.Kind != yaml.ScalarNode || k.Tag != "!!str" {
				return fmt.Sprintf("%s: keys must be strings", name)
			}
			if _, dup := out[k.Value]; dup {
				return fmt.Sprintf("%s: %q appears twice", name, k.Value)
			}
			// env values may be written as numbers or booleans (DEBUG: 1);
			// files sources must be strings.
			if e.Kind != yaml.ScalarNode || e.Tag == "!!null" || (name == "files" && e.Tag != "!!str") {
				return fmt.Sprintf("%s[%s]: must be a string", name, k.Value)
			}
			out[k.Value] = e.Value
		}
		*s.mapField(name) = out
	}
	return ""
}

func (s *Spec) stringField(name string) *string {
	switch name {
	case "name":
		return &s.Name
	case "base":
		return &s.Base
	case "wheels":
		return &s.Wheels
	default:
		return &s.IndexURL
	}
}

func (s *Spec) listField(name string) *[]string {
	switch name {
	case "apt":
		return &s.Apt
	case "pip":
		return &s.Pip
	case "check_imports":
		return &s.CheckImports
	case "check_commands":
		return &s.CheckCommands
	default:
		return &s.Egress
	}
}

func (s *Spec) mapField(name string) *map[string]string {
	if name == "files" {
		return &s.Files
	}
	return &s.Env
}

// invalid is a refusal of a spec, carrying core.ErrInvalid.
func invalid(msg string) error {
	return core.E("environments.spec", core.ErrInvalid, errors.New(msg))
}
