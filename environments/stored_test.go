package environments

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/state"
)

// TestStoredSource: a source (spec, wheels and files) kept in the state
// store in chunks comes back byte for byte; a damaged one is refused, one
// over the bound is not kept, and DeleteSources keeps only the one named.
func TestStoredSource(t *testing.T) {
	ctx := context.Background()
	st := state.NewMemory(nil)
	reg := NewRegistry(st)
	spec, err := Parse([]byte("name: geo\nbase: python\npip: [mytool==1.0]\nwheels: ./wh\nfiles: {/opt/geo/a.bin: ./a.bin}\n"))
	if err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte("0123456789abcdef"), (6<<20)/16) // 6 MiB: two chunks
	src, err := NewSource(spec, []Blob{{Name: "mytool-1.0-py3-none-any.whl", Data: []byte("PK wheel")}}, []Blob{{Name: "/opt/geo/a.bin", Data: big, Exec: true}})
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.SaveSource(ctx, src, "h1"); err != nil {
		t.Fatal(err)
	}
	if err := reg.SaveSource(ctx, src, "h2"); err != nil {
		t.Fatal(err)
	}
	got, err := reg.LoadSource(ctx, "geo", "h1")
	if err != nil {
		t.Fatal(err)
	}
	if got.Spec.Name != "geo" || len(got.Wheels) != 1 || string(got.Wheels[0].Data) != "PK wheel" ||
		len(got.Files) != 1 || !bytes.Equal(got.Files[0].Data, big) || !got.Files[0].Exec {
		t.Fatalf("the loaded source differs: %+v", got.Spec)
	}
	if _, err := reg.LoadSource(ctx, "geo", "nope"); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("a source never stored: %v", err)
	}
	if _, err := st.Put(ctx, chunkKey("geo", "h1", 1), []byte("damaged"), state.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.LoadSource(ctx, "geo", "h1"); err == nil {
		t.Fatal("a damaged source loaded")
	}
	if err := reg.DeleteSources(ctx, "geo", "h2"); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.LoadSource(ctx, "geo", "h1"); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("h1 after DeleteSources keeping h2: %v", err)
	}
	if _, err := reg.LoadSource(ctx, "geo", "h2"); err != nil {
		t.Fatalf("h2 after DeleteSources keeping it: %v", err)
	}
	huge := bytes.Repeat([]byte{1}, MaxStoredSourceBytes)
	hsrc, err := NewSource(spec, []Blob{{Name: "mytool-1.0-py3-none-any.whl", Data: huge}}, nil)
	if err == nil {
		err = reg.SaveSource(ctx, hsrc, "h3")
	}
	if !errors.Is(err, core.ErrInvalid) {
		t.Fatalf("a source over the bound: %v", err)
	}
}
