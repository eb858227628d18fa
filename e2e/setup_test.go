package e2e

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/testscale"
)

// The fresh-machine check of issue 16: scripts/deps.sh runs in a clean
// Debian container (a debootstrapped base image, with none of debootstrap,
// redis-server and chromium) with the repository mounted read-only and no
// network. Go and the Docker CLI are small fakes on PATH (the container has
// neither); apt-get and sudo are fakes that record how they were called.

// fakeTools is a shell prelude that writes the fakes into /tmp/fake:
// go, docker (answering `docker info` as $DOCKER_STATE says), apt-get
// (logs its arguments to /tmp/apt.log and, for install, puts an
// executable named after each package into /tmp/fake, and for a python3-X
// package a module X on PYTHONPATH) and, when $WITH_SUDO is set, a sudo
// that logs and runs its command.
const fakeTools = `set -e
mkdir -p /tmp/fake/py
cat >/tmp/fake/go <<'X'
#!/bin/sh
echo "go version go1.26 linux/amd64"
X
cat >/tmp/fake/docker <<'X'
#!/bin/sh
case "$DOCKER_STATE" in
  down) echo "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?" >&2; exit 1 ;;
  denied) echo "permission denied while trying to connect to the Docker daemon socket at unix:///var/run/docker.sock" >&2; exit 1 ;;
esac
echo 20.10.24
X
cat >/tmp/fake/apt-get <<'X'
#!/bin/sh
echo "apt-get $*" >>/tmp/apt.log
[ "$DEBIAN_FRONTEND" = noninteractive ] || { echo "DEBIAN_FRONTEND not set" >&2; exit 3; }
if [ "$1" = install ]; then
  for a in "$@"; do
    case "$a" in install|-*) ;; *) printf '#!/bin/sh\n' >"/tmp/fake/$a"; chmod +x "/tmp/fake/$a" ;; esac
    case "$a" in python3-*) m=$(echo "${a#python3-}" | tr - _); : >"/tmp/fake/py/$m.py" ;; esac
  done
fi
X
if [ -n "$WITH_SUDO" ]; then
cat >/tmp/fake/sudo <<'X'
#!/bin/sh
echo "sudo $*" >>/tmp/apt.log
[ "$1" = -n ] && shift
exec "$@"
X
fi
chmod +x /tmp/fake/*
[ -z "$NO_DOCKER" ] || rm /tmp/fake/docker
export PATH=/tmp/fake:/usr/sbin:/usr/bin:/sbin:/bin AIRLOCK_CHROMIUM=/tmp/fake/chromium PYTHONPATH=/tmp/fake/py
set +e
bash /src/scripts/deps.sh "$MODE"
echo "rc=$?"
echo "--- apt.log"
cat /tmp/apt.log 2>/dev/null || true
`

// testPkgs are the packages `scripts/deps.sh test` adds to what `run`
// needs: Redis, Chromium and the Jupyter clients of the gateway tests.
const testPkgs = "redis-server chromium python3-jupyter-server python3-notebook python3-nbclient jupyter-nbconvert python3-websocket python3-nbformat"

// depsRun is one run of scripts/deps.sh in a fresh container.
type depsRun struct {
	user   string   // --user
	mode   string   // run or test
	env    []string // extra NAME=VALUE for the prelude
	out    string   // deps.sh's stdout and stderr
	rc     string   // its exit code
	aptLog []string // apt-get / sudo calls, in order
}

// freshBase is a debootstrapped Airlock image (no debootstrap, redis-server
// or chromium in it); the test skips (fails in CI) without Docker or one.
func freshBase(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("docker"); err != nil {
		missing(t, "no docker command: %v", err)
	}
	// The final images work too (run as root they are the same Debian with
	// the sandbox user); they remain when an old base was pruned.
	for _, repo := range []string{"airlock/shell-base", "airlock/python-base", "airlock/shell", "airlock/python"} {
		out, err := exec.Command("docker", "image", "ls", "--format", "{{.Repository}}:{{.Tag}}", repo).Output()
		if err != nil {
			missing(t, "docker image ls: %v", err)
		}
		if fields := strings.Fields(string(out)); len(fields) > 0 {
			return fields[0]
		}
	}
	missing(t, "no airlock/shell-base, airlock/python-base, airlock/shell or airlock/python image (run `make images`)")
	return ""
}

// run starts deps.sh in a clean container from img with the repository
// mounted read-only at /src and no network.
func (d *depsRun) run(t *testing.T, img string) {
	t.Helper()
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(3*time.Minute))
	defer cancel()
	args := []string{"run", "--rm", "--network", "none", "--user", d.user,
		"-v", filepath.Clean(root) + ":/src:ro", "-e", "MODE=" + d.mode}
	for _, kv := range d.env {
		args = append(args, "-e", kv)
	}
	args = append(args, img, "bash", "-c", fakeTools)
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "docker", args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("docker run: %v\n%s", err, stderr.String())
		}
		t.Fatalf("docker run exited %d\nstdout:\n%s\nstderr:\n%s", ee.ExitCode(), stdout.String(), stderr.String())
	}
	// The prelude prints deps.sh's output merged by the container's
	// stdout/stderr; deps.sh writes only to stderr.
	all := stderr.String() + stdout.String()
	body, log, ok := strings.Cut(stdout.String(), "--- apt.log\n")
	if !ok {
		t.Fatalf("no apt.log marker in the output:\n%s", all)
	}
	m := regexp.MustCompile(`(?m)^rc=(\d+)$`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no exit code in the output:\n%s", all)
	}
	d.rc = m[1]
	d.out = stderr.String()
	for _, l := range strings.Split(strings.TrimSpace(log), "\n") {
		if l != "" {
			d.aptLog = append(d.aptLog, l)
		}
	}
}

// TestSetupDepsNonRootPrintsCommand: a user who cannot install gets the
// one apt-get command naming exactly the missing packages, and nothing is
// run.
func TestSetupDepsNonRootPrintsCommand(t *testing.T) {
	t.Parallel()
	img := freshBase(t)
	for _, tc := range []struct {
		mode, pkgs string
	}{
		{"test", "debootstrap " + testPkgs},
		{"run", "debootstrap"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			d := &depsRun{user: "10001:10001", mode: tc.mode}
			d.run(t, img)
			if d.rc != "1" {
				t.Fatalf("exit code %s, want 1:\n%s", d.rc, d.out)
			}
			want := "su -c 'apt-get update && apt-get install -y --no-install-recommends " + tc.pkgs + "'"
			if !strings.Contains(d.out, want) {
				t.Fatalf("output does not name the command %q:\n%s", want, d.out)
			}
			if n := strings.Count(d.out, "apt-get install"); n != 1 {
				t.Fatalf("%d apt-get install commands, want one:\n%s", n, d.out)
			}
			if len(d.aptLog) != 0 {
				t.Fatalf("apt-get/sudo ran as a user without sudo: %q", d.aptLog)
			}
			if strings.Contains(d.out, "Docker") || strings.Contains(d.out, "Go toolchain") {
				t.Fatalf("complains about Docker or Go, which are present:\n%s", d.out)
			}
		})
	}
}

// TestSetupDepsRootInstalls: as root the script runs apt-get update, then
// installs exactly the missing packages, checks they arrived and exits 0.
func TestSetupDepsRootInstalls(t *testing.T) {
	t.Parallel()
	img := freshBase(t)
	d := &depsRun{user: "0:0", mode: "test"}
	d.run(t, img)
	if d.rc != "0" {
		t.Fatalf("exit code %s, want 0:\n%s", d.rc, d.out)
	}
	want := []string{
		"apt-get update -qq",
		"apt-get install -y -qq --no-install-recommends debootstrap " + testPkgs,
	}
	if !slices.Equal(d.aptLog, want) {
		t.Fatalf("apt-get calls %q, want %q", d.aptLog, want)
	}
	if !strings.Contains(d.out, "a few minutes on first run") {
		t.Fatalf("the install does not say how long it takes:\n%s", d.out)
	}
}

// TestSetupDepsPasswordlessSudo: a user with passwordless sudo gets the
// packages installed through `sudo -n`.
func TestSetupDepsPasswordlessSudo(t *testing.T) {
	t.Parallel()
	img := freshBase(t)
	d := &depsRun{user: "10001:10001", mode: "run", env: []string{"WITH_SUDO=1"}}
	d.run(t, img)
	if d.rc != "0" {
		t.Fatalf("exit code %s, want 0:\n%s", d.rc, d.out)
	}
	want := []string{
		"sudo -n true",
		"sudo -n env DEBIAN_FRONTEND=noninteractive apt-get update -qq",
		"apt-get update -qq",
		"sudo -n env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap",
		"apt-get install -y -qq --no-install-recommends debootstrap",
	}
	if !slices.Equal(d.aptLog, want) {
		t.Fatalf("sudo/apt-get calls %q, want %q", d.aptLog, want)
	}
}

// TestSetupDepsDocker: no docker command, a stopped daemon and a refused
// socket each fail with what to do.
func TestSetupDepsDocker(t *testing.T) {
	t.Parallel()
	img := freshBase(t)
	for _, tc := range []struct {
		name string
		env  []string
		want string
	}{
		{"no-cli", []string{"NO_DOCKER=1"}, "no docker command: install Docker"},
		{"down", []string{"DOCKER_STATE=down"}, "sudo systemctl start docker"},
		{"denied", []string{"DOCKER_STATE=denied"}, "sudo usermod -aG docker sandbox"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &depsRun{user: "10001:10001", mode: "run", env: append(tc.env, "WITH_SUDO=1")}
			d.run(t, img)
			if d.rc != "1" {
				t.Fatalf("exit code %s, want 1:\n%s", d.rc, d.out)
			}
			if !strings.Contains(d.out, tc.want) {
				t.Fatalf("output lacks %q:\n%s", tc.want, d.out)
			}
		})
	}
}

// TestSetupDockerfilesMatchPackages: the registry Dockerfiles install the
// same packages as the offline build's packages.txt.
func TestSetupDockerfilesMatchPackages(t *testing.T) {
	t.Parallel()
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"python", "shell"} {
		list, err := os.ReadFile(filepath.Join(root, "images", name, "packages.txt"))
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, l := range strings.Split(string(list), "\n") {
			if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
				want = append(want, l)
			}
		}
		df, err := os.ReadFile(filepath.Join(root, "images", name, "Dockerfile"))
		if err != nil {
			t.Fatal(err)
		}
		_, rest, ok := strings.Cut(string(df), "--no-install-recommends")
		if !ok {
			t.Fatalf("%s/Dockerfile: no apt-get install --no-install-recommends", name)
		}
		rest, _, _ = strings.Cut(rest, "&&")
		got := strings.Fields(strings.ReplaceAll(rest, "\\", " "))
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s/Dockerfile installs %q, packages.txt lists %q", name, got, want)
		}
		if !strings.Contains(string(df), "-perm /6000") {
			t.Errorf("%s/Dockerfile does not strip setuid/setgid bits", name)
		}
	}
}

// TestSetupImagesHardened: the built images hold no setuid/setgid file and
// only the python image carries Python settings.
func TestSetupImagesHardened(t *testing.T) {
	t.Parallel()
	requireDocker(t)
	for _, tc := range []struct {
		img    string
		python bool
	}{
		{envOr("AIRLOCK_SHELL_IMAGE", "airlock/shell:latest"), false},
		{envOr("AIRLOCK_PYTHON_IMAGE", "airlock/python:latest"), true},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), testscale.D(3*time.Minute))
		out, err := exec.CommandContext(ctx, "docker", "run", "--rm", "--network", "none", "--user", "0:0", tc.img,
			"sh", "-c", "find / -xdev -perm /6000 -type f; echo ---; env").CombinedOutput()
		cancel()
		if err != nil {
			t.Fatalf("%s: %v\n%s", tc.img, err, out)
		}
		suid, env, _ := strings.Cut(string(out), "---\n")
		if s := strings.TrimSpace(suid); s != "" {
			t.Errorf("%s has setuid/setgid files:\n%s", tc.img, s)
		}
		for _, k := range []string{"MPLBACKEND=", "MPLCONFIGDIR=", "PYTHONDONTWRITEBYTECODE="} {
			if has := strings.Contains(env, "\n"+k) || strings.HasPrefix(env, k); has != tc.python {
				t.Errorf("%s: %s present=%v, want %v", tc.img, k, has, tc.python)
			}
		}
	}
}
