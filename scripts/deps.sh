#!/usr/bin/env bash
# Installs what Airlock needs on a Debian/Ubuntu machine that has Go and a
# Docker daemon, and checks the rest.
#
# usage: scripts/deps.sh run|test
#   run   what `make run` needs: Go, a reachable Docker daemon, debootstrap
#         (to build the sandbox images offline from Debian's packages)
#   test  also what `make test` needs: redis-server, chromium, and the real
#         Jupyter clients of the gateway tests (jupyter server, the classic
#         Notebook, nbclient/nbconvert, python3-websocket)
#
# Missing packages are installed with apt-get when this script can (it runs
# as root, or `sudo -n` works); otherwise it prints the one command to run
# and exits 1. A missing Go or an unreachable Docker daemon cannot be fixed
# here: the script says how to fix it and exits 1. With everything present
# it prints nothing and exits 0.
set -euo pipefail

mode=${1:-}
case "$mode" in
  run | test) ;;
  *) echo "usage: scripts/deps.sh run|test" >&2; exit 2 ;;
esac

say() { echo "deps: $*" >&2; }
problems=0
problem() { echo "deps: $*" >&2; problems=$((problems + 1)); }

# have_pkg reports whether the program package $1 provides is present.
have_pkg() {
  case "$1" in
    debootstrap) command -v debootstrap >/dev/null || [ -x /usr/sbin/debootstrap ] ;;
    redis-server) command -v redis-server >/dev/null ;;
    # The browser tests look here (internal/browsertest).
    chromium) [ -x "${AIRLOCK_CHROMIUM:-/usr/bin/chromium}" ] ;;
    # The Jupyter gateway tests (internal/jupyter) drive these real clients,
    # with Debian's python3 (a python3 earlier on PATH may be another one).
    python3-jupyter-server) /usr/bin/python3 -c 'import jupyter_server' 2>/dev/null ;;
    python3-notebook) /usr/bin/python3 -c 'import notebook' 2>/dev/null ;;
    python3-nbclient) /usr/bin/python3 -c 'import nbclient' 2>/dev/null ;;
    jupyter-nbconvert) command -v jupyter-nbconvert >/dev/null ;;
    python3-websocket) /usr/bin/python3 -c 'import websocket' 2>/dev/null ;;
    # The session notebook export is validated with it (internal/snapshots).
    python3-nbformat) /usr/bin/python3 -c 'import nbformat' 2>/dev/null ;;
    # debootstrap checks bookworm's Release signature with this keyring
    # (always present on Debian; a separate package on Ubuntu).
    debian-archive-keyring) [ -f /usr/share/keyrings/debian-archive-keyring.gpg ] ;;
    *) return 1 ;;
  esac
}

wanted=(debootstrap debian-archive-keyring)
[ "$mode" = test ] && wanted+=(redis-server chromium python3-jupyter-server python3-notebook python3-nbclient jupyter-nbconvert python3-websocket python3-nbformat)
need=()
for p in "${wanted[@]}"; do have_pkg "$p" || need+=("$p"); done

# Missing packages: install them when root or passwordless sudo allows,
# else name the one command to run.
if [ ${#need[@]} -gt 0 ]; then
  if ! command -v apt-get >/dev/null; then
    problem "missing ${need[*]}, and there is no apt-get here (Debian/Ubuntu only): install them with your package manager"
  else
    as=()
    if [ "$(id -u)" -ne 0 ]; then
      if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
        as=(sudo -n)
      else
        as=(none)
      fi
    fi
    if [ "${as[0]:-}" = none ]; then
      if command -v sudo >/dev/null; then
        cmd="sudo apt-get update && sudo apt-get install -y --no-install-recommends ${need[*]}"
      else
        cmd="su -c 'apt-get update && apt-get install -y --no-install-recommends ${need[*]}'"
      fi
      problem "missing ${need[*]}; install with:"
      echo "    $cmd" >&2
    else
      say "installing ${need[*]} with apt-get (a few minutes on first run)"
      if ! "${as[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null; then
        problem "apt-get update failed (see above)"
      elif ! "${as[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null; then
        problem "apt-get install ${need[*]} failed (see above)"
      else
        still=()
        for p in "${need[@]}"; do have_pkg "$p" || still+=("$p"); done
        if [ ${#still[@]} -gt 0 ]; then
          problem "still missing after apt-get install: ${still[*]}"
        else
          say "installed ${need[*]}"
        fi
      fi
    fi
  fi
fi

# Go: Debian's golang package is too old for go.mod; the toolchain comes
# from go.dev (GOTOOLCHAIN fetches the exact version go.mod asks for).
if ! command -v "${GO:-go}" >/dev/null; then
  problem "no Go toolchain on PATH: install it from https://go.dev/dl/ (then add /usr/local/go/bin to PATH)"
fi

# Docker: the sandboxes run there and images/build.sh imports into it.
if ! command -v docker >/dev/null; then
  problem "no docker command: install Docker (Debian: apt-get install docker.io; or https://docs.docker.com/engine/install/)"
elif ! out=$(docker info --format '{{.ServerVersion}}' 2>&1); then
  case "$out" in
    *"permission denied"*)
      problem "the Docker daemon refuses $(id -un): add yourself to the docker group and log in again:"
      echo "    sudo usermod -aG docker $(id -un)" >&2 ;;
    *)
      problem "the Docker daemon is not reachable (${out##*$'\n'}): start it (sudo systemctl start docker) or set DOCKER_HOST" ;;
  esac
fi

if [ "$problems" -gt 0 ]; then
  say "fix the above, then run this again"
  exit 1
fi
