#!/bin/sh
# test_agent_state.sh — pfi-agent and a bad state file (issue 14, items 2
# and 10): a truncated or corrupt file no longer stops the agent while caps
# stay as they are: it starts, puts every GPU back to its device default and
# warns naming the file; a baseline outside the device's range is replaced
# by the default at load (no retry storm); a restore the device refuses is
# retried with a back-off (log lines counted over a bounded period);
# --restore-and-exit restores baselines (an admin's own limits on GPUs the
# agent never changed are kept) or, with a corrupt file, device defaults.
. "$SRC/tests/cli/lib.sh"
: "${PFI_AGENT:?}"

HW=$T/hw.json
STATE=$T/agent-state.json
SIM="sim:name=t,gpus=4,state=$HW"
U0=GPU-5151a000-ccaf-4000-8000-000000000000
U2=GPU-5151a000-ccaf-4000-8000-000000000002
PID=

hw_set() { echo "{\"gpus\": 4, \"caps_w\": [$1]}" >"$HW"; }
start_agent() { # extra options...
  rm -f "$T/agent.log" # each agent's log on its own (lines are counted)
  start_daemon agent "$T/agent.log" "$T/port" "$PFI_AGENT" --listen 127.0.0.1:0 --port-file "$T/port" --state-file "$STATE" \
    --interval 0.2 --log "$T/agent.log" "$@"
  PID=$DPID
}
stop_agent() { stop_daemon "$PID" TERM; PID=; }
is_cap() { [ "$(hw_cap "$1")" = "$2" ]; }

# ---- a truncated state file: the agent starts, device defaults, a warning naming the file ----
hw_set "450, 700, 380, 500"
printf '{"format_version": 1, "generation_max": 7, "lease": null, "gpus": [{"uuid": "%s", "baseline_w": 6' "$U0" >"$STATE"
start_agent --backend "$SIM"
wait_for 30 "GPU 0 back at its default" 'is_cap 0 700'
wait_for 30 "GPU 2 back at its default" 'is_cap 2 700'
wait_for 30 "GPU 3 back at its default" 'is_cap 3 700'
contains "$T/agent.log" "warning: state file $STATE is unreadable or corrupt"
contains "$T/agent.log" "device default"
[ -s "$STATE.corrupt" ] || fail "the corrupt file was not kept"; ok
grep -q '"gpus": \[\]' "$STATE" || { cat "$STATE" >&2; fail "the state file was not rewritten"; }; ok
stop_agent

# ---- not JSON at all (e.g. zeros after a crash): the same ----
hw_set "450, 700, 700, 700"
head -c 300 /dev/zero >"$STATE"
start_agent --backend "$SIM"
wait_for 30 "GPU 0 back at its default" 'is_cap 0 700'
contains "$T/agent.log" "$STATE is unreadable or corrupt"
stop_agent

# ---- a baseline outside the device's range: the default, at load, once ----
hw_set "450, 700, 700, 700"
printf '{"format_version": 1, "generation_max": 3, "lease": null, "gpus": [{"uuid": "%s", "baseline_w": 9999, "cap_w": 450}]}\n' "$U0" >"$STATE"
start_agent --backend "$SIM"
wait_for 30 "GPU 0 restored to its default" 'is_cap 0 700'
contains "$T/agent.log" "$STATE: GPU 0 $U0: baseline_w 9999 W is outside the device's 200..700 W; using its default limit 700 W"
sleep 1.5 # a bounded period in which a retry storm would log about 30 lines
n=$(grep -c 'failed' "$T/agent.log")
[ "$n" -eq 0 ] || { cat "$T/agent.log" >&2; fail "$n failed restores logged"; }; ok
grep -q '"generation_max": 3' "$STATE" || fail "generation_max lost"; ok
stop_agent

# ---- a restore the device refuses: retried with a back-off, logged once ----
export PFI_NVML_LIBRARY=$FAKE_NVML FAKE_NVML_GPUS=2 FAKE_NVML_STATE=$T/nvml FAKE_NVML_NO_PERMISSION=1 \
  FAKE_NVML_SETTER_LOG=$T/setters
printf '450000\n700000\n' >"$T/nvml"
printf '{"format_version": 1, "generation_max": 1, "lease": null, "gpus": [{"uuid": "GPU-fa4e0000-0000-4000-8000-000000000000", "baseline_w": 700, "cap_w": 450}]}\n' >"$STATE"
start_agent --backend nvml
has_failed() { grep -q 'restoring 700 W failed' "$T/agent.log"; }
wait_for 30 "a failed restore" has_failed
n0=$(grep -c nvmlDeviceSetPowerManagementLimit "$T/setters")
sleep 3 # count the retries over a bounded period: every 50 ms would be 60
n=$(( $(grep -c nvmlDeviceSetPowerManagementLimit "$T/setters") - n0 ))
echo "restores tried in 3 s: $n"
[ "$n" -ge 2 ] && [ "$n" -le 8 ] || { cat "$T/agent.log" >&2; fail "$n restores tried in 3 s (expected a back-off: 2..8)"; }; ok
# only a change is logged (docs/agent.md): one line, not one per retry
[ "$(grep -c 'Z pfi-agent: error: GPU 0: restoring 700 W failed' "$T/agent.log")" = 1 ] || { cat "$T/agent.log" >&2; fail "a failed restore logged more than once"; }; ok
[ "$(head -1 "$T/nvml")" = "450000" ] || fail "the refused restore changed the limit"; ok
grep -q '"baseline_w": 700' "$STATE" || fail "the baseline was forgotten while the restore fails"; ok
stop_agent
unset PFI_NVML_LIBRARY FAKE_NVML_GPUS FAKE_NVML_STATE FAKE_NVML_NO_PERMISSION FAKE_NVML_SETTER_LOG

# ---- --restore-and-exit ----
# a live lease holds GPUs 0 and 2; GPU 3 carries an admin's own limit (not in the file)
hw_set "400, 700, 350, 500"
printf '{"format_version": 1, "generation_max": 9, "lease": {"controller": "ctl", "generation": 9, "expires_at": 9e9},
 "gpus": [{"uuid": "%s", "baseline_w": 650, "cap_w": 400}, {"uuid": "%s", "baseline_w": 700, "cap_w": 350}]}\n' "$U0" "$U2" >"$STATE"
expect_status 0 "$PFI_AGENT" --backend "$SIM" --state-file "$STATE" --restore-and-exit
[ "$(hw_cap 0)" = "650" ] && [ "$(hw_cap 2)" = "700" ] || fail "not restored: $(hw_cap 0), $(hw_cap 2)"; ok
[ "$(hw_cap 3)" = "500" ] || fail "an admin's own limit was changed: $(hw_cap 3)"; ok
contains "$T/err" "ending the lease of controller ctl generation 9"
contains "$T/err" "every GPU is at its baseline"
grep -q '"gpus": \[\]' "$STATE" && grep -q '"lease": null' "$STATE" || { cat "$STATE" >&2; fail "state not cleared"; }; ok
grep -q '"generation_max": 9' "$STATE" || fail "generation_max lost"; ok
# again: nothing left to do
expect_status 0 "$PFI_AGENT" --backend "$SIM" --state-file "$STATE" --restore-and-exit
[ "$(hw_cap 0)" = "650" ] || fail "a second run changed GPU 0"; ok
# no state file: nothing is changed
rm -f "$STATE"
expect_status 0 "$PFI_AGENT" --backend "$SIM" --state-file "$STATE" --restore-and-exit
contains "$T/err" "nothing to restore"
[ "$(hw_cap 3)" = "500" ] || fail "no state file, yet GPU 3 changed"; ok
# a corrupt file: every GPU to its device default
printf '{"format_version": 1, "gpus": [' >"$STATE"
expect_status 0 "$PFI_AGENT" --backend "$SIM" --state-file "$STATE" --restore-and-exit
contains "$T/err" "$STATE is unreadable or corrupt"
for g in 0 1 2 3; do [ "$(hw_cap $g)" = "700" ] || fail "GPU $g at $(hw_cap $g), not its default"; ok; done
# the device refuses: exit 1, the file still lists the GPU
printf '450000\n700000\n' >"$T/nvml"
printf '{"format_version": 1, "generation_max": 1, "lease": null, "gpus": [{"uuid": "GPU-fa4e0000-0000-4000-8000-000000000000", "baseline_w": 700, "cap_w": 450}]}\n' >"$STATE"
PFI_NVML_LIBRARY=$FAKE_NVML FAKE_NVML_GPUS=2 FAKE_NVML_STATE=$T/nvml FAKE_NVML_NO_PERMISSION=1 \
  expect_status 1 "$PFI_AGENT" --backend nvml --state-file "$STATE" --restore-and-exit
contains "$T/err" "not restored: GPU-fa4e0000-0000-4000-8000-000000000000 (baseline 700 W)"
grep -q '"baseline_w": 700' "$STATE" || fail "the baseline was forgotten"; ok
PFI_NVML_LIBRARY=$FAKE_NVML FAKE_NVML_GPUS=2 FAKE_NVML_STATE=$T/nvml \
  expect_status 0 "$PFI_AGENT" --backend nvml --state-file "$STATE" --restore-and-exit
[ "$(head -1 "$T/nvml")" = "700000" ] || fail "NVML limit not restored"; ok
expect_status 0 "$PFI_AGENT" --help
contains "$T/out" "--restore-and-exit"
done_ok
