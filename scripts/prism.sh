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
# reach); the message says which.
set -eu
dir=${1:-build/prism}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
bin=$dir/node_modules/.bin/prism
if [ ! -x "$bin" ]; then
  command -v npm >/dev/null 2>&1 || {
    echo "prism.sh: npm is missing (scripts/bootstrap.sh test installs nodejs and npm)" >&2; exit 1; }
  npm install --prefix "$dir" --no-audit --no-fund --loglevel=error @stoplight/prism-cli@5 >&2 ||
    { echo "prism.sh: npm install @stoplight/prism-cli@5 into $dir failed" >&2; exit 1; }
fi
"$bin" --version >/dev/null 2>&1 || { echo "prism.sh: $bin does not run" >&2; exit 1; }
echo "$bin"
