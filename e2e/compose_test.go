package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/testscale"
)

// composeKey is the API key the compose test's stack accepts.
const composeKey = "airlock-compose-test-key-0001"

// composeVisibility is the compose workers' visibility timeout.
const composeVisibility = 5 * time.Second

// stack is a docker-compose project brought up from the repository's
// docker-compose.yml.
type stack struct {
	t        *testing.T
	root     string
	project  string
	env      []string
	override string // a compose file applied over docker-compose.yml
}

// compose runs docker-compose for the project and returns its output.
func (s *stack) compose(ctx context.Context, args ...string) (string, error) {
	argv := append([]string{"-p", s.project, "-f", filepath.Join(s.root, "docker-compose.yml"), "-f", s.override}, args...)
	cmd := exec.CommandContext(ctx, "docker-compose", argv...)
	cmd.Dir = s.root
	cmd.Env = s.env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// mustCompose is compose that fails the test on an error.
func (s *stack) mustCompose(args ...string) string {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(5*time.Minute))
	defer cancel()
	out, err := s.compose(ctx, args...)
	if err != nil {
		s.t.Fatalf("docker-compose %s: %v\n%s", strings.Join(args, " "), err, tail(out, 4000))
	}
	return out
}

// container is the id of the project's container for service.
func (s *stack) container(service string) string {
	s.t.Helper()
	id := strings.TrimSpace(s.mustCompose("ps", "-q", service))
	if id == "" || strings.Contains(id, "\n") {
		s.t.Fatalf("service %s: want one container, got %q", service, id)
	}
	return id
}

// projectContainers lists the ids of every container (any state) of the
// project, by compose's label.
func projectContainers(t *testing.T, project string) []string {
	t.Helper()
	out, err := exec.Command("docker", "ps", "-aq", "--filter", "label=com.docker.compose.project="+project).CombinedOutput()
	if err != nil {
		t.Fatalf("docker ps: %v\n%s", err, out)
	}
	return strings.Fields(string(out))
}

// docker runs the docker CLI and returns its trimmed output.
func docker(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("docker", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("docker %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// composeOverride writes the compose file the test applies over
// docker-compose.yml, and the keys file it mounts into the API replicas.
//   - Its own queue name, so that another Airlock on this Docker daemon
//     using the default one (another compose stack, say) does not take
//     this stack's workers for dead ones of its own queue and reap their
//     sandboxes mid-call (seen: "the sandbox container exited during the
//     call").
//   - The API key from a keys file whose policy grants timeout_seconds up
//     to 120: the call that survives its worker's kill runs longer than the
//     server default ceiling (10 s) allows.
//   - The workers' visibility timeout short, so that call is taken over in
//     seconds rather than 30-45 s.
//   - The sandbox images pinned for the test run (AIRLOCK_PYTHON_IMAGE,
//     AIRLOCK_SHELL_IMAGE), like every other test, not whatever :latest is.
func composeOverride(t *testing.T, project string) string {
	t.Helper()
	dir := t.TempDir()
	keys := filepath.Join(dir, "keys")
	if err := os.Mkdir(keys, 0o755); err != nil { // read by the replicas' user
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(keys, "keys"), []byte("compose:"+composeKey+" timeout_seconds=120\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	api := "    environment:\n      AIRLOCK_QUEUE: " + project + "\n"
	worker := api + "      AIRLOCK_VISIBILITY_TIMEOUT: " + composeVisibility.String() + "\n"
	api += "      AIRLOCK_KEYS_FILE: /etc/airlock-test/keys\n    volumes:\n      - " + keys + ":/etc/airlock-test:ro\n"
	for _, k := range []string{"AIRLOCK_PYTHON_IMAGE", "AIRLOCK_SHELL_IMAGE"} {
		if v := os.Getenv(k); v != "" {
			worker += fmt.Sprintf("      %s: %q\n", k, v)
		}
	}
	yml := "version: \"3.8\"\nservices:\n  api1:\n" + api + "  api2:\n" + api + "  worker1:\n" + worker + "  worker2:\n" + worker
	p := filepath.Join(dir, "compose.test.yml")
	if err := os.WriteFile(p, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// buildComposeImages builds airlock/server (from the static binary
// TestMain built), airlock/redis and airlock/haproxy with images/build.sh,
// the way `make compose-images` does.
func buildComposeImages(t *testing.T, root string) {
	t.Helper()
	start := time.Now()
	img := exec.Command("bash", filepath.Join(root, "images", "build.sh"), "server", "redis", "haproxy")
	img.Dir = root
	img.Env = append(os.Environ(), "AIRLOCK_SERVER_BIN="+airlockBin)
	out, err := img.CombinedOutput()
	if err != nil {
		t.Fatalf("images/build.sh server redis haproxy: %v\n%s", err, tail(string(out), 4000))
	}
	t.Logf("compose images ready in %s:\n%s", time.Since(start).Round(100*time.Millisecond), strings.TrimSpace(string(out)))
}

// TestComposeStack is issue 13's "the compose stack runs for real":
// docker-compose.yml comes up offline (images built from the Debian
// mirror), both API replicas and the load balancer become ready, a session
// is driven through both replicas alternately, one-shot calls go through
// the load balancer, a worker container killed mid-call does not lose the
// call (the job is re-delivered), and `down -v` leaves no container.
func TestComposeStack(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("docker-compose"); err != nil {
		missing(t, "docker-compose is not installed")
	}
	requireDocker(t)
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	buildComposeImages(t, root)

	port := func() string { a := freeAddr(t); return a[strings.LastIndex(a, ":")+1:] }
	lbPort, api1Port, api2Port := port(), port(), port()
	s := &stack{t: t, root: root, project: fmt.Sprintf("airlocktest%d", time.Now().UnixNano()%1_000_000_000),
		env: append(os.Environ(), "AIRLOCK_API_KEYS=", "AIRLOCK_PORT="+lbPort,
			"AIRLOCK_API1_PORT="+api1Port, "AIRLOCK_API2_PORT="+api2Port)}
	s.override = composeOverride(t, s.project)
	var sandboxHosts []string // the workers' hostnames, which label their sandboxes
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testscale.D(5*time.Minute))
		defer cancel()
		if t.Failed() {
			out, _ := s.compose(ctx, "logs", "--no-color", "--tail", "40")
			t.Logf("stack logs:\n%s", tail(out, 12000))
		}
		start := time.Now()
		if out, err := s.compose(ctx, "down", "-v", "--remove-orphans", "-t", "20"); err != nil {
			t.Errorf("docker-compose down -v: %v\n%s", err, out)
		}
		t.Logf("docker-compose down -v took %s", time.Since(start).Round(100*time.Millisecond))
		if left := projectContainers(t, s.project); len(left) > 0 {
			t.Errorf("containers of project %s remain after down: %v", s.project, left)
		}
		// Sandboxes of the killed worker are the reaper's (or their TTL's)
		// business; remove what is left so the host stays clean.
		for _, h := range sandboxHosts {
			out, _ := exec.Command("docker", "ps", "-aq", "--filter", "label=airlock.host="+h).Output()
			if ids := strings.Fields(string(out)); len(ids) > 0 {
				t.Logf("removing %d sandbox containers left by worker host %s", len(ids), h)
				_ = exec.Command("docker", append([]string{"rm", "-f"}, ids...)...).Run()
			}
		}
	})

	start := time.Now()
	s.mustCompose("up", "-d")
	lb, api1, api2 := "http://127.0.0.1:"+lbPort, "http://127.0.0.1:"+api1Port, "http://127.0.0.1:"+api2Port
	auth := []string{"Authorization", "Bearer " + composeKey}
	for _, base := range []string{api1, api2, lb} {
		poll(t, testscale.D(3*time.Minute), base+"/readyz", func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			r, err := send(ctx, "GET", base+"/readyz", nil, auth...)
			return err == nil && r.Status == http.StatusOK
		})
	}
	t.Logf("docker-compose up -d to ready (both replicas and the load balancer) in %s", time.Since(start).Round(100*time.Millisecond))
	if r := do(t, "POST", lb+"/v1/tool-calls", toolCall("", "run_python", map[string]any{"code": "print(1)"})); r.Status != http.StatusUnauthorized {
		t.Errorf("call without a key through the load balancer: %d, want 401", r.Status)
	}
	for _, w := range []string{"worker1", "worker2"} {
		sandboxHosts = append(sandboxHosts, docker(t, "inspect", "-f", "{{.Config.Hostname}}", s.container(w)))
	}

	// One session, its requests alternating between the replicas (a
	// subtest: its failure, e.g. session records not shared yet, does not
	// stop the rest).
	t.Run("session across replicas", func(t *testing.T) {
		// The state set through api2 is read through api1.
		sid, _ := do(t, "POST", api1+"/v1/sessions", nil, auth...).must(t, http.StatusCreated).JSON(t)["id"].(string)
		if sid == "" {
			t.Fatal("session without an id")
		}
		sessCall := func(base, code string) callResult {
			t.Helper()
			return decodeCall(t, do(t, "POST", base+"/v1/sessions/"+sid+"/tool-calls", toolCall("", "run_python", map[string]any{"code": code}), auth...))
		}
		sessCall(api2, "x = 41").mustOK(t)
		if got := sessCall(api1, "print(x + 1)").mustOK(t); got != "42\n" {
			t.Errorf("session call on api1 after x = 41 on api2 printed %q, want 42", got)
		}
		// The session's record is shared state: api2 knows the session api1 made.
		if r := do(t, "GET", api2+"/v1/sessions/"+sid, nil, auth...); r.Status != http.StatusOK {
			t.Errorf("GET session made on api1 through api2: %d %.300s", r.Status, r.Body)
		}
		if r := do(t, "DELETE", api2+"/v1/sessions/"+sid, nil, auth...); r.Status != http.StatusOK && r.Status != http.StatusNoContent {
			t.Errorf("DELETE session through api2: %d %s", r.Status, r.Body)
		}
		if r := do(t, "GET", api1+"/v1/sessions/"+sid, nil, auth...); r.Status != http.StatusNotFound {
			t.Errorf("session deleted through api2 still answers on api1: %d", r.Status)
		}
		_, _ = send(context.Background(), "DELETE", api1+"/v1/sessions/"+sid, nil, auth...) // if api2 could not
	})

	// One-shot calls through the load balancer and each replica, at once.
	bases := []string{lb, lb, lb, lb, api1, api2}
	outs := make([]response, len(bases))
	var wg sync.WaitGroup
	for i, base := range bases {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
			defer cancel()
			outs[i], _ = send(ctx, "POST", base+"/v1/tool-calls", toolCall(fmt.Sprintf("call_%d", i), "run_python",
				map[string]any{"code": fmt.Sprintf("print(%d * 7)", i)}), auth...)
		})
	}
	wg.Wait()
	for i := range bases {
		if outs[i].Status == 0 {
			t.Fatalf("one-shot call %d via %s got no answer", i, bases[i])
		}
		if got := decodeCall(t, outs[i]).mustOK(t); got != fmt.Sprintf("%d\n", i*7) {
			t.Errorf("one-shot call %d via %s printed %q", i, bases[i], got)
		}
	}

	// A worker killed mid-call: the job is re-delivered to the other
	// worker and the caller gets its answer.
	redisC := s.container("redis")
	// jobs maps "stream entry" → the worker holding it, from the pending
	// lists of the queue's lane streams (the queue keeps no job hash).
	jobs := func() map[string]string {
		m := map[string]string{}
		for _, k := range strings.Fields(docker(t, "exec", redisC, "redis-cli", "--scan", "--pattern", "airlock:*:jobs")) {
			f := strings.Fields(docker(t, "exec", redisC, "redis-cli", "xpending", k, "workers", "-", "+", "1000"))
			for i := 0; i+3 < len(f); i += 4 { // id, consumer, idle ms, deliveries
				m[k+" "+f[i]] = f[i+1]
			}
		}
		return m
	}
	before := jobs()
	done := sendAsync("POST", lb+"/v1/tool-calls", toolCall("call_survive", "run_python",
		map[string]any{"code": "import time\ntime.sleep(10)\nprint('survived')", "timeout_seconds": 120}), auth...)
	var job, first string
	poll(t, testscale.D(time.Minute), "the call's job to start on a worker", func() bool {
		for k, w := range jobs() {
			if _, old := before[k]; !old && w != "" {
				job, first = k, w
				return true
			}
		}
		return false
	})
	var victim string
	for i, h := range sandboxHosts {
		if strings.HasPrefix(first, h+"-") {
			victim = fmt.Sprintf("worker%d", i+1)
		}
	}
	if victim == "" {
		t.Fatalf("job %s runs on %q, which is neither worker (hosts %v)", job, first, sandboxHosts)
	}
	killedAt := time.Now()
	docker(t, "kill", s.container(victim))
	var a answer
	select {
	case a = <-done:
	case <-time.After(callTimeout):
		t.Fatal("the call whose worker was killed never answered")
	}
	if a.err != nil {
		t.Fatalf("the call whose worker was killed: %v", a.err)
	}
	if got := decodeCall(t, a.r).mustOK(t); got != "survived\n" {
		t.Errorf("re-delivered call printed %q", got)
	}
	t.Logf("call answered %s after docker kill of %s (not asserted)", time.Since(killedAt).Round(100*time.Millisecond), victim)
	// The entry was taken over: it is acknowledged or held by the other
	// worker, never still by the killed one.
	if w, ok := jobs()[job]; ok && w == first {
		t.Errorf("job %s is still held by the killed worker %s: not re-delivered?", job, first)
	}
	// The stack still answers through the load balancer.
	if got := decodeCall(t, do(t, "POST", lb+"/v1/tool-calls", toolCall("", "run_python", map[string]any{"code": "print('after')"}), auth...)).mustOK(t); got != "after\n" {
		t.Errorf("call after the kill printed %q", got)
	}
}
