#!/usr/bin/env bash
# Builds Airlock's sandbox images without any container registry:
# debootstrap a Debian bookworm rootfs from the machine's apt mirror, add the
# sandbox user and the in-container runner, then `docker import` it.
# Each image is tagged airlock/NAME:<content-hash>; an unchanged image is not
# rebuilt. airlock/NAME:latest always points at the newest build.
#
# usage: images/build.sh [--list] [NAME...]   (default: python shell)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
suite=${AIRLOCK_DEBIAN_SUITE:-bookworm}
uid=${AIRLOCK_SANDBOX_UID:-10001}

mirror() {
  if [ -n "${AIRLOCK_DEBIAN_MIRROR:-}" ]; then echo "$AIRLOCK_DEBIAN_MIRROR"; return; fi
  local m
  m=$(grep -hsE '^URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '{print $2}' | grep -v security | head -n1 || true)
  [ -n "$m" ] || m=$(grep -hsE '^deb ' /etc/apt/sources.list 2>/dev/null | awk '{print $2}' | grep -v security | head -n1 || true)
  echo "${m:-http://deb.debian.org/debian}"
}

base_hash() {
  { echo "suite=$suite uid=$uid"; sed -n '/^# base-recipe-start/,/^# base-recipe-end/p' "$here/build.sh"; cat "$here/$1/packages.txt"; } | sha256sum | cut -c1-16
}

image_hash() {
  { base_hash "$1"; sed -n '/^# final-recipe-start/,/^# final-recipe-end/p' "$here/build.sh"; if [ -d "$here/$1/rootfs" ]; then (cd "$here/$1" && find rootfs -type f | LC_ALL=C sort | while read -r f; do echo "$f"; cat "$f"; done); fi; } | sha256sum | cut -c1-16
}

packages() { grep -vE '^\s*(#|$)' "$here/$1/packages.txt" | paste -sd, -; }

# base-recipe-start
# The base: a minimal Debian rootfs with the image's packages and the sandbox user.
build_base() {
  local name=$1 tag=$2 root
  command -v debootstrap >/dev/null || { echo "images: debootstrap is missing: apt-get install debootstrap" >&2; exit 1; }
  root=$(mktemp -d /tmp/airlock-rootfs-XXXXXX)
  echo "images: bootstrapping $tag from $(mirror) (a minute or two)"
  if ! debootstrap --variant=minbase --include="$(packages "$name")" "$suite" "$root" "$(mirror)" >"$root.log" 2>&1; then
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
  tar -C "$root" --numeric-owner -c . | docker import - "$tag" >/dev/null
  rm -rf "$root"
}
# base-recipe-end

# final-recipe-start
# The final image: base + the image's rootfs/ overlay + user, env and labels.
build_final() {
  local name=$1 base=$2 tag=$3 hash=$4 ctx
  ctx=$(mktemp -d /tmp/airlock-ctx-XXXXXX)
  mkdir -p "$ctx/rootfs"
  if [ -d "$here/$name/rootfs" ]; then cp -a "$here/$name/rootfs/." "$ctx/rootfs/"; fi
  cat >"$ctx/Dockerfile" <<DOCKERFILE
FROM $base
COPY rootfs/ /
RUN chmod -R a+rX /opt/airlock && chown $uid:$uid /work && chmod 0755 /work
USER $uid:$uid
WORKDIR /work
ENV PATH=/usr/local/bin:/usr/bin:/bin HOME=/tmp LANG=C.UTF-8 MPLBACKEND=Agg MPLCONFIGDIR=/tmp/.mpl PYTHONDONTWRITEBYTECODE=1
LABEL airlock.image=$name airlock.image.hash=$hash
CMD ["/bin/bash"]
DOCKERFILE
  if [ -f "$ctx/rootfs/opt/airlock/runner.py" ]; then
    echo 'LABEL airlock.runner=/opt/airlock/runner.py' >>"$ctx/Dockerfile"
  fi
  docker build -q -t "$tag" "$ctx" >/dev/null 2>"$ctx.log" || { cat "$ctx.log" >&2; exit 1; }
  rm -f "$ctx.log"
  rm -rf "$ctx"
}
# final-recipe-end

build() {
  local name=$1 hash bhash tag base
  bhash=$(base_hash "$name")
  hash=$(image_hash "$name")
  base="airlock/$name-base:$bhash"
  tag="airlock/$name:$hash"
  if docker image inspect "$tag" >/dev/null 2>&1; then
    docker tag "$tag" "airlock/$name:latest"
    echo "images: $tag is up to date"
    return
  fi
  docker image inspect "$base" >/dev/null 2>&1 || build_base "$name" "$base"
  build_final "$name" "$base" "$tag" "$hash"
  docker tag "$tag" "airlock/$name:latest"
  echo "images: built $tag"
}

if [ "${1:-}" = "--list" ]; then
  docker image ls --filter 'reference=airlock/*' --format '{{.Repository}}:{{.Tag}}\t{{.ID}}\t{{.Size}}\t{{.CreatedSince}}'
  exit 0
fi
names=("$@")
[ ${#names[@]} -gt 0 ] || names=(python shell)
for n in "${names[@]}"; do
  [ -f "$here/$n/packages.txt" ] || { echo "images: unknown image $n (no $here/$n/packages.txt)" >&2; exit 2; }
  build "$n"
done
