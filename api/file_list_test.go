package api

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/wire"
	"github.com/google/go-cmp/cmp"
)

// TestListFiles walks a session's work folder through nested folders, skips
// hidden entries, refuses a bad path, answers 404 naming a missing folder and keeps other
// keys out.
func TestListFiles(t *testing.T) {
	h := newHarness(t, nil)
	sid := h.openSession(keyAlice)
	for p, body := range map[string]string{"data.csv": "a,b\n", "outputs/plot.png": "png", "outputs/deep/x.txt": "xyz", ".hidden": "h"} {
		h.do(keyAlice, "PUT", "/v1/sessions/"+sid+"/files/"+p, []byte(body)).must(t, http.StatusOK)
	}
	r := h.do(keyAlice, "GET", "/v1/sessions/"+sid+"/files", nil).must(t, http.StatusOK)
	var got struct {
		Path  string          `json:"path"`
		Files []wire.FileInfo `json:"files"`
		Trunc bool            `json:"truncated"`
	}
	if err := json.Unmarshal(r.Body, &got); err != nil {
		t.Fatal(err)
	}
	want := []wire.FileInfo{
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
	// A folder that is not there is 404 naming it; a file is not a folder.
	for _, tc := range []struct {
		path string
		code int
		want string
	}{
		{"outputs/missing", http.StatusNotFound, `"outputs/missing"`},
		{"nope/deeper", http.StatusNotFound, `"nope"`},
		{"data.csv", http.StatusBadRequest, "not a folder"},
		{"outputs/plot.png/x", http.StatusBadRequest, "is a file"},
	} {
		r := h.do(keyAlice, "GET", "/v1/sessions/"+sid+"/files?path="+tc.path, nil).must(t, tc.code)
		e := r.JSON(t)["error"].(map[string]any)
		msg := e["message"].(string)
		if want := map[int]string{404: "not_found", 400: "bad_request"}[tc.code]; e["code"] != want || !strings.Contains(msg, tc.want) || !strings.Contains(msg, tc.path) {
			t.Errorf("path=%s: code %v message %q, want %s naming %s and %s", tc.path, e["code"], msg, want, tc.path, tc.want)
		}
	}
	h.do(keyBob, "GET", "/v1/sessions/"+sid+"/files", nil).must(t, http.StatusNotFound)
}
