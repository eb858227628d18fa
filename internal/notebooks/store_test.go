package notebooks

import (
	"context"
	"errors"
	"testing"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/internal/storetest"
)

// TestContract runs one contract on every backend: the first save is
// version 1 and needs version 0; a save naming an old version is a
// conflict naming the saved one and changes nothing; cells come back byte
// for byte; notebooks are per owner and session; bad input names its
// field.
func TestContract(t *testing.T) {
	for name, open := range storetest.Backends() {
		t.Run(name, func(t *testing.T) {
			s := New(open(t), nil)
			ctx := context.Background()
			if _, err := s.Get(ctx, "alice", "s1"); !errors.Is(err, core.ErrNotFound) {
				t.Fatalf("none saved: %v", err)
			}
			cells := []byte(`[{"source":"print(1)","outputs":[]}]`)
			v1, err := s.Save(ctx, "alice", "s1", cells, 0)
			if err != nil || v1.Version != 1 {
				t.Fatalf("first save: %+v %v", v1, err)
			}
			if _, err := s.Save(ctx, "alice", "s1", []byte(`[]`), 0); !isConflict(err, 1, 0) {
				t.Fatalf("a second first save: %v", err)
			}
			v2, err := s.Save(ctx, "alice", "s1", []byte(`[1,2]`), 1)
			if err != nil || v2.Version != 2 {
				t.Fatalf("second save: %+v %v", v2, err)
			}
			if _, err := s.Save(ctx, "alice", "s1", cells, 1); !isConflict(err, 2, 1) {
				t.Fatalf("a stale save: %v", err)
			}
			nb, err := s.Get(ctx, "alice", "s1")
			if err != nil || len(nb.Cells) != 2 || string(nb.Cells[1]) != `2` || nb.Version != 2 || !nb.UpdatedAt.Equal(v2.UpdatedAt) {
				t.Fatalf("read back: %+v %v", nb, err)
			}
			for _, other := range [][2]string{{"bob", "s1"}, {"alice", "s2"}} {
				if _, err := s.Get(ctx, other[0], other[1]); !errors.Is(err, core.ErrNotFound) {
					t.Errorf("%v sees alice's s1: %v", other, err)
				}
			}
			for _, bad := range []struct {
				cells   string
				version int64
				field   string
			}{{`{"a":1}`, 0, "cells"}, {``, 0, "cells"}, {`[]`, -1, "version"}} {
				_, err := s.Save(ctx, "alice", "s3", []byte(bad.cells), bad.version)
				var ie *InvalidError
				if !errors.As(err, &ie) || !errors.Is(err, core.ErrInvalid) || ie.ErrorDetails()["field"] != bad.field {
					t.Errorf("%+v: %v", bad, err)
				}
			}
		})
	}
}

// isConflict reports a *ConflictError with the saved and sent versions.
func isConflict(err error, current, sent int64) bool {
	var ce *ConflictError
	return errors.As(err, &ce) && errors.Is(err, core.ErrConflict) && ce.Current == current && ce.Sent == sent
}
