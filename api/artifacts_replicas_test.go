package api

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/internal/redistest"
	"github.com/airlock-dev/airlock/state"
	"github.com/airlock-dev/airlock/wire"
)

// sharedStores are the real backends two replicas share: Redis (a private
// redis-server) and Bolt (one file, as one process holds it).
func sharedStores() []struct {
	name string
	open func(t *testing.T) state.Store
} {
	return []struct {
		name string
		open func(t *testing.T) state.Store
	}{
		{"redis", func(t *testing.T) state.Store {
			return state.NewRedis(redistest.Start(t, false).Client(t), "t:")
		}},
		{"bolt", func(t *testing.T) state.Store {
			b, err := state.OpenBolt(filepath.Join(t.TempDir(), "state.db"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = b.Close() })
			return b
		}},
	}
}

// TestArtifactQuotaSharedAcrossReplicas: two API servers over one state
// store. alice fills her byte quota through A; her next artifact made
// through B is refused (code quota, 429's code) with a warning and no URL,
// her count quota holds the same way, bob through B is unaffected, and
// alice's artifacts made through A are served by B.
func TestArtifactQuotaSharedAcrossReplicas(t *testing.T) {
	for _, bc := range sharedStores() {
		t.Run(bc.name, func(t *testing.T) {
			st := bc.open(t)
			disp := artifactDispatcher(2, 64<<10) // two 64 KiB artifacts a call
			mut := func(c *Config, d *Deps) {
				d.Dispatcher, d.State = disp, st
				c.ArtifactOwnerMaxBytes, c.ArtifactOwnerMaxCount = 5*64<<10, 1000
			}
			a, b := newRealAPI(t, mut), newRealAPI(t, mut)
			var first []wire.Artifact
			for i := range 2 { // 4 of 5 through A
				res := a.toolCall(keyAlice)
				for _, v := range res.Result.Artifacts {
					if v.URL == "" {
						t.Fatalf("call %d through A: artifact not kept: %+v", i, v)
					}
				}
				first = append(first, res.Result.Artifacts...)
			}
			res := b.toolCall(keyAlice) // the 5th fits, the 6th does not
			kept, refused := res.Result.Artifacts[0], res.Result.Artifacts[1]
			if kept.URL == "" || refused.URL != "" || refused.Error == nil || refused.Error.Code != core.ErrQuota ||
				refused.Error.Details["budget"] != "artifact_bytes" || httpStatus(refused.Error.Code) != 429 {
				t.Fatalf("through B past the quota: %+v / %+v", kept, refused)
			}
			if len(res.Result.Warnings) != 1 || res.Result.Warnings[0] != refused.Error.Message {
				t.Errorf("warnings %q", res.Result.Warnings)
			}
			if res = a.toolCall(keyAlice); res.Result.Artifacts[0].URL != "" || res.Result.Artifacts[0].Error.Code != core.ErrQuota {
				t.Errorf("through A after B filled the quota: %+v", res.Result.Artifacts[0])
			}
			if n, _, _ := b.srv.artifacts.Usage(context.Background(), "alice"); n != 5*64<<10 {
				t.Errorf("alice's usage as B sees it: %d bytes, want %d", n, 5*64<<10)
			}
			for _, v := range first {
				if code, _ := b.do(keyAlice, "GET", v.URL, nil, 0); code != 200 {
					t.Errorf("B serving alice's artifact made through A: %d", code)
				}
			}
			for range 2 { // bob's quota is his own (4 of his 5)
				for _, v := range b.toolCall(keyBob).Result.Artifacts {
					if v.URL == "" {
						t.Fatalf("bob refused after alice filled hers: %+v", v)
					}
				}
			}
		})
	}
}

// TestArtifactCountQuotaSharedAcrossReplicas: the count quota is shared
// the same way (bob has a policy-free default of 3 here).
func TestArtifactCountQuotaSharedAcrossReplicas(t *testing.T) {
	st := sharedStores()[0].open(t)
	mut := func(c *Config, d *Deps) {
		d.Dispatcher, d.State = artifactDispatcher(1, 100), st
		c.ArtifactOwnerMaxCount = 3
	}
	a, b := newRealAPI(t, mut), newRealAPI(t, mut)
	for i, r := range []*realAPI{a, b, a} {
		if v := r.toolCall(keyBob).Result.Artifacts[0]; v.URL == "" {
			t.Fatalf("artifact %d refused: %+v", i, v)
		}
	}
	v := b.toolCall(keyBob).Result.Artifacts[0]
	if v.URL != "" || v.Error == nil || v.Error.Code != core.ErrQuota || v.Error.Details["budget"] != "artifact_count" {
		t.Fatalf("4th artifact through B: %+v", v)
	}
}
