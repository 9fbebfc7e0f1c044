#!/bin/sh
# test_driver_upgrade_hook.sh — apt stops pfi-agent before it upgrades the
# NVIDIA driver (issue 40 small item; packaging/nvidia-upgrade-hook, run
# from /etc/apt/apt.conf.d/50pfi-agent as a DPkg::Pre-Install-Pkgs hook,
# which gets the .deb files on stdin: apt.conf(5)). With a systemctl double
# that records its calls: a driver package in the list stops the active
# unit, once, and says why; a list without one, or an inactive unit, calls
# no stop; a failing stop is said and apt is never failed (exit 0). The
# shipped apt snippet names the hook.
. "$SRC/tests/cli/lib.sh"
HOOK=$SRC/packaging/nvidia-upgrade-hook
mkdir -p "$T/bin"
cat >"$T/bin/systemctl" <<'SH'
#!/bin/sh
echo "$*" >>"$CALLS"
case "$1" in
is-active) [ "${ACTIVE:-1}" = 1 ] ;;
stop) [ "${STOP_FAILS:-0}" = 0 ] ;;
esac
SH
chmod +x "$T/bin/systemctl"
export CALLS=$T/calls PATH="$T/bin:$PATH"
run_hook() { : >"$CALLS"; printf '%s\n' "$@" | "$HOOK" 2>"$T/err"; echo $? >"$T/rc"; }

# a driver upgrade among other packages: the active agent is stopped
run_hook /var/cache/apt/archives/curl_7.88.1-10_amd64.deb \
  /var/cache/apt/archives/libnvidia-ml1_535.216.01-1~deb12u1_amd64.deb
[ "$(cat "$T/rc")" = 0 ] || fail "hook exit $(cat "$T/rc")"; ok
grep -qx "stop pfi-agent" "$CALLS" || { cat "$CALLS" >&2; fail "pfi-agent not stopped"; }; ok
[ "$(grep -c '^stop' "$CALLS")" = 1 ] || fail "stopped more than once"; ok
contains "$T/err" "stopping pfi-agent before the NVIDIA driver upgrade (libnvidia-ml1_535.216.01-1~deb12u1_amd64.deb)"
for p in nvidia-driver_535.216.01-1_amd64.deb nvidia-kernel-dkms_535_amd64.deb nvidia-open-565_565.57.01-1_amd64.deb \
  cuda-drivers-565_565.57.01-1_amd64.deb nvidia-fabricmanager-550_550.90.07-1_amd64.deb; do
  run_hook "/var/cache/apt/archives/$p"
  grep -qx "stop pfi-agent" "$CALLS" || fail "$p: pfi-agent not stopped"; ok
done
# no driver package: nothing called
run_hook /var/cache/apt/archives/curl_7.88.1-10_amd64.deb /var/cache/apt/archives/nvidia-smi-wrapper-docs_1_all.deb
lacks "$CALLS" "stop"
[ ! -s "$T/err" ] || fail "the hook said something for an unrelated upgrade: $(cat "$T/err")"; ok
# the agent not running: not stopped
ACTIVE=0 run_hook /var/cache/apt/archives/libnvidia-ml1_535_amd64.deb
lacks "$CALLS" "stop"
# a stop that fails: said, apt not failed
STOP_FAILS=1 run_hook /var/cache/apt/archives/libnvidia-ml1_535_amd64.deb
[ "$(cat "$T/rc")" = 0 ] || fail "a failed stop failed apt"; ok
contains "$T/err" "could not stop pfi-agent"
# the snippet apt reads names the hook, and a failure of it never stops apt
grep -q '^DPkg::Pre-Install-Pkgs {"/usr/lib/pfi/nvidia-upgrade-hook || true";};$' "$SRC/packaging/etc/apt/apt.conf.d/50pfi-agent" \
  || fail "the apt snippet does not name the hook"; ok
done_ok
