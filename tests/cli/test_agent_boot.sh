#!/bin/sh
# test_agent_boot.sh — pfi-agent's start-up after a reboot and after a
# limit changed behind its back (issue 40 c). The state file records the
# boot it was written in (/proc/sys/kernel/random/boot_id; --boot-id-file
# stands in for it here). Checked:
#  - after a reboot (another boot id) the saved caps and the lease are
#    dropped: no pre-reboot baseline is written over the limit the boot set,
#    no lease cap is re-applied; the file is rewritten with this boot's id;
#    --restore-and-exit after a reboot restores nothing;
#  - in the same boot, without a live lease, a saved GPU whose limit is no
#    longer the cap pfi set is forgotten, not restored; one still at pfi's
#    cap is restored to its baseline; with a live lease the cap is re-applied;
#  - a state file without a boot id (written before issue 40) is read as
#    this boot's once, then carries the id;
#  - a boot id file that cannot be read is a warning, and start-up goes on.
# Each start is complete once the port file is written (the restore runs
# before the agent listens), so the limits are read then, not after a sleep.
. "$SRC/tests/cli/lib.sh"
: "${PFI_AGENT:?}"

HW=$T/hw.json
STATE=$T/agent-state.json
SIM="sim:name=t,gpus=4,state=$HW"
U0=GPU-5151a000-ccaf-4000-8000-000000000000
U2=GPU-5151a000-ccaf-4000-8000-000000000002
BOOT_A=0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0
BOOT_B=11111111-2222-4333-8444-555555555555
PID=

hw_set() { echo "{\"gpus\": 4, \"caps_w\": [$1]}" >"$HW"; }
boot() { echo "$1" >"$T/boot_id"; }
start_agent() { # extra options...
  rm -f "$T/agent.log"
  start_daemon agent "$T/agent.log" "$T/port" "$PFI_AGENT" --backend "$SIM" --listen 127.0.0.1:0 --port-file "$T/port" \
    --state-file "$STATE" --boot-id-file "$T/boot_id" --interval 0.2 --log "$T/agent.log" "$@"
  PID=$DPID
}
stop_agent() { stop_daemon "$PID" TERM; PID=; }
# state FILE_BOOT_ID LEASE: GPU 0 capped at 450 (baseline 700), GPU 2 at 380 (baseline 700)
state() {
  b=""; [ -z "$1" ] || b="\"boot_id\": \"$1\", "
  printf '{"format_version": 1, %s"generation_max": 5, "lease": %s, "gpus": [{"uuid": "%s", "baseline_w": 700, "cap_w": 450}, {"uuid": "%s", "baseline_w": 700, "cap_w": 380}]}\n' \
    "$b" "$2" "$U0" "$U2" >"$STATE"
}
live_lease() { echo "{\"controller\": \"ctl\", \"generation\": 5, \"expires_at\": $(($(date +%s) + 600))}"; }

# ---- a reboot with a live lease: the boot's limits stay, nothing is re-applied ----
boot "$BOOT_B"
state "$BOOT_A" "$(live_lease)"
hw_set "600, 700, 700, 700" # the boot's own configuration (nvidia-smi -pl in a unit, say)
start_agent
contains "$T/agent.log" "state file: written in another boot ($BOOT_A, now $BOOT_B): the node rebooted; 2 saved caps and the lease dropped"
[ "$(hw_cap 0)" = 600 ] || fail "GPU 0 at $(hw_cap 0) W after a reboot: the boot's 600 W was overwritten"; ok
[ "$(hw_cap 2)" = 700 ] || fail "GPU 2 at $(hw_cap 2) W after a reboot: the lease's 380 W was re-applied"; ok
grep -q "\"boot_id\": \"$BOOT_B\"" "$STATE" || { cat "$STATE" >&2; fail "the state file does not carry this boot's id"; }; ok
grep -q '"gpus": \[\]' "$STATE" && grep -q '"lease": null' "$STATE" || { cat "$STATE" >&2; fail "the saved caps or the lease were kept"; }; ok
lacks "$T/agent.log" "restored"
stop_agent

# ---- the same boot, no lease: changed since -> forgotten; still pfi's cap -> restored ----
boot "$BOOT_A"
state "$BOOT_A" null
hw_set "500, 700, 380, 700" # GPU 0 set to 500 W by an admin after pfi's 450; GPU 2 at pfi's 380
start_agent
contains "$T/agent.log" "GPU 0 $U0: its limit 500 W is not the cap pfi set (450 W): changed since by someone else; not restored to 700 W, forgotten"
[ "$(hw_cap 0)" = 500 ] || fail "GPU 0 at $(hw_cap 0) W: the admin's 500 W was overwritten"; ok
[ "$(hw_cap 2)" = 700 ] || fail "GPU 2 at $(hw_cap 2) W: pfi's own cap was not restored to its baseline"; ok
contains "$T/agent.log" "baselines restored on 1 GPU"
grep -q '"gpus": \[\]' "$STATE" || { cat "$STATE" >&2; fail "the forgotten GPU is still saved"; }; ok
stop_agent

# ---- the same boot, a live lease: the lease's caps are re-applied (a reset raised them) ----
state "$BOOT_A" "$(live_lease)"
hw_set "700, 700, 700, 700"
start_agent
contains "$T/agent.log" "still live"
[ "$(hw_cap 0)" = 450 ] && [ "$(hw_cap 2)" = 380 ] || fail "the live lease's caps were not re-applied: $(hw_cap 0), $(hw_cap 2)"; ok
stop_daemon "$PID" KILL; PID=

# ---- a state file without a boot id: this boot's, then rewritten with it ----
state "" "$(live_lease)"
start_agent
contains "$T/agent.log" "still live"
lacks "$T/agent.log" "another boot"
grep -q "\"boot_id\": \"$BOOT_A\"" "$STATE" || { cat "$STATE" >&2; fail "an older state file was not rewritten with the boot id"; }; ok
stop_daemon "$PID" KILL; PID=

# ---- --restore-and-exit after a reboot: nothing to restore ----
boot "$BOOT_B"
hw_set "600, 700, 380, 700"
expect_status 0 "$PFI_AGENT" --backend "$SIM" --state-file "$STATE" --boot-id-file "$T/boot_id" --restore-and-exit
contains "$T/err" "the node rebooted"
contains "$T/err" "nothing to restore in this boot"
[ "$(hw_cap 0)" = 600 ] && [ "$(hw_cap 2)" = 380 ] || fail "--restore-and-exit after a reboot changed a limit: $(hw_cap 0), $(hw_cap 2)"; ok

# ---- a boot id that cannot be read: a warning, and the agent starts as before ----
state "$BOOT_A" null
hw_set "450, 700, 380, 700"
rm -f "$T/boot_id"
start_agent
contains "$T/agent.log" "warning: $T/boot_id: No such file or directory: a reboot cannot be told from a restart"
[ "$(hw_cap 0)" = 700 ] && [ "$(hw_cap 2)" = 700 ] || fail "without a boot id the saved caps were not restored: $(hw_cap 0), $(hw_cap 2)"; ok
stop_agent
echo "not a boot id" >"$T/boot_id"
start_agent
contains "$T/agent.log" "not a boot id"
stop_agent
done_ok
