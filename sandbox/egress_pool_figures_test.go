package sandbox

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/egress"
)

// TestEgressPoolFigures measures, for make bench (AIRLOCK_BENCH_EGRESS_POOL
// set to the number of rounds), what pooling containers per egress policy
// saves: each round calls print() with a policy no call used before (a
// container with a door boots: what every call with a policy paid before
// the pool), then again with the same policy (the owner's warm one), and
// once without a policy (warm, for comparison). It prints the medians. No
// call sends traffic: the policy names a host nobody contacts.
func TestEgressPoolFigures(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("AIRLOCK_BENCH_EGRESS_POOL"))
	if n <= 0 {
		t.Skip("a figure for make bench: set AIRLOCK_BENCH_EGRESS_POOL=ROUNDS")
	}
	g, err := egress.NewGuard(nil)
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := egress.New(egress.Config{Guard: g, Dialer: fence{}, Resolver: &egress.StaticResolver{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proxy.Close() })
	e := newTestEngine(t, func(c *Config) {
		c.PoolSize = 1
		// Each round leaves one more policy's container idle (until
		// OwnerIdle): room for all of them, so a round measures the pool,
		// not a full budget (where, as for any pool, a container that
		// finds no room after its call is destroyed).
		c.WarmMemoryBudget = int64(n+4) * c.Defaults.Memory
		c.Egress = EgressConfig{Proxy: proxy, DoorDir: t.TempDir()}
	})
	if err := e.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := e.WaitWarm(t.Context()); err != nil {
		t.Fatal(err)
	}
	call := func(pol string) time.Duration {
		start := time.Now()
		res := run(t, e, core.Request{Owner: "bench", Code: "print(1)", Egress: pol})
		if res.Status != core.StatusOK {
			t.Fatalf("call: %s", brief(res))
		}
		took := time.Since(start)
		t.Logf("policy %q: %v in %s", pol, took, res.Container)
		return took
	}
	call("") // the plain pool's first container
	var cold, warm, plain []time.Duration
	for i := range n {
		pol := fmt.Sprintf("bench-%d.test:%d", i, 10000+i)
		cold = append(cold, call(pol))
		warm = append(warm, call(pol))
		plain = append(plain, call(""))
	}
	med := func(d []time.Duration) float64 {
		s := slices.Clone(d)
		slices.Sort(s)
		return float64(s[len(s)/2].Microseconds()) / 1000
	}
	fmt.Printf("egress-pool: %d rounds: first call with a policy (cold) %.1f ms, second (warm, same policy) %.1f ms, without a policy (warm) %.1f ms (medians)\n",
		n, med(cold), med(warm), med(plain))
}
