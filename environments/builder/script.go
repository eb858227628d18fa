package builder

// buildDir is where the build context lands in the build container; the
// script removes it before the image is committed.
const buildDir = "/airlock-build"

// buildScript is the build recipe: it runs as root in the build container
// only (the sole place with network), reads everything it installs from
// buildDir (lists one entry a line, never interpolated into shell code),
// and ends like images/build.sh's final recipe: everything readable,
// setuid/setgid bits stripped. User, working folder, env and labels are
// set by the commit. Lines starting with the build's marker tell the
// builder the current step and the installed packages; its hash is part
// of every environment's content hash, so a changed recipe rebuilds.
const buildScript = `#!/bin/bash
set -euo pipefail
exec 2>&1
B=` + buildDir + `
mark="@@airlock-$(cat "$B/nonce")"
step() { echo "$mark step $1"; }
# The builder holds stdin: when it goes away (done, or the builder died),
# the build stops and the container removes itself.
exec 3<&0 0</dev/null
( cat <&3 >/dev/null; kill -KILL -1 ) &
exec 3<&-
export DEBIAN_FRONTEND=noninteractive
if [ -s "$B/apt.txt" ]; then
  step apt-update
  if [ -s "$B/mirror" ]; then
    suite=$(awk '$1 == "deb" { print $3; exit }' /etc/apt/sources.list 2>/dev/null || true)
    echo "deb $(cat "$B/mirror") ${suite:-bookworm} main" >/etc/apt/sources.list
  fi
  apt-get update -q
  step apt
  if [ -f "$B/purge-pip" ] && dpkg -s python3-pip >/dev/null 2>&1; then rm -f "$B/purge-pip"; fi
  xargs -a "$B/apt.txt" apt-get install -y -q --no-install-recommends
fi
if [ -s "$B/pip.args" ]; then
  step pip
  mapfile -t args <"$B/pip.args"
  python3 -m pip install --no-cache-dir --break-system-packages --root-user-action=ignore \
    --disable-pip-version-check --no-warn-script-location --progress-bar off "${args[@]}"
fi
if [ -d "$B/files" ]; then
  step files
  cp -a "$B/files/." /
fi
step finish
if [ -s "$B/apt.list" ]; then
  while read -r p; do dpkg-query -W -f='${Package}=${Version}\n' "$p"; done <"$B/apt.list" | sed "s/^/$mark package apt /"
fi
if [ -s "$B/pip.args" ]; then
  for d in /usr/local/lib/python3*/dist-packages; do
    python3 -m pip list --disable-pip-version-check --format=freeze --path "$d" | sed "s/^/$mark package pip /"
  done
  if [ -f "$B/purge-pip" ]; then apt-get purge -y -q python3-pip; fi
fi
apt-get clean
rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /usr/share/doc/* /usr/share/man/* /usr/share/locale/* /root/.cache
# Readable by every sandbox uid; only what lacks it is touched (a chmod
# would copy an unchanged file of the base into the new layer).
for d in /usr/local /opt /srv; do
  if [ -d "$d" ]; then
    find "$d" \( \( -type d ! -perm -o+rx \) -o \( ! -type d ! -type l ! -perm -o+r \) \) -exec chmod a+rX {} +
  fi
done
find / -xdev -perm /6000 -type f -exec chmod ug-s {} +
rm -rf "$B"
# The builder commits the image while the build waits here, then closes
# stdin: the watcher ends everything and the container removes itself.
step end
wait
`

// stepEnd is the script's last marker: the build waits to be committed.
const stepEnd = "end"
