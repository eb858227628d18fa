package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// TestComposeValid validates docker-compose.yml with the tools that will
// read it: the old docker-compose v1 and, where installed, `docker compose`.
func TestComposeValid(t *testing.T) {
	file := filepath.Join("..", "docker-compose.yml")
	ran := 0
	for _, argv := range [][]string{{"docker-compose", "-f", file, "config", "-q"}, {"docker", "compose", "-f", file, "config", "-q"}} {
		if _, err := exec.LookPath(argv[0]); err != nil {
			continue
		}
		if argv[0] == "docker" && exec.Command("docker", "compose", "version").Run() != nil {
			continue
		}
		out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, out)
		}
		ran++
	}
	if ran == 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("neither docker-compose nor docker compose is installed")
		}
		t.Skip("no compose tool installed")
	}
}

// TestComposeShape checks what the deployment promises: Redis with AOF,
// the socket mounted into workers only, health checks everywhere.
func TestComposeShape(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Services map[string]struct {
			Command     []string `yaml:"command"`
			Volumes     []string `yaml:"volumes"`
			Healthcheck *struct {
				Test []string `yaml:"test"`
			} `yaml:"healthcheck"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	workers := 0
	for name, s := range doc.Services {
		if s.Healthcheck == nil || len(s.Healthcheck.Test) == 0 {
			t.Errorf("service %s has no health check", name)
		}
		socket := false
		for _, v := range s.Volumes {
			if strings.Contains(v, "docker.sock") {
				socket = true
			}
		}
		isWorker := len(s.Command) > 0 && s.Command[0] == "worker"
		if isWorker {
			workers++
		}
		if socket != isWorker {
			t.Errorf("service %s: docker socket mounted=%v, worker=%v", name, socket, isWorker)
		}
	}
	if workers != 2 {
		t.Errorf("want 2 workers, got %d", workers)
	}
	if r, ok := doc.Services["redis"]; !ok || !strings.Contains(strings.Join(r.Command, " "), "--appendonly yes") {
		t.Errorf("redis must run with AOF on")
	}
}

// TestKubernetesManifests parses every document and checks that only the
// worker mounts the Docker socket.
func TestKubernetesManifests(t *testing.T) {
	f, err := os.Open(filepath.Join("k8s", "airlock.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec := yaml.NewDecoder(f)
	kinds := map[string]int{}
	for {
		var doc map[string]any
		if err := dec.Decode(&doc); err != nil {
			if err.Error() == "EOF" {
				break
			}
			t.Fatalf("parse: %v", err)
		}
		kind, _ := doc["kind"].(string)
		kinds[kind]++
		b, _ := yaml.Marshal(doc)
		name := doc["metadata"].(map[string]any)["name"]
		if strings.Contains(string(b), "docker.sock") != (name == "airlock-worker") {
			t.Errorf("%s %v: docker socket only belongs to the worker", kind, name)
		}
	}
	for _, k := range []string{"Deployment", "DaemonSet", "StatefulSet", "Service", "Secret"} {
		if kinds[k] == 0 {
			t.Errorf("no %s in the manifests", k)
		}
	}
}

// TestComposeEgressDoors: every worker gets the egress door folder
// (AIRLOCK_EGRESS_DOOR_DIR) mounted at the same path as on the host, which
// is where the Docker daemon looks when it bind-mounts a door into a
// sandbox.
func TestComposeEgressDoors(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Services map[string]struct {
			Command     []string          `yaml:"command"`
			Volumes     []string          `yaml:"volumes"`
			Environment map[string]string `yaml:"environment"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	// The sandboxes' link sockets (AIRLOCK_LINK_DIR) likewise.
	dirs := map[string]string{
		"AIRLOCK_EGRESS_DOOR_DIR": "${AIRLOCK_EGRESS_DOOR_DIR:-/run/airlock-egress}",
		"AIRLOCK_LINK_DIR":        "${AIRLOCK_LINK_DIR:-/run/airlock-link}",
	}
	for name, s := range doc.Services {
		if len(s.Command) == 0 || s.Command[0] != "worker" {
			continue
		}
		for env, dir := range dirs {
			if s.Environment[env] != dir {
				t.Errorf("worker %s: %s = %q, want %q", name, env, s.Environment[env], dir)
			}
			found := false
			for _, v := range s.Volumes {
				found = found || v == dir+":"+dir
			}
			if !found {
				t.Errorf("worker %s does not mount %s at the same path: %v", name, dir, s.Volumes)
			}
		}
	}
}
