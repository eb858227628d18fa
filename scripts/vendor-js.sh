#!/usr/bin/env bash
# Copies the web UI's JavaScript libraries, with their licences, from
# Debian's packages into api/web/vendor/ (committed, so a build needs
# nothing): CodeMirror 5 (editor, Python and shell modes), marked
# (Markdown), DOMPurify (sanitises the Markdown's HTML) and highlight.js
# (code in answers). No npm. Missing packages are installed with apt-get
# when this script runs as root or `sudo -n` works.
#
# usage: scripts/vendor-js.sh
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
out="$root/api/web/vendor"
pkgs=(libjs-codemirror libjs-marked node-dompurify libjs-highlight.js)

need=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || need+=("$p"); done
if [ ${#need[@]} -gt 0 ]; then
  as=()
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
      as=(sudo -n)
    else
      echo "vendor-js: missing ${need[*]}; run: sudo apt-get install -y ${need[*]}" >&2
      exit 1
    fi
  fi
  "${as[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${as[@]}" apt-get install -y -qq "${need[@]}" >/dev/null
fi

cm=/usr/share/javascript/codemirror
rm -rf "$out"
mkdir -p "$out/codemirror" "$out/marked" "$out/dompurify" "$out/highlight"
cp "$cm/lib/codemirror.js" "$cm/lib/codemirror.css" "$out/codemirror/"
cp "$cm/mode/python/python.js" "$out/codemirror/python.js"
cp "$cm/mode/shell/shell.js" "$out/codemirror/shell.js"
cp /usr/share/doc/libjs-codemirror/copyright "$out/codemirror/LICENSE"
cp "$(readlink -f /usr/share/javascript/marked/marked.min.js)" "$out/marked/marked.min.js"
cp /usr/share/doc/libjs-marked/copyright "$out/marked/LICENSE"
cp /usr/share/nodejs/dompurify/dist/purify.min.js "$out/dompurify/purify.min.js"
cp /usr/share/doc/node-dompurify/copyright "$out/dompurify/LICENSE"
cp /usr/share/javascript/highlight.js/highlight.min.js "$out/highlight/highlight.min.js"
cp /usr/share/javascript/highlight.js/styles/a11y-light.css "$out/highlight/a11y-light.css"
cp /usr/share/javascript/highlight.js/styles/a11y-dark.css "$out/highlight/a11y-dark.css"
cp /usr/share/doc/libjs-highlight.js/copyright "$out/highlight/LICENSE"
# Source map comments would make the browser ask for files we do not ship.
sed -i '/^\/\/# sourceMappingURL=/d' "$out"/*/*.js
{
  echo "Copied by scripts/vendor-js.sh from these Debian packages:"
  for p in "${pkgs[@]}"; do echo "$p $(dpkg-query -W -f='${Version}' "$p")"; done
} >"$out/VERSIONS"
