#!/usr/bin/env bash
# Builds Airlock's sandbox images without any container registry:
# debootstrap a Debian bookworm rootfs from the machine's apt mirror, add the
# sandbox user and the in-container controller, then `docker import` it.
# Each image is tagged airlock/NAME:<content-hash>; an unchanged image is not
# rebuilt. airlock/NAME:latest always points at the newest build, unless
# AIRLOCK_IMAGE_NO_LATEST=1 (a private build beside a shared :latest: only
# the content-hash tag is made, and printed).
#
# Every sandbox image (python, shell, and environments built from them)
# carries the same controller, images/python/rootfs/opt/airlock, copied in
# at build time and labelled airlock.runner: it is the container's pid 1,
# its dead man's switch and its in-container deadline (PROTOCOL.md). Only
# the python image preloads numpy & co in its zygote (AIRLOCK_PRELOAD=1).
#
# The compose stack's images (server, redis, haproxy) are built the same
# way from one shared base (images/service/packages.txt); airlock/server
# adds the static airlock binary built on the host ($AIRLOCK_SERVER_BIN,
# default bin/airlock-static; `make compose-images` builds it).
#
# `images/build.sh service` builds only that shared base: make test builds
# it beside the sandbox images, so the compose test does not pay for it.
#
# usage: images/build.sh [--list] [NAME...]   (default: python shell)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# debootstrap lives in /usr/sbin, which a user's PATH may lack.
export PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"
suite=${AIRLOCK_DEBIAN_SUITE:-bookworm}
uid=${AIRLOCK_SANDBOX_UID:-10001}

# mirror is the Debian mirror debootstrap downloads from:
# $AIRLOCK_DEBIAN_MIRROR, else the machine's own apt sources (deb822
# *.sources and one-line sources.list), preferring an entry for $suite.
# It prints nothing when there is neither; resolve_mirror says so.
mirror() {
  if [ -n "${AIRLOCK_DEBIAN_MIRROR:-}" ]; then echo "$AIRLOCK_DEBIAN_MIRROR"; return; fi
  apt_sources | awk -v suite="$suite" '
    $1 !~ /security/ && $2 == suite { print $1; found = 1; exit }
    $1 !~ /security/ && $1 ~ /\/debian\/?$/ && !any { any = $1 }
    END { if (!found && any) print any }'
}

# apt_sources prints "URI SUITE" for every deb source of the machine.
apt_sources() {
  local f
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    awk '
      function flush() { if (deb) for (i = 1; i <= nu; i++) for (j = 1; j <= ns; j++) print u[i], s[j]; deb = nu = ns = 0 }
      /^[ \t]*$/ { flush(); next }
      /^[ \t]*#/ { next }
      tolower($1) == "types:" { for (i = 2; i <= NF; i++) if ($i == "deb") deb = 1 }
      tolower($1) == "uris:" { for (i = 2; i <= NF; i++) u[++nu] = $i }
      tolower($1) == "suites:" { for (i = 2; i <= NF; i++) s[++ns] = $i }
      tolower($1) == "enabled:" && tolower($2) == "no" { nu = 0 }
      END { flush() }' "$f"
  done
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$f" ] || continue
    # deb [options] URI SUITE COMPONENT...
    sed -E -n 's/^[[:space:]]*deb[[:space:]]+(\[[^]]*\][[:space:]]+)?([^[:space:]]+)[[:space:]]+([^[:space:]]+).*/\2 \3/p' "$f"
  done
}

# resolve_mirror fixes the mirror for this run (AIRLOCK_DEBIAN_MIRROR) or
# stops with what to set.
resolve_mirror() {
  local m
  m=$(mirror)
  if [ -z "$m" ]; then
    echo "images: no Debian mirror found in /etc/apt/sources.list or /etc/apt/sources.list.d/*.sources;" >&2
    echo "images: set AIRLOCK_DEBIAN_MIRROR to a Debian mirror with $suite, e.g. AIRLOCK_DEBIAN_MIRROR=http://deb.debian.org/debian make images" >&2
    exit 1
  fi
  export AIRLOCK_DEBIAN_MIRROR=$m
}

base_hash() {
  { echo "suite=$suite uid=$uid"; sed -n '/^# base-recipe-start/,/^# base-recipe-end/p' "$here/build.sh"; cat "$here/$1/packages.txt"; } | sha256sum | cut -c1-16
}

# controller is the in-container controller every sandbox image carries.
controller=python/rootfs/opt/airlock

# tree_content prints every file under $1 (relative to $here) with its path;
# Python's byte-code caches are neither hashed nor copied into images.
tree_content() {
  (cd "$here" && find "$1" -type f -not -path '*/__pycache__/*' | LC_ALL=C sort | while read -r f; do echo "$f"; cat "$f"; done)
}

image_hash() {
  { base_hash "$1"; sed -n '/^# final-recipe-start/,/^# final-recipe-end/p' "$here/build.sh"
    tree_content "$controller"; if [ -d "$here/$1/rootfs" ]; then tree_content "$1/rootfs"; fi; } | sha256sum | cut -c1-16
}

packages() { grep -vE '^\s*(#|$)' "$here/$1/packages.txt" | paste -sd, -; }

# progress copies debootstrap's output (stdin) to the log $2 and tells what
# it is doing for the image $1: each phase as it starts and, every 15 s
# within one (even while a single package takes long), how many packages it
# has gone through, so a first build that takes minutes is seen to move.
progress() {
  local tag=$1 log=$2 line part="" phase="starting" what n=0 last=$SECONDS rc
  : >"$log"
  while :; do
    rc=0
    IFS= read -r -t 15 line || rc=$?
    if [ "$rc" -gt 128 ]; then # no line for 15 s: keep what came, say it still runs
      part+=$line
      last=$SECONDS
      echo "images: $tag: $phase: $n so far, still working (${SECONDS}s)"
      continue
    fi
    line=$part$line part=""
    [ "$rc" -eq 0 ] || [ -n "$line" ] || break
    printf '%s\n' "$line" >>"$log"
    case $line in
      "I: Retrieving "*) what="downloading packages" ;;
      "I: Extracting "*) what="extracting packages" ;;
      "I: Unpacking "*) what="unpacking packages" ;;
      "I: Configuring "*) what="configuring packages" ;;
      "I: Base system installed"*) what="installed" ;;
      *) continue ;;
    esac
    if [ "$what" != "$phase" ]; then
      phase=$what n=0 last=$SECONDS
      echo "images: $tag: $phase (${SECONDS}s)"
    fi
    n=$((n + 1))
    if [ $((SECONDS - last)) -ge 15 ]; then
      last=$SECONDS
      echo "images: $tag: $phase: $n so far (${SECONDS}s)"
    fi
  done
}

# base-recipe-start
# The base: a minimal Debian rootfs with the image's packages and the sandbox user.
build_base() {
  local name=$1 tag=$2 root
  command -v debootstrap >/dev/null || { echo "images: debootstrap is missing: apt-get install debootstrap" >&2; exit 1; }
  root=$(mktemp -d /tmp/airlock-rootfs-XXXXXX)
  echo "images: bootstrapping $tag from $(mirror) (a few minutes; progress below)"
  if ! debootstrap --variant=minbase --include="$(packages "$name")" "$suite" "$root" "$(mirror)" 2>&1 | progress "$tag" "$root.log"; then
    tail -n 30 "$root.log" >&2; rm -rf "$root"
    echo "images: debootstrap failed for $name (log: $root.log)" >&2; exit 1
  fi
  rm -f "$root.log"
  echo "sandbox:x:$uid:$uid:airlock sandbox:/tmp:/bin/bash" >>"$root/etc/passwd"
  echo "sandbox:x:$uid:" >>"$root/etc/group"
  echo "sandbox:!:19000:0:99999:7:::" >>"$root/etc/shadow"
  mkdir -p "$root/work" "$root/workspace" "$root/opt/airlock"
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* \
    "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/locale/*
  echo "images: importing $tag into Docker ($(du -sh "$root" | cut -f1))"
  tar -C "$root" --numeric-owner -c . | docker import - "$tag" >/dev/null
  rm -rf "$root"
}
# base-recipe-end

# final-recipe-start
# The final image: base + the image's rootfs/ overlay + user, env and labels.
build_final() {
  local name=$1 base=$2 tag=$3 hash=$4 ctx env fonts=""
  env="PATH=/usr/local/bin:/usr/bin:/bin HOME=/tmp LANG=C.UTF-8"
  # Python settings and the zygote's preload go to the python image only;
  # Airlock turns the preload off per container (AIRLOCK_PRELOAD=0) for cold
  # one-shot containers, where it would only slow the start.
  if [ "$name" = python ]; then
    env="$env MPLBACKEND=Agg MPLCONFIGDIR=/tmp/.mpl PYTHONDONTWRITEBYTECODE=1 AIRLOCK_PRELOAD=1"
    # matplotlib's font cache, built once here (read-only in the image): the
    # controller copies it into MPLCONFIGDIR (an empty tmpfs per container), so
    # no first import of matplotlib rebuilds it (FontManager(), >10 s under load).
    fonts=" && MPLCONFIGDIR=/usr/local/share/airlock/mpl python3 -c 'import matplotlib.font_manager'"
    # Jedi's parse trees of the preloaded libraries (airlock_introspect.warm_cache):
    # a session's first completion reads them instead of parsing pandas again.
    fonts="$fonts && MPLBACKEND=Agg MPLCONFIGDIR=/usr/local/share/airlock/mpl PYTHONPATH=/opt/airlock python3 -c 'import airlock_introspect; airlock_introspect.warm_cache()'"
    fonts="$fonts && chmod -R a+rX,go-w /usr/local/share/airlock"
  else
    env="$env AIRLOCK_PRELOAD=0"
  fi
  ctx=$(mktemp -d /tmp/airlock-ctx-XXXXXX)
  mkdir -p "$ctx/rootfs/opt/airlock"
  cp -a "$here/$controller/." "$ctx/rootfs/opt/airlock/"
  if [ -d "$here/$name/rootfs" ]; then cp -a "$here/$name/rootfs/." "$ctx/rootfs/"; fi
  find "$ctx/rootfs" -depth -type d -name __pycache__ -exec rm -rf {} +
  cat >"$ctx/Dockerfile" <<DOCKERFILE
FROM $base
COPY rootfs/ /
RUN chmod -R a+rX /opt/airlock && chown $uid:$uid /work && chmod 0755 /work$fonts \\
 && find / -xdev -perm /6000 -type f -exec chmod ug-s {} +
USER $uid:$uid
WORKDIR /work
ENV $env
LABEL airlock.image=$name airlock.image.hash=$hash
CMD ["/bin/bash"]
DOCKERFILE
  # airlock.wire=link: the controller talks to Airlock over the link socket
  # (PROTOCOL.md); Airlock refuses an image without it (an older controller).
  echo 'LABEL airlock.runner=/opt/airlock/controller.py airlock.wire=link' >>"$ctx/Dockerfile"
  docker build -q -t "$tag" "$ctx" >/dev/null 2>"$ctx.log" || { cat "$ctx.log" >&2; exit 1; }
  rm -f "$ctx.log"
  rm -rf "$ctx"
}
# final-recipe-end

# prepare_base checks what building a base image needs: debootstrap, a
# mirror, and root. Not root, it re-runs this script for $1 under sudo
# (which then builds and tags everything) and returns 1.
prepare_base() {
  local name=$1 base=$2
  command -v debootstrap >/dev/null || { echo "images: debootstrap is missing: run scripts/deps.sh run (or apt-get install debootstrap)" >&2; exit 1; }
  resolve_mirror
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "images: building $base runs debootstrap, which needs root: run su -c 'bash images/build.sh $name'" >&2; exit 1; }
    echo "images: debootstrap needs root; re-running images/build.sh $name with sudo"
    sudo env PATH="$PATH" DOCKER_HOST="${DOCKER_HOST:-}" AIRLOCK_DEBIAN_MIRROR="$AIRLOCK_DEBIAN_MIRROR" AIRLOCK_IMAGE_NO_LATEST="${AIRLOCK_IMAGE_NO_LATEST:-}" \
      AIRLOCK_SERVER_BIN="$(server_bin)" AIRLOCK_DEBIAN_SUITE="$suite" AIRLOCK_SANDBOX_UID="$uid" bash "$here/build.sh" "$name" || exit 1
    return 1
  fi
  echo "images: first build of $base: debootstrap downloads and unpacks Debian $suite with $(packages "${3:-$name}" | tr , ' ' | wc -w) packages and their dependencies (a few minutes on first run; later runs reuse it)"
}

# tag_latest tags $1 as $2 (the :latest tag) unless AIRLOCK_IMAGE_NO_LATEST=1.
tag_latest() {
  if [ "${AIRLOCK_IMAGE_NO_LATEST:-}" = 1 ]; then return; fi
  docker tag "$1" "$2"
}

build() {
  local name=$1 hash bhash tag base
  bhash=$(base_hash "$name")
  hash=$(image_hash "$name")
  base="airlock/$name-base:$bhash"
  tag="airlock/$name:$hash"
  if docker image inspect "$tag" >/dev/null 2>&1; then
    tag_latest "$tag" "airlock/$name:latest"
    echo "images: $tag is up to date"
    return
  fi
  if ! docker image inspect "$base" >/dev/null 2>&1; then
    prepare_base "$name" "$base" || return 0
    build_base "$name" "$base"
  fi
  build_final "$name" "$base" "$tag" "$hash"
  tag_latest "$tag" "airlock/$name:latest"
  echo "images: built $tag"
}

# server_bin is the static airlock binary copied into airlock/server.
server_bin() {
  local b=${AIRLOCK_SERVER_BIN:-$here/../bin/airlock-static}
  case $b in /*) echo "$b" ;; *) echo "$PWD/$b" ;; esac
}

# service-recipe-start
# The compose stack's images: the shared service base plus one small layer.
service_dockerfile() {
  local name=$1 base=$2 hash=$3
  echo "FROM $base"
  case $name in
  server)
    cat <<'DOCKERFILE'
COPY airlock /usr/local/bin/airlock
RUN chmod 0755 /usr/local/bin/airlock && echo 'airlock:x:10002:10002:airlock:/home/airlock:/bin/sh' >>/etc/passwd \
 && echo 'airlock:x:10002:' >>/etc/group && mkdir -p /home/airlock && chown 10002:10002 /home/airlock
USER 10002:10002
ENV PATH=/usr/local/bin:/usr/bin:/bin HOME=/home/airlock LANG=C.UTF-8
WORKDIR /home/airlock
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/airlock"]
CMD ["serve"]
DOCKERFILE
    ;;
  redis)
    cat <<'DOCKERFILE'
RUN mkdir -p /data && chown redis:redis /data
USER redis
WORKDIR /data
VOLUME /data
EXPOSE 6379
CMD ["redis-server", "--protected-mode", "no"]
DOCKERFILE
    ;;
  haproxy)
    cat <<'DOCKERFILE'
RUN mkdir -p /usr/local/etc/haproxy /run/haproxy && chown haproxy:haproxy /run/haproxy
USER haproxy
EXPOSE 8080
STOPSIGNAL SIGUSR1
CMD ["haproxy", "-W", "-db", "-f", "/usr/local/etc/haproxy/haproxy.cfg"]
DOCKERFILE
    ;;
  esac
  echo "LABEL airlock.image=$name airlock.image.hash=$hash"
}
# service-recipe-end

service_hash() {
  { base_hash service; echo "name=$1"; sed -n '/^# service-recipe-start/,/^# service-recipe-end/p' "$here/build.sh"
    if [ "$1" = server ]; then sha256sum <"$(server_bin)"; fi; } | sha256sum | cut -c1-16
}

# build_service_base builds the shared service base unless it exists
# (debootstrap: minutes on a first run, with its progress shown); $1 names
# the image it is for. It returns 1 when a sudo re-run built it instead.
build_service_base() {
  local base
  base="airlock/service-base:$(base_hash service)"
  if docker image inspect "$base" >/dev/null 2>&1; then
    [ "$1" != service ] || echo "images: $base is up to date"
    return 0
  fi
  prepare_base "$1" "$base" service || return 1
  build_base service "$base"
  [ "$1" != service ] || echo "images: built $base"
}

# build_service builds airlock/NAME (server, redis or haproxy) on the
# shared service base, skipping an image whose content hash exists.
build_service() {
  local name=$1 hash base tag ctx
  if [ "$name" = server ] && [ ! -x "$(server_bin)" ]; then
    echo "images: $(server_bin) is missing: run make compose-images (or CGO_ENABLED=0 go build -o bin/airlock-static ./cmd/airlock)" >&2; exit 1
  fi
  hash=$(service_hash "$name")
  tag="airlock/$name:$hash"
  base="airlock/service-base:$(base_hash service)"
  if docker image inspect "$tag" >/dev/null 2>&1; then
    tag_latest "$tag" "airlock/$name:latest"
    echo "images: $tag is up to date"
    return
  fi
  build_service_base "$name" || return 0
  ctx=$(mktemp -d /tmp/airlock-ctx-XXXXXX)
  if [ "$name" = server ]; then cp "$(server_bin)" "$ctx/airlock"; fi
  service_dockerfile "$name" "$base" "$hash" >"$ctx/Dockerfile"
  docker build -q -t "$tag" "$ctx" >/dev/null 2>"$ctx.log" || { cat "$ctx.log" >&2; exit 1; }
  rm -rf "$ctx" "$ctx.log"
  tag_latest "$tag" "airlock/$name:latest"
  echo "images: built $tag"
}

if [ "${1:-}" = "--list" ]; then
  docker image ls --filter 'reference=airlock/*' --format '{{.Repository}}:{{.Tag}}\t{{.ID}}\t{{.Size}}\t{{.CreatedSince}}'
  exit 0
fi
names=("$@")
[ ${#names[@]} -gt 0 ] || names=(python shell)
for n in "${names[@]}"; do
  case $n in
    server | redis | haproxy) build_service "$n"; continue ;;
    service) build_service_base service || true; continue ;; # the base alone (make test builds it up front)
  esac
  [ -f "$here/$n/packages.txt" ] || { echo "images: unknown image $n (no $here/$n/packages.txt)" >&2; exit 2; }
  build "$n"
done
