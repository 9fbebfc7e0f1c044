#!/bin/sh
# prism.sh — Stoplight Prism 5 (prism-cli), the mock VTN the OpenADR 3
# contract test serves the vendored specification with
# (tests/cli/test_vtn_prism.sh): installed once with npm under DIR
# (default build/prism; Debian's nodejs and npm, scripts/bootstrap.sh test),
# then reused. Prints the path of the prism program.
#
#   scripts/prism.sh [DIR]
#
# Exit 1 when it cannot be installed (no npm, or the npm registry out of
# reach); the message says which, with npm's own error lines and what to do
# (a network that intercepts TLS needs its CA in the system's store or in
# npm's cafile: docs/testing.md).
#
# The version is pinned: Prism 5.8 and later need Node.js >= 18.20.1
# (their package.json "engines"), and Debian 12 ships 18.19: installed
# there, 5.14 does not start. 5.7.0 is the newest 5.x for Node.js >= 16,
# so every machine (Debian's Node.js or a newer one) runs the same Prism.
set -eu
PRISM_PKG=@stoplight/prism-cli@5.7.0
dir=${1:-build/prism}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
bin=$dir/node_modules/.bin/prism
# a Prism of another version (an older checkout's) is replaced
if [ -x "$bin" ] && ! grep -q '"version": "5.7.0"' "$dir/node_modules/@stoplight/prism-cli/package.json" 2>/dev/null; then
  rm -rf "$dir/node_modules" "$dir/package.json" "$dir/package-lock.json"
fi
if [ ! -x "$bin" ]; then
  command -v npm >/dev/null 2>&1 || {
    echo "prism.sh: npm is missing (scripts/bootstrap.sh test installs nodejs and npm)" >&2; exit 1; }
  log=$dir/npm-install.log
  if ! npm install --prefix "$dir" --no-audit --no-fund --loglevel=error "$PRISM_PKG" >"$log" 2>&1; then
    why=$(grep -m 3 -E 'npm (ERR!|error) (code|request|network|reason)|ERR!.*(cert|CERT|ENOTFOUND|ECONN|ETIMEDOUT)|error (code|network|request)' "$log" |
          sed 's/^npm \(ERR!\|error\) //' | tr '\n' ';' | sed 's/;$//')
    [ -n "$why" ] || why=$(tail -n 1 "$log")
    hint="is the npm registry reachable from here (npm config get registry)?"
    case $why in
      *CERT* | *cert* | *certificate*)
        hint="npm does not trust the registry's TLS certificate: a network that intercepts TLS needs its CA installed (/usr/local/share/ca-certificates + update-ca-certificates) and named to npm (npm config set cafile /etc/ssl/certs/ca-certificates.crt, or NODE_EXTRA_CA_CERTS)" ;;
    esac
    echo "prism.sh: npm install $PRISM_PKG into $dir failed: $why; $hint (full log: $log)" >&2
    exit 1
  fi
fi
if ! out=$("$bin" --version 2>&1); then
  echo "prism.sh: $bin does not run ($(node --version 2>&1)): $(printf '%s' "$out" | grep -v '^ *at ' | tail -n 3 | tr '\n' ' ')" >&2
  exit 1
fi
echo "$bin"
