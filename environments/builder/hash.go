package builder

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"

	"github.com/airlock-dev/airlock/environments"
)

// hashVersion changes when the meaning of the hashed document changes.
const hashVersion = "airlock-env/1"

// canonical is the hashed form of a build: the spec with its lists in a
// fixed order and its wheels and files as content digests, the base image
// by ID, the package index pip will use and the build recipe itself. Egress
// is left out: it narrows a call's network and changes nothing in the image.
type canonical struct {
	Version       string            `json:"version"`
	Recipe        string            `json:"recipe"`
	Name          string            `json:"name"`
	Base          string            `json:"base"`
	BaseImage     string            `json:"base_image"`
	Apt           []string          `json:"apt"`
	Pip           []string          `json:"pip"`
	IndexURL      string            `json:"index_url"`
	Wheels        []digest          `json:"wheels"`
	Files         []digest          `json:"files"`
	Env           map[string]string `json:"env"`
	CheckImports  []string          `json:"check_imports"`
	CheckCommands []string          `json:"check_commands"`
}

// digest names one file by its content.
type digest struct {
	Name   string `json:"name"`
	Exec   bool   `json:"exec,omitempty"`
	SHA256 string `json:"sha256"`
}

// Hash is the content hash (16 hex digits) of a build of src from the base
// image baseImageID with pip using indexURL (the effective index: the
// spec's or the operator's, "" for none): the image tag's suffix. The same
// inputs always give the same hash; any change to the spec's image-shaping
// fields, a wheel's or file's bytes, the base image or the recipe gives
// another.
func Hash(src environments.Source, baseImageID, indexURL string) string {
	c := canonical{
		Version:       hashVersion,
		Recipe:        sum([]byte(buildScript)),
		Name:          src.Spec.Name,
		Base:          src.Spec.Base,
		BaseImage:     baseImageID,
		Apt:           sorted(src.Spec.Apt),
		Pip:           sorted(normalizeReqs(src.Spec.Pip)),
		IndexURL:      indexURL,
		Wheels:        digests(src.Wheels),
		Files:         digests(src.Files),
		Env:           src.Spec.Env,
		CheckImports:  sorted(src.Spec.CheckImports),
		CheckCommands: slices.Clone(src.Spec.CheckCommands),
	}
	b, _ := json.Marshal(c) // maps marshal with sorted keys
	return sum(b)[:16]
}

func digests(blobs []environments.Blob) []digest {
	out := make([]digest, len(blobs))
	for i, b := range blobs {
		out[i] = digest{Name: b.Name, Exec: b.Exec, SHA256: sum(b.Data)}
	}
	return out
}

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func sorted(in []string) []string {
	out := slices.Clone(in)
	slices.Sort(out)
	return out
}

// normalizeReqs drops the spaces a requirement may carry ("toolz == 1.0"
// is "toolz==1.0").
func normalizeReqs(in []string) []string {
	out := make([]string, len(in))
	for i, r := range in {
		out[i] = strings.Join(strings.Fields(r), "")
	}
	return out
}
