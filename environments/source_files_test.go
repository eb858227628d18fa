package environments

import (
	"strings"
	"testing"
)

// TestNewSourceNeedsTheFilesItsSpecNames: over the API the spec's files
// come as blobs named by their destination. A destination the spec names
// with no blob sent for it is refused naming it (it built a "ready" image
// without the file); a blob the spec does not name is refused too; a
// folder destination is covered by the files under it.
func TestNewSourceNeedsTheFilesItsSpecNames(t *testing.T) {
	spec := Spec{Name: "geo", Base: "python", Files: map[string]string{"/opt/geo/regions.csv": "./regions.csv", "/opt/geo/data": "./data"}}
	ok := []Blob{{Name: "/opt/geo/regions.csv", Data: []byte("a")}, {Name: "/opt/geo/data/x.txt", Data: []byte("x")}}
	if _, err := NewSource(spec, nil, ok); err != nil {
		t.Fatalf("every file sent: %v", err)
	}
	_, err := NewSource(spec, nil, ok[1:])
	if err == nil || !strings.Contains(err.Error(), "/opt/geo/regions.csv") {
		t.Fatalf("a named file not sent: %v", err)
	}
	_, err = NewSource(spec, nil, append(ok, Blob{Name: "/opt/other.txt", Data: []byte("o")}))
	if err == nil || !strings.Contains(err.Error(), "/opt/other.txt") {
		t.Fatalf("a file the spec does not name: %v", err)
	}
}
