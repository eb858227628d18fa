package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/environments"
	"github.com/airlock-dev/airlock/environments/builder"
	"github.com/airlock-dev/airlock/environments/envtest/envuse"
	"github.com/airlock-dev/airlock/environments/hosts"
	"github.com/airlock-dev/airlock/sandbox"
	"github.com/airlock-dev/airlock/state"
)

// elsewhere is what a worker lacking an environment's image pays on its
// first call in it: the build from the stored source, then the call.
type elsewhere struct {
	build, call time.Duration
}

// buildElsewhere measures it: a holder under a fresh private image
// namespace (so this daemon genuinely lacks its tag) builds rec from the
// source the build kept in store, then one call runs in that image on eng.
// The namespace's image is removed afterwards.
func buildElsewhere(ctx context.Context, dc *client.Client, store state.Store, m *builder.Manager, rec environments.Record, eng *sandbox.Engine) (elsewhere, error) {
	var b [3]byte
	_, _ = rand.Read(b[:])
	h, err := hosts.New(hosts.Config{Namespace: "bench" + hex.EncodeToString(b[:])}, dc, m, environments.NewRegistry(store), nil)
	if err != nil {
		return elsewhere{}, err
	}
	var out elsewhere
	t := time.Now()
	tag, built, err := h.Ensure(ctx, rec.Name, rec.Hash, nil)
	out.build = time.Since(t)
	if err != nil {
		return out, fmt.Errorf("build %s from its stored source: %w", rec.Name, err)
	}
	defer func() {
		_, _ = dc.ImageRemove(context.WithoutCancel(ctx), tag, image.RemoveOptions{Force: true, PruneChildren: true})
	}()
	if !built {
		return out, fmt.Errorf("the private namespace already held %s", tag)
	}
	t = time.Now()
	res, err := eng.Exec(ctx, core.Request{Language: core.Python, Code: envuse.UseProbe, Owner: "bench-elsewhere", Environment: rec.Name, Image: tag, EnvironmentHash: rec.Hash})
	out.call = time.Since(t)
	if err := checkResult(res, err, "toolz airlockuse 42\n"); err != nil {
		return out, fmt.Errorf("the call in %s: %w", tag, err)
	}
	return out, nil
}
