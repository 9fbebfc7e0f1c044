#!/bin/sh
# bootstrap.sh — install the Debian 12 packages pfi needs, and nothing else.
#
#   scripts/bootstrap.sh run    what building pfi and running its main job needs
#   scripts/bootstrap.sh deb    the run packages, plus what make deb needs
#                               (dpkg-dev: dpkg-shlibdeps; file: CPack's
#                               DEB generator refuses SHLIBDEPS without it;
#                               libslurm-dev: the SPANK plugin's headers)
#   scripts/bootstrap.sh test   the above, plus what the test suite needs
#                               (cmocka, GLPK, clang + libFuzzer runtime,
#                               clang-format-14 for the format check,
#                               Slurm + munge, Chromium, mmdebstrap,
#                               systemd (systemd-analyze verify), man-db
#                               (man, groff: the man page checks), lintian
#                               (the packages' check), nodejs +
#                               npm: scripts/prism.sh installs Stoplight Prism,
#                               the OpenADR 3 mock VTN, under build/prism
#                               when its test first runs; Prometheus and
#                               promtool; python3-torch, -venv, -setuptools
#                               and -wheel for the step-log hook's tests;
#                               iproute2 (ip: the deploy guide's test
#                               gives its network namespace addresses))
#
# The lists are checked in a fresh Debian 12 root by
# tests/cli/test_fresh_root.sh (make run, make deb, then this script's test
# list and every program the suite calls), so a package a developer's
# machine happens to have cannot hide a missing one.
#
# Idempotent: it asks dpkg which packages are missing and installs only those,
# so a second run on a ready machine does nothing and needs no network.
# Installing needs root (apt-get); when nothing is missing, any user may run it.
set -eu

RUN_PKGS="gcc make cmake pkg-config libc6-dev
  libgsl-dev libjansson-dev libmicrohttpd-dev libgnutls28-dev nettle-dev libcurl4-openssl-dev libsqlite3-dev libsystemd-dev
  libplplot-dev plplot-driver-cairo"
DEB_PKGS="dpkg-dev file libslurm-dev"
TEST_PKGS="libcmocka-dev libglpk-dev clang libclang-rt-14-dev clang-format-14
  slurm-wlm libslurm-dev munge chromium curl tar git mmdebstrap nodejs npm systemd man-db lintian
  prometheus python3-torch python3-venv python3-setuptools python3-wheel sqlite3 shfmt iproute2
  etcd-server etcd-client"

case "${1:-run}" in
  run)  want="$RUN_PKGS" ;;
  deb)  want="$RUN_PKGS $DEB_PKGS" ;;
  test) want="$RUN_PKGS $DEB_PKGS $TEST_PKGS" ;;
  *) echo "bootstrap.sh: unknown target '$1' (expected run, deb or test)" >&2; exit 2 ;;
esac

missing=""
for p in $want; do
  # npm (for Prism, docs/testing.md): a machine may have it from another
  # Node.js build (NodeSource's nodejs bundles npm and conflicts with
  # Debian's npm package): a working npm on PATH is enough
  case $p in nodejs | npm) if command -v npm >/dev/null 2>&1 && command -v node >/dev/null 2>&1; then continue; fi ;; esac
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing="$missing $p"
  fi
done

if [ -z "$missing" ]; then
  echo "bootstrap: all Debian packages present"
  exit 0
fi

echo "bootstrap: installing:$missing"
if [ "$(id -u)" -ne 0 ]; then
  echo "bootstrap: missing packages and not root; run as root or install:$missing" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
# Refresh the package lists only when an install from the current ones fails
# (a fresh image often has none at all).
if ! apt-get install -y -q --no-install-recommends $missing; then
  apt-get update -q
  apt-get install -y -q --no-install-recommends $missing
fi
