#!/bin/sh
# test_state_fulldisk.sh — a full disk never leaves a cap set (issue 14,
# item 2): the agent's state file on a full 64 KiB tmpfs; PUT /v1/caps is
# refused (503) and no cap changes, since the state (baselines, intended
# caps) is written before any device is touched; kill -9 and restart: the
# caps go back to the real baselines, and the next lease records the real
# baseline. pfi sweep's own state file on the full disk: the sweep stops
# before setting any cap. Needs root (mount); runs in a private mount
# namespace (unshare -m), so a killed test leaks no mount.
if [ -z "${PFI_IN_MOUNT_NS-}" ]; then
  [ "$(id -u)" -eq 0 ] || { echo "skipped: needs root to mount a small tmpfs"; exit 77; }
  # A chroot whose / is not a mount point (a fresh root built by mmdebstrap)
  # cannot make its mounts private; without that, the tmpfs could propagate
  # to the host's mount table, so the test does not run there.
  unshare -m --propagation private true 2>/dev/null ||
    { echo "skipped: cannot make a private mount namespace here (unshare -m --propagation private fails, e.g. in a chroot)"; exit 77; }
  PFI_IN_MOUNT_NS=1 exec unshare -m --propagation private sh "$0" "$@"
fi
. "$SRC/tests/cli/lib.sh"
: "${PFI_AGENT:?}"
command -v curl >/dev/null || fail "curl is needed (scripts/bootstrap.sh test)"

SMALL=$T/small
mkdir "$SMALL"
mount -t tmpfs -o size=64k,mode=0755 pfi-test "$SMALL" || fail "cannot mount a tmpfs on $SMALL"
PID=
kill_daemons_on_exit 'umount "$SMALL" 2>/dev/null'
new_token "$T/token"
TOKEN=$(cat "$T/token")
HW=$T/hw.json
STATE=$SMALL/agent-state.json
SIM="sim:gpus=4,state=$HW"

start_agent() {
  start_daemon agent "$T/agent.log" "$T/port" "$PFI_AGENT" --backend "$SIM" --listen 127.0.0.1:0 --port-file "$T/port" \
    --token-file "$T/token" --state-file "$STATE" --interval 0.2 --log "$T/agent.log"
  PID=$DPID; URL=http://127.0.0.1:$DPORT
}
kill9_agent() { stop_daemon "$PID" KILL; PID=; }
put() { CODE=$(curl -s -o "$T/body" -w '%{http_code}' -X PUT -H "Authorization: Bearer $TOKEN" --data-binary "$1" "$URL/v1/caps"); }
expect_code() { [ "$CODE" = "$1" ] || { cat "$T/body" "$T/agent.log" >&2; fail "HTTP $CODE, expected $1 ($2)"; }; ok; }
fill() { dd if=/dev/zero of="$SMALL/fill" bs=4k count=64 2>/dev/null; ! (echo x >"$SMALL/probe") 2>/dev/null || fail "$SMALL is not full"; ok; }
unfill() { rm -f "$SMALL/fill" "$SMALL/probe"; }
is_cap() { [ "$(hw_cap "$1")" = "$2" ]; }

echo '{"gpus": 4, "caps_w": [700, 700, 700, 700]}' >"$HW"
start_agent
# ---- the issue's repro: a full disk, PUT 400 W ----
fill
put '{"lease_s":30,"controller":"ctl","generation":1,"gpus":[{"index":0,"cap_w":400}]}'
expect_code 503 "state file cannot be saved"
contains "$T/body" "no cap was changed"
contains "$T/body" "$STATE"
[ "$(hw_cap 0)" = "700" ] || fail "a refused PUT set GPU 0 to $(hw_cap 0)"; ok
contains "$T/agent.log" "error: cannot save the state file, so no cap is changed"
kill9_agent
start_agent
[ "$(hw_cap 0)" = "700" ] || fail "GPU 0 at $(hw_cap 0) after the restart"; ok

# ---- a lease set while there was room; the disk fills; a new PUT changes nothing ----
unfill
put '{"lease_s":2,"controller":"ctl","generation":2,"gpus":[{"index":0,"cap_w":400},{"index":1,"cap_w":450}]}'
expect_code 200 "room on the disk"
contains "$T/body" '"baseline_w":700'
fill
put '{"lease_s":30,"controller":"ctl","generation":3,"gpus":[{"index":0,"cap_w":300}]}'
expect_code 503 "full again"
[ "$(hw_cap 0)" = "400" ] && [ "$(hw_cap 1)" = "450" ] || fail "a refused PUT changed caps: $(hw_cap 0), $(hw_cap 1)"; ok
# kill -9, restart on the full disk: the lease ends, the real baselines come back
kill9_agent
start_agent
wait_for 30 "GPU 0 back at its baseline" 'is_cap 0 700'
wait_for 30 "GPU 1 back at its baseline" 'is_cap 1 700'
# with room again, the next lease records the real baseline (not 400 W)
unfill
put '{"lease_s":30,"controller":"ctl","generation":4,"gpus":[{"index":0,"cap_w":500}]}'
expect_code 200 "room again"
contains "$T/body" '"baseline_w":700'
stop_daemon "$PID" TERM; PID=
[ "$(hw_cap 0)" = "700" ] || fail "SIGTERM left GPU 0 at $(hw_cap 0)"; ok

# ---- pfi sweep's state file on a full disk: no cap is set ----
SHW=$T/sweep-hw.json
SSIM="sim:gpus=8,job=17:moe-ft-qwen30ba3b-x8@0-7,noise=0.003,state=$SHW"
fill
PFI_TIME_SCALE=100 expect_error 1 "no cap was changed" "$PFI" sweep --backend "$SSIM" --caps 500,400 --duration 30 --pause 0 \
  --no-agent --state-file "$SMALL/sweep-state" --out "$T/s1"
contains "$T/err" "$SMALL/sweep-state"
grep -q '"caps_w":\[700.0,700.0,700.0,700.0,700.0,700.0,700.0,700.0\]' "$SHW" || { cat "$SHW" >&2; fail "the sweep set a cap"; }; ok
[ ! -e "$T/s1/500W/run.json" ] || fail "the sweep ran"; ok
done_ok
