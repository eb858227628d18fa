package api

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestListFiles walks a session's work folder through nested folders, skips
// hidden entries, refuses a bad path and keeps other keys out.
func TestListFiles(t *testing.T) {
	h := newHarness(t, nil)
	sid := h.openSession(keyAlice)
	for p, body := range map[string]string{"data.csv": "a,b\n", "outputs/plot.png": "png", "outputs/deep/x.txt": "xyz", ".hidden": "h"} {
		h.do(keyAlice, "PUT", "/v1/sessions/"+sid+"/files/"+p, []byte(body)).must(t, http.StatusOK)
	}
	r := h.do(keyAlice, "GET", "/v1/sessions/"+sid+"/files", nil).must(t, http.StatusOK)
	var got struct {
		Path  string       `json:"path"`
		Files []listedFile `json:"files"`
		Trunc bool         `json:"truncated"`
	}
	if err := json.Unmarshal(r.Body, &got); err != nil {
		t.Fatal(err)
	}
	want := []listedFile{
		{Path: "data.csv", Type: "file", Size: 4},
		{Path: "outputs", Type: "dir"},
		{Path: "outputs/deep", Type: "dir"},
		{Path: "outputs/plot.png", Type: "file", Size: 3},
		{Path: "outputs/deep/x.txt", Type: "file", Size: 3},
	}
	if d := cmp.Diff(want, got.Files); d != "" || got.Trunc {
		t.Fatalf("listing (-want +got):\n%s truncated=%v", d, got.Trunc)
	}
	sub := h.do(keyAlice, "GET", "/v1/sessions/"+sid+"/files?path=outputs/deep", nil).must(t, http.StatusOK).JSON(t)
	if files := sub["files"].([]any); len(files) != 1 || files[0].(map[string]any)["path"] != "outputs/deep/x.txt" {
		t.Fatalf("sub-folder listing %v", sub)
	}
	if c := h.do(keyAlice, "GET", "/v1/sessions/"+sid+"/files?path=../etc", nil).must(t, http.StatusBadRequest).errCode(t); c != "bad_request" {
		t.Fatalf("bad path code %s", c)
	}
	h.do(keyBob, "GET", "/v1/sessions/"+sid+"/files", nil).must(t, http.StatusNotFound)
}
