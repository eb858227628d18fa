package main

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/redistest"
	"github.com/airlock-dev/airlock/internal/testscale"
	"github.com/airlock-dev/airlock/queue"
	"github.com/airlock-dev/airlock/sandbox"
)

// TestTwoDeploymentsReapOnlyTheirOwn: two Airlock deployments (each its own
// Redis, the same default queue name) on one Docker host. A container of
// deployment B's worker, made on another host (so no local process answers
// for it), is live in B; deployment A's dead-worker reaper, which finds no
// liveness key for B's worker in its own Redis, must leave it alone. Before
// the deployment id both labelled their containers with the bare queue
// name and A removed B's live containers. B's own reaper still judges it
// (shown with B's worker gone: the container is removed).
func TestTwoDeploymentsReapOnlyTheirOwn(t *testing.T) {
	ctx := context.Background()
	s := newStack(slog.New(slog.DiscardHandler))
	open := func(srv *redistest.Server) *queue.Redis {
		q, err := queue.NewRedis(queue.Config{Name: "airlock", SubmitTimeout: time.Second}, queue.Deps{Redis: srv.Client(t)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = q.Close() })
		return q
	}
	srvA, srvB := redistest.Start(t, false), redistest.Start(t, false)
	qA, qA2, qB := open(srvA), open(srvA), open(srvB)
	labelA, labelA2, labelB := s.deploymentLabel(ctx, qA, "airlock"), s.deploymentLabel(ctx, qA2, "airlock"), s.deploymentLabel(ctx, qB, "airlock")
	if labelA == "" || labelA != labelA2 || labelA == labelB || !strings.HasPrefix(labelB, "airlock@") {
		t.Fatalf("queue labels: A %q, A's second process %q, B %q", labelA, labelA2, labelB)
	}

	image := os.Getenv("AIRLOCK_PYTHON_IMAGE")
	if image == "" {
		image = "airlock/python:latest"
	}
	if err := exec.Command("docker", "image", "inspect", image).Run(); err != nil {
		t.Skipf("the reaping half needs Docker and %s: %v", image, err)
	}
	const workerB = "elsewhere-77-b0b0b0"
	out, err := exec.Command("docker", "create", "--label", sandbox.LabelManaged+"=true",
		"--label", sandbox.LabelWorker+"="+workerB, "--label", sandbox.LabelQueue+"="+labelB,
		"--label", sandbox.LabelInstance+"=deployment-b", "--label", "airlock.host=elsewhere",
		"--label", "airlock.proc=77:1", image, "true").Output()
	if err != nil {
		t.Fatalf("docker create: %v", err)
	}
	id := strings.TrimSpace(string(out))
	t.Cleanup(func() { _ = exec.Command("docker", "rm", "-f", id).Run() })
	exists := func() bool { return exec.Command("docker", "container", "inspect", id).Run() == nil }

	eng := sandbox.New(sandbox.DefaultConfig(), mustDocker(t), nil)
	sweepCtx, cancel := context.WithTimeout(ctx, testscale.D(time.Minute))
	defer cancel()
	// A's reaper, twice (a worker counts as dead from the second sweep on
	// with no confirmation span): B's container is not A's to judge.
	for range 2 {
		if _, err := eng.ReapDeadWorkers(sweepCtx, labelA, qA.WorkerAlive, 0); err != nil {
			t.Fatal(err)
		}
	}
	if !exists() {
		t.Fatal("deployment A's reaper removed deployment B's container")
	}
	// B's reaper: its worker has no liveness key in B's Redis either, so
	// the container goes (the test would see a removal).
	for range 2 {
		if _, err := eng.ReapDeadWorkers(sweepCtx, labelB, qB.WorkerAlive, 0); err != nil {
			t.Fatal(err)
		}
	}
	if exists() {
		t.Fatal("deployment B's reaper left its dead worker's container")
	}
}

// mustDocker is a Docker client for the test.
func mustDocker(t *testing.T) sandbox.DockerAPI {
	t.Helper()
	dc, err := sandbox.NewDockerClient()
	if err != nil {
		t.Fatal(err)
	}
	return dc
}

// TestDeploymentLabelWithoutRedis: a queue without Redis (or one whose
// Redis does not answer) gives no label, so that process reaps no dead
// workers instead of judging containers by the bare queue name.
func TestDeploymentLabelWithoutRedis(t *testing.T) {
	s := newStack(slog.New(slog.DiscardHandler))
	mem, err := queue.NewMemory(queue.Config{}, queue.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	if l := s.deploymentLabel(context.Background(), mem, "airlock"); l != "" {
		t.Fatalf("in-process queue: label %q", l)
	}
	srv := redistest.Start(t, false)
	q, err := queue.NewRedis(queue.Config{Name: "airlock", SubmitTimeout: time.Second}, queue.Deps{Redis: srv.Client(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	srv.Stop()
	if l := s.deploymentLabel(context.Background(), q, "airlock"); l != "" {
		t.Fatalf("Redis down: label %q", l)
	}
}
