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
# Every version is pinned (scripts/prism/package.json and its
# package-lock.json, installed with npm ci): resolved afresh, a dependency's
# newest release can need a newer Node.js than Debian 12's (a fresh root got
# an ES-module-only @faker-js/faker that Node.js 18 cannot require(), while
# a machine with Node.js 20 ran it). Prism 5.7.0 runs on Node.js >= 16.
set -eu
PRISM_PKG=@stoplight/prism-cli@5.7.0
lock_dir=$(cd "$(dirname "$0")/prism" && pwd)
dir=${1:-build/prism}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
bin=$dir/node_modules/.bin/prism
# a Prism installed from another lockfile (an older checkout's) is replaced
if [ -x "$bin" ] && ! cmp -s "$lock_dir/package-lock.json" "$dir/package-lock.json"; then
  rm -rf "$dir/node_modules" "$dir/package.json" "$dir/package-lock.json"
fi
if [ ! -x "$bin" ]; then
  command -v npm >/dev/null 2>&1 || {
    echo "prism.sh: npm is missing (scripts/bootstrap.sh test installs nodejs and npm)" >&2; exit 1; }
  log=$dir/npm-install.log
  cp "$lock_dir/package.json" "$lock_dir/package-lock.json" "$dir/"
  if ! (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error) >"$log" 2>&1; then
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
