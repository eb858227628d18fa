package api

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/airlock-dev/airlock/wire"
)

// TestListFilesDeepFolderKeepsSiblings: a folder past listMaxDepth marks
// the listing truncated but does not end it: the folders still queued at
// shallower depths are listed.
func TestListFilesDeepFolderKeepsSiblings(t *testing.T) {
	h := newHarness(t, nil)
	sid := h.openSession(keyAlice)
	for _, p := range []string{"a/b/c/d/e/f/g/h/i/deep.txt", "z/b/c/d/e/f/g/sibling.txt"} {
		h.do(keyAlice, "PUT", "/v1/sessions/"+sid+"/files/"+p, []byte("x")).must(t, http.StatusOK)
	}
	r := h.do(keyAlice, "GET", "/v1/sessions/"+sid+"/files", nil).must(t, http.StatusOK)
	var got struct {
		Files []wire.FileInfo `json:"files"`
		Trunc bool            `json:"truncated"`
	}
	if err := json.Unmarshal(r.Body, &got); err != nil {
		t.Fatal(err)
	}
	paths := map[string]bool{}
	for _, f := range got.Files {
		paths[f.Path] = true
	}
	if !got.Trunc || !paths["a/b/c/d/e/f/g/h"] || paths["a/b/c/d/e/f/g/h/i"] {
		t.Errorf("truncated %v, files %v: want a/b/c/d/e/f/g/h listed (not its contents) and truncated", got.Trunc, paths)
	}
	if !paths["z/b/c/d/e/f/g/sibling.txt"] {
		t.Errorf("the sibling chain's file is missing: %v", paths)
	}
}
