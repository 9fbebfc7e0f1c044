#!/bin/sh
# test_deb_install.sh — make deb's packages on a genuinely fresh Debian 12
# machine (docs/packaging.md). It builds a minimal bookworm root with
# mmdebstrap (--mode=root --variant=apt, from this machine's configured
# mirror, as cli_test_fresh_root does), adds systemd and man-db there (for
# systemd-analyze verify) and python3, then, as root inside it in a private mount
# namespace:
#   apt-get install ./pfi_*.deb ./pfi-agent_*.deb ./pfi-controller_*.deb
#     ./pfi-slurm_*.deb   (the Debian dependencies from the mirror; pfi-slurm
#                          pulls the exact Slurm it was built against)
#   pfi --version, man pfi-controller.json, pfi demo (the daemons as
#   installed, on loopback, about 30 s), python3 -c 'import pfi_steplog'
#   (Debian's python3) when the package has the hook, systemd-analyze verify on the installed units
#   (exit 0, nothing on stderr) and systemd-analyze security --offline
#   (the controller's exposure below 2.0); no unit was started (no systemd
#   runs there) and the maintainer scripts made /var/lib/pfi and the system
#   user pfi-controller with its /var/lib/pfi/controller; the controller run
#   as that user, as its unit does, with the shipped configuration;
#   apt-get purge of the four, apt-get autoremove --purge of what they pulled
# and checks that nothing is left: no file dpkg -L listed for them, no
# /etc/pfi, /var/lib/pfi, /usr/share/doc/pfi, /usr/lib/<multiarch>/pfi,
# /usr/share/pfi, and the root's files are those from before the install
# (apt's and dpkg's own records aside, and the account pfi-controller,
# which stays as Debian leaves a removed service's user: docs/packaging.md).
# The root is removed whatever happens.
#
# The packages come from cli_test_deb ($BUILD/deb/packages; ctest fixture
# "debs"). About 1 GB of disk and 2-3 minutes. Labelled "plain" and
# "fresh_root" and run serially (tests/CMakeLists.txt). Outcomes: pass;
# fail when the mirror cannot be reached (the claim cannot be checked);
# skip (exit 77) inside a chroot or without root privileges.
. "$SRC/tests/cli/lib.sh"
: "${BUILD:?}"
if in_chroot; then
  echo "SKIP: running inside a chroot (a fresh root already); not building another one inside it"
  exit 77
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "SKIP: needs root (mmdebstrap --mode=root, chroot, mounts); make test runs as root"
  exit 77
fi
command -v mmdebstrap >/dev/null || fail "mmdebstrap is not installed (scripts/bootstrap.sh test installs it)"
command -v unshare >/dev/null || fail "unshare is not installed (util-linux)"
P="$BUILD/deb/packages"
for p in pfi pfi-agent pfi-controller pfi-slurm; do
  ls "$P/${p}_"*.deb >/dev/null 2>&1 || fail "no $p .deb in $P: cli_test_deb builds them (ctest fixture debs)"
done
multi=$(dpkg-architecture -qDEB_HOST_MULTIARCH)

R="$T/root"
trap 'rm -rf --one-file-system "$T"' EXIT
start=$(date +%s)
echo "fresh root: mmdebstrap bookworm into $R"
if ! timeout 900 mmdebstrap --mode=root --variant=apt --include=ca-certificates,systemd,man-db,python3 \
     bookworm "$R" >"$T/mmdebstrap.log" 2>&1; then
  tail -n 20 "$T/mmdebstrap.log" >&2
  fail "mmdebstrap could not build a Debian 12 root from this machine's mirror (is it reachable?)"
fi
echo "fresh root: built in $(( $(date +%s) - start )) s"
mkdir "$R/debs"
cp "$P"/*.deb "$R/debs/"

# what is there before: every path but the pseudo file systems, /tmp, the
# packages' copies, and apt's and dpkg's own records
snapshot() {
  (cd "$R" && find . -xdev \( -path ./proc -o -path ./dev -o -path ./sys -o -path ./tmp -o -path ./run -o -path ./debs \
    -o -path ./var/lib/dpkg -o -path ./var/lib/apt -o -path ./var/cache -o -path ./var/log \
    -o -path ./etc/ld.so.cache -o -path ./etc/passwd- -o -path ./etc/group- -o -path ./etc/shadow- \
    -o -path ./etc/gshadow- \) -prune -o -print | sort) >"$1"
}
snapshot "$T/before"

# Everything inside runs in a private mount and PID namespace: the mounts
# die with it, and so does any daemon left running when a step fails.
in_root() {
  timeout "$1" unshare -m -p -f --propagation private sh -c '
    set -e
    R=$1; shift
    mount --rbind /dev "$R/dev"
    mount -t proc proc "$R/proc"
    mount -t tmpfs tmpfs "$R/tmp"
    chroot "$R" sh -c "$1"
  ' sh "$R" "$2"
}

t0=$(date +%s)
in_root 1200 '
  set -e
  export DEBIAN_FRONTEND=noninteractive
  cd /debs
  inst() { apt-get install -y -q --no-install-recommends ./pfi_*.deb ./pfi-agent_*.deb ./pfi-controller_*.deb ./pfi-slurm_*.deb; }
  inst || { apt-get update -q && inst; }
  dpkg -L pfi pfi-agent pfi-controller pfi-slurm >/debs/listed
  dpkg-query -W -f="\${Package} \${Status}\n" pfi pfi-agent pfi-controller pfi-slurm >/debs/status
' >"$T/install.log" 2>&1
rc=$?
echo "fresh root: apt-get install exited $rc after $(( $(date +%s) - t0 )) s"
[ $rc -eq 0 ] || { tail -n 40 "$T/install.log" >&2; fail "apt-get install of the packages failed in a fresh Debian 12 root"; }
[ "$(grep -c 'install ok installed' "$R/debs/status")" -eq 4 ] || { cat "$R/debs/status" >&2; fail "not all four packages installed"; }
ok
[ -d "$R/var/lib/pfi" ] || fail "the maintainer scripts did not make /var/lib/pfi"; ok
# the controller's own system user (no login), owning its state directory
# and nothing above it
pw=$(grep '^pfi-controller:' "$R/etc/passwd") || fail "no user pfi-controller after installation"
uid=$(echo "$pw" | cut -d: -f3)
[ "$uid" -gt 0 ] && [ "$uid" -lt 1000 ] || fail "pfi-controller is not a system user: $pw"; ok
case $pw in *:/usr/sbin/nologin) ok ;; *) fail "pfi-controller can log in: $pw" ;; esac
[ "$(stat -c '%u %a' "$R/var/lib/pfi/controller")" = "$uid 750" ] ||
  fail "/var/lib/pfi/controller: $(stat -c '%U %a' "$R/var/lib/pfi/controller"), not pfi-controller's, 750"
ok
[ "$(stat -c '%u %a' "$R/var/lib/pfi")" = "0 755" ] || fail "/var/lib/pfi is not root's 755"; ok
[ -L "$R/etc/systemd/system/multi-user.target.wants/pfi-agent.service" ] || fail "pfi-agent.service not enabled"; ok
[ ! -e "$R/etc/systemd/system/multi-user.target.wants/pfi-controller.service" ] || fail "pfi-controller enabled before it is configured"; ok
[ -f "$R/usr/lib/$multi/pfi/spank_pfi.so" ] || fail "no SPANK plugin at /usr/lib/$multi/pfi"; ok
# the monitoring files ship (issue 41: none did), as in contrib/
for f in prometheus/pfi-rules.yml prometheus/prometheus.yml grafana/pfi.json; do
  cmp -s "$R/usr/share/pfi/$f" "$SRC/contrib/$f" || fail "/usr/share/pfi/$f is not contrib/$f"; ok
done
# the packaged configuration uses the daemon's default strategy
grep -q '"strategy": "safe-online"' "$R/etc/pfi/controller.json" || fail "the packaged controller.json: $(grep strategy "$R/etc/pfi/controller.json")"; ok

t0=$(date +%s)
in_root 600 '
  set -e
  pfi --version
  man -P cat pfi-controller.json | grep -q control_period_s
  man -w pfi-agent pfi-controller pfi-spank pfi >/dev/null
  cd /tmp
  timeout -k 10 300 pfi demo --time-scale 40 >/tmp/demo.out 2>/tmp/demo.err || { cat /tmp/demo.out /tmp/demo.err; exit 1; }
  cp /tmp/demo.out /debs/demo.out
  if [ -d /usr/lib/python3/dist-packages/pfi_steplog ]; then
    # as an administrator would: Python writes its byte code next to the
    # hook (the purge must remove it)
    cd / && env -u PYTHONDONTWRITEBYTECODE python3 -c "import pfi_steplog; print(\"python: pfi_steplog from\", pfi_steplog.__file__)"
    ls /usr/lib/python3/dist-packages/pfi_steplog/__pycache__ >/dev/null
    cd /tmp
  fi
  systemd-analyze verify pfi-agent.service pfi-controller.service 2>/debs/verify.err
  echo "verify: exit 0"
  # the hardening as systemd scores it: the controller below 2.0 (issue 30)
  for u in pfi-agent pfi-controller; do
    systemd-analyze security --offline=yes /usr/lib/systemd/system/$u.service 2>&1 | tail -n 1 >>/debs/security
  done
  systemd-analyze security --offline=yes --threshold=19 /usr/lib/systemd/system/pfi-controller.service >/dev/null 2>&1
  echo "security: controller below 2.0"
  # the daemons as installed, with their default state paths (what a
  # service leaves for the purge): the agent on simulated GPUs, the
  # controller with the shipped /etc/pfi/controller.json and the
  # operator'"'"'s tokens; both on free ports
  # wait_file FILE PID LOG: FILE written within 30 s of wall clock, or the
  # daemon PID exited (its LOG shown)
  wait_file() {
    end=$(($(date +%s) + 30))
    until [ -s "$1" ]; do
      kill -0 "$2" 2>/dev/null || { echo "exited before writing $1:"; cat "$3"; return 1; }
      [ "$(date +%s)" -lt $end ] || { echo "no $1 within 30 s:"; cat "$3"; return 1; }
      sleep 0.05
    done
  }
  umask 077
  # the tokens the controller reads are its user'"'"'s (docs/deploy.md); the
  # root agent reads the same agent token
  for t in agent operator; do head -c 32 /dev/urandom | od -An -tx1 | tr -d " \n" >/etc/pfi/$t.token; done
  chown pfi-controller: /etc/pfi/agent.token /etc/pfi/operator.token
  mkdir -m 1777 /tmp/ctl
  pfi-agent --backend sim --listen 127.0.0.1:0 --port-file /tmp/agent.port 2>/tmp/agent.log &
  a=$!
  # as the unit runs it: the user pfi-controller, no capability
  setpriv --reuid pfi-controller --regid pfi-controller --init-groups --inh-caps=-all --bounding-set=-all \
    pfi-controller --config /etc/pfi/controller.json --listen 127.0.0.1:0 --port-file /tmp/ctl/port 2>/tmp/ctl.log &
  c=$!
  wait_file /tmp/agent.port $a /tmp/agent.log
  wait_file /tmp/ctl/port $c /tmp/ctl.log
  kill $a $c
  wait $a $c || true
  ls /var/lib/pfi >/debs/state
  ls -n /var/lib/pfi/controller >/debs/ctl-state
  # an interrupted pfi sweep: its state file still lists a GPU whose cap it
  # changed, the only record of the cap before (the purge must keep it)
  printf "{\"format_version\": 1, \"pid\": 1, \"gpus\": [{\"index\": 0, \"uuid\": \"GPU-x\", \"cap_w\": 700}]}\n" \
    >/var/lib/pfi/sweep-state.json
  # the operator'"'"'s own files are the operator'"'"'s to remove
  rm /etc/pfi/agent.token /etc/pfi/operator.token
' >"$T/run.log" 2>&1
rc=$?
echo "fresh root: pfi --version, man, pfi demo, systemd-analyze verify exited $rc after $(( $(date +%s) - t0 )) s"
[ $rc -eq 0 ] || { tail -n 40 "$T/run.log" >&2; fail "the installed packages do not work in a fresh Debian 12 root"; }
grep -q '^pfi ' "$T/run.log" || fail "pfi --version"; ok
contains "$R/debs/demo.out" "MET (tolerance 2%)"
contains "$R/debs/demo.out" "every GPU is back at its 700 W baseline"
[ ! -s "$R/debs/verify.err" ] || { cat "$R/debs/verify.err" >&2; fail "systemd-analyze verify wrote to stderr"; }
ok
contains "$T/run.log" "verify: exit 0"
if grep -q '/pfi_steplog/__init__.py$' "$R/debs/listed"; then
  contains "$T/run.log" "python: pfi_steplog from /usr/lib/python3/dist-packages/pfi_steplog/__init__.py"
fi
contains "$R/debs/state" "agent-state.json"
# the database where the shipped configuration keeps it, the user's
awk -v u="$uid" '$NF == "controller.db" && $3 == u {f = 1} END {exit !f}' "$R/debs/ctl-state" ||
  { cat "$R/debs/ctl-state" >&2; fail "no controller.db of pfi-controller's in /var/lib/pfi/controller"; }
ok
contains "$T/run.log" "security: controller below 2.0"
cat "$R/debs/security"
# a demo's leftovers would stay in /tmp, which is not the packages' business

t0=$(date +%s)
in_root 600 '
  set -e
  export DEBIAN_FRONTEND=noninteractive
  apt-get purge -y -q pfi pfi-agent pfi-controller pfi-slurm
  apt-get autoremove --purge -y -q
' >"$T/purge.log" 2>&1
rc=$?
echo "fresh root: apt-get purge exited $rc after $(( $(date +%s) - t0 )) s"
[ $rc -eq 0 ] || { tail -n 40 "$T/purge.log" >&2; fail "apt-get purge failed"; }
# the sweep's unrestored record is kept, with a warning; the agent's clean
# state file and the controller's database are gone
[ -f "$R/var/lib/pfi/sweep-state.json" ] || fail "purge removed a sweep state file that still lists a GPU"; ok
contains "$T/purge.log" "sweep-state.json still lists GPUs"
[ "$(ls "$R/var/lib/pfi")" = "sweep-state.json" ] || fail "left in /var/lib/pfi: $(ls "$R/var/lib/pfi")"; ok
# the state directory of the controller is gone, its account stays
[ ! -e "$R/var/lib/pfi/controller" ] || fail "/var/lib/pfi/controller is left after apt-get purge"; ok
grep -q '^pfi-controller:' "$R/etc/passwd" || fail "the purge removed the account pfi-controller"; ok
# the operator, having restored that GPU, removes the record
rm "$R/var/lib/pfi/sweep-state.json"
rmdir "$R/var/lib/pfi"
for d in /etc/pfi /var/lib/pfi /usr/share/doc/pfi /usr/lib/$multi/pfi /usr/share/pfi /usr/include/pfi \
  /etc/default/pfi-agent /etc/slurm/plugstack.conf.d/pfi.conf /usr/lib/python3/dist-packages/pfi_steplog; do
  [ ! -e "$R$d" ] || fail "$d is left after apt-get purge"; ok
done
# no file dpkg listed for them (directories other packages share may stay)
while read -r f; do
  [ -d "$R$f" ] && continue
  [ ! -e "$R$f" ] && [ ! -L "$R$f" ] || fail "$f (from dpkg -L) is left after apt-get purge"
done <"$R/debs/listed"
ok
[ "$(wc -l <"$R/debs/listed")" -gt 100 ] || fail "dpkg -L listed only $(wc -l <"$R/debs/listed") paths"; ok
# and the root is as it was before the install
snapshot "$T/after"
if ! cmp -s "$T/before" "$T/after"; then
  diff "$T/before" "$T/after" | head -n 40 >&2
  fail "apt-get purge left the root different from before the install (above: < gone, > added)"
fi
ok
echo "fresh root: total $(( $(date +%s) - start )) s"
done_ok
