#!/bin/sh
# test_agent_faults.sh — pfi-agent at its point of contact with NVML (issue
# 27 (a); docs/agent.md, "Faults, baselines and ceilings"), on the NVML test
# double with its documented error codes (FAKE_NVML_FAULTS):
#  1. a GPU lost at open, after a crash with caps held: --restore-and-exit
#     restores the three healthy GPUs and exits 1 naming the lost one; the
#     agent starts anyway, marks it (pfi_gpu_up 0, state "lost"), keeps its
#     baseline, and restores it once it is found again (looked for every 30 s);
#     a GPU outside the process's cgroup (NO_PERMISSION at its handle) is
#     marked no_permission and blocks nothing;
#  2. a GPU lost after start: no stale samples on /metrics, a PUT that
#     changes only the others succeeds and lists it as skipped, the lease's
#     end restores the others and keeps its baseline in the state file;
#  3. an admin's limit (500 W) with a read that fails (temperature): the
#     baseline is the limit alone, restored as 500 W, never the 700 W default;
#  4. the ceiling: GPUs an admin limited to 400 W are never capped above it
#     (a PUT of 700 W is clamped, said so in the answer and the log);
#  5. drift: an admin lowering the limit below pfi's cap is adopted (and kept
#     after the lease); a limit raised while a lease holds is re-applied, and
#     after 3 re-applies within 60 s the GPU is reported contested;
#  6. persistence mode off: warned once;
#  7. --read-only: every PUT refused (403), no setter called, no state file;
#  8. MIG mode: the GPU is never capped (skipped, state "mig"), reported
#     (log, pfi_gpu_mig_enabled), its ceiling null so the controller counts
#     its draw as fixed;
#  9. a job file's device minors (the Slurm plugin's) mapped through
#     nvmlDeviceGetMinorNumber on a node whose minors are permuted against
#     NVML's indexes; a minor no GPU has is an error naming job and GPU;
# 10. quiet by default: 40 cap requests moving 8 GPUs in 20 s log at most
#     4 info lines (one coalesced line per 15 s).
# No elapsed time is asserted; every wait polls with a deadline.
. "$SRC/tests/cli/lib.sh"
: "${PFI_AGENT:?}" "${FAKE_NVML:?}"
command -v curl >/dev/null || fail "curl is needed (scripts/bootstrap.sh test)"
kill_daemons_on_exit "cp -r \"\$T\" /tmp/faults-keep 2>/dev/null"
new_token "$T/token"
TOKEN=$(cat "$T/token")
export PFI_NVML_LIBRARY=$FAKE_NVML FAKE_NVML_GPUS=4 FAKE_NVML_STATE=$T/nvml FAKE_NVML_FAULTS=$T/faults
: >"$T/faults"
U() { printf 'GPU-fa4e0000-0000-4000-8000-%012x' "$1"; }
STATE=$T/state.json
PID=

start_agent() { # NAME [options]
  n=$1; shift
  start_daemon "$n" "$T/$n.log" "$T/port" "$PFI_AGENT" --backend nvml --listen 127.0.0.1:0 --port-file "$T/port" \
    --token-file "$T/token" --state-file "$STATE" --interval 0.2 --log "$T/$n.log" "$@"
  PID=$DPID; URL=http://127.0.0.1:$DPORT; LOG=$T/$n.log
}
put() { # LEASE_S GENERATION GPUS-JSON -> $CODE, body in $T/body
  CODE=$(curl -s -m 30 -o "$T/body" -w '%{http_code}' -X PUT -H "Authorization: Bearer $TOKEN" \
    -H 'Content-Type: application/json' --data-binary "{\"lease_s\":$1,\"controller\":\"c\",\"generation\":$2,\"gpus\":[$3]}" "$URL/v1/caps")
}
# the device's limit of GPU i in W
limit() { sed -n "$(($1 + 1))p" "$T/nvml" | awk '{print $1 / 1000}'; }
# written beside and moved in whole: the fake NVML reads the file at every call
# and renames its own copy over it, so a write in place can be read half-done
# (a GPU at its default limit) or lost
set_limits() { printf '%s\n' "$@" | awk '{print $1 * 1000}' >"$T/nvml.new" && mv "$T/nvml.new" "$T/nvml"; }
up() { curl -s -m 5 "$URL/metrics" | grep "^pfi_gpu_up{gpu=\"$1\"" ; }
samples() { curl -s -m 5 "$URL/metrics" | grep -c "^pfi_gpu_power_watts{gpu=\"$1\""; }

# ---- 1. a GPU lost at open, after a crash with caps held ----
set_limits 700 700 700 700
start_agent a1
put 600 1 '{"index":0,"cap_w":300},{"index":1,"cap_w":300},{"index":2,"cap_w":300},{"index":3,"cap_w":300}'
[ "$CODE" = 200 ] || { cat "$T/body" >&2; fail "PUT 300 W: HTTP $CODE"; }; ok
[ -s "$STATE.baselines" ] || fail "no baselines file"; ok
grep -q '"limit_w": 700' "$STATE.baselines" || { cat "$STATE.baselines" >&2; fail "baselines file lacks 700 W"; }; ok
stop_daemon $PID KILL # a crash: caps held, the state file names them
echo "2 15 handle" >"$T/faults" # GPU 2: NVML_ERROR_GPU_IS_LOST at its handle lookup
expect_status 1 "$PFI_AGENT" --backend nvml --state-file "$STATE" --restore-and-exit
contains "$T/err" "not restored: $(U 2) (baseline 700 W)"
for g in 0 1 3; do [ "$(limit $g)" = 700 ] || fail "GPU $g left at $(limit $g) W by --restore-and-exit"; ok; done
[ "$(limit 2)" = 300 ] || fail "the lost GPU changed"; ok
grep -q "$(U 2)" "$STATE" || fail "the lost GPU's baseline was forgotten"; ok
# the agent starts anyway (it exited 1 before), marks GPU 2 lost
start_agent a2
contains "$LOG" "GPU 2 is unavailable (lost)"
wait_for 10 "GPU 2 marked lost" 'up 2 | grep -q "state=\"lost\"} 0"'
up 0 | grep -q 'state="ok"} 1' || fail "GPU 0 not up"; ok
[ "$(samples 2)" = 0 ] || fail "samples exported for the lost GPU"; ok
curl -s -m 5 "$URL/v1/node" | grep -q '"state":"lost"' || fail "/v1/node does not say lost"; ok
curl -s -m 5 "$URL/v1/control" | grep -q '\[null,null,null,null,"lost"\]' || fail "/v1/control: the lost GPU not null"; ok
# it comes back: restored with its saved baseline (looked for again within 30 s)
: >"$T/faults"
wait_for 75 "the lost GPU found again and restored" '[ "$(limit 2)" = 700 ]'
contains "$LOG" "GPU 2 $(U 2) is available again (was lost)"
wait_for 10 "the state file without GPU 2's saved cap" '! grep -q "$(U 2)" "$STATE"'
n=$(grep -c "Z pfi-agent: .*is not available now" "$LOG"); [ "$n" -le 1 ] || fail "the missing GPU logged $n times"; ok
stop_daemon $PID
# no permission (a GPU outside the job's cgroup): marked, blocks nothing
# and one whose handle lookup answers NOT_SUPPORTED (3)
printf '1 4 handle\n3 3 handle\n' >"$T/faults"
start_agent a3
contains "$LOG" "GPU 1 is unavailable (no_permission)"
contains "$LOG" "GPU 3 is unavailable (not_supported)"
wait_for 10 "GPU 1 marked no_permission" 'up 1 | grep -q "state=\"no_permission\"} 0"'
up 3 | grep -q 'state="not_supported"} 0' || fail "GPU 3 not marked not_supported"; ok
put 60 2 '{"index":0,"cap_w":450}'
[ "$CODE" = 200 ] || { cat "$T/body" >&2; fail "PUT beside a no-permission GPU: HTTP $CODE"; }; ok
grep -q '"skipped":\[{"index":1,' "$T/body" || { cat "$T/body" >&2; fail "GPU 1 not listed as skipped"; }; ok
[ "$(limit 0)" = 450 ] || fail "GPU 0 not capped"; ok
stop_daemon $PID
[ "$(limit 0)" = 700 ] || fail "GPU 0 not restored at exit"; ok
: >"$T/faults"

# ---- 2. a GPU lost after start ----
start_agent b
put 3 3 '{"index":0,"cap_w":300},{"index":1,"cap_w":300},{"index":2,"cap_w":300},{"index":3,"cap_w":300}'
[ "$CODE" = 200 ] || { cat "$T/body" >&2; fail "PUT: HTTP $CODE"; }; ok
echo "1 15 all" >"$T/faults"
wait_for 10 "GPU 1 marked lost after start" 'up 1 | grep -q "state=\"lost\"} 0"'
[ "$(samples 1)" = 0 ] || fail "a stale sample of the lost GPU is exported"; ok
put 3 3 '{"index":0,"cap_w":350},{"index":2,"cap_w":350},{"index":3,"cap_w":350}'
[ "$CODE" = 200 ] || { cat "$T/body" >&2; fail "a PUT of the other GPUs: HTTP $CODE"; }; ok
grep -q '"skipped":\[{"index":1,"uuid":"'"$(U 1)"'","state":"lost"}\]' "$T/body" || { cat "$T/body" >&2; fail "no skipped GPU 1"; }; ok
for g in 0 2 3; do [ "$(limit $g)" = 350 ] || fail "GPU $g at $(limit $g) W"; ok; done
wait_for 30 "the lease's end to restore the available GPUs" '[ "$(limit 0)" = 700 ] && [ "$(limit 2)" = 700 ] && [ "$(limit 3)" = 700 ]'
[ "$(limit 1)" = 300 ] || fail "the lost GPU changed"; ok
grep -q "$(U 1)" "$STATE" || { cat "$STATE" >&2; fail "the lost GPU's baseline was dropped from the state file"; }; ok
lacks "$LOG" "forgetting its baseline"
stop_daemon $PID
: >"$T/faults"
expect_status 0 "$PFI_AGENT" --backend nvml --state-file "$STATE" --restore-and-exit
[ "$(limit 1)" = 700 ] || fail "GPU 1 not restored once back"; ok

# ---- 3. an admin's 500 W with a read that fails: restored as 500 W ----
rm -f "$STATE" "$STATE.baselines"
set_limits 500 700 700 700
echo "0 999 nvmlDeviceGetTemperature" >"$T/faults"
start_agent c
put 2 4 '{"index":0,"cap_w":300}'
[ "$CODE" = 200 ] || { cat "$T/body" >&2; fail "PUT: HTTP $CODE"; }; ok
[ "$(limit 0)" = 300 ] || fail "GPU 0 not capped"; ok
wait_for 30 "the lease's end" '[ "$(limit 0)" != 300 ]'
[ "$(limit 0)" = 500 ] || fail "the admin's 500 W became $(limit 0) W"; ok
stop_daemon $PID
: >"$T/faults"
# a corrupt state file does not lose it either (STATE.baselines keeps it)
start_agent c2
put 600 5 '{"index":0,"cap_w":300}'
stop_daemon $PID KILL
echo '{"format_version": 1, "gpus": [{"uuid": ' >"$STATE"
expect_status 0 "$PFI_AGENT" --backend nvml --state-file "$STATE" --restore-and-exit
contains "$T/err" "its baseline 500 W from $STATE.baselines"
[ "$(limit 0)" = 500 ] || fail "a corrupt state file turned the admin's 500 W into $(limit 0) W"; ok

# ---- 4. the ceiling: never above the admin's 400 W ----
rm -f "$STATE" "$STATE.baselines" "$STATE.corrupt"
set_limits 400 400 400 400
start_agent d
curl -s -m 5 "$URL/v1/control" | grep -q '\[200,700,400,400\]' || fail "/v1/control lacks the 400 W ceiling"; ok
put 60 6 '{"index":0,"cap_w":700},{"index":1,"cap_w":529},{"index":2,"cap_w":300}'
[ "$CODE" = 200 ] || { cat "$T/body" >&2; fail "PUT: HTTP $CODE"; }; ok
grep -q '"clamped":\[{"index":0,"uuid":"'"$(U 0)"'","requested_w":700.0,"cap_w":400.0},{"index":1' "$T/body" || { cat "$T/body" >&2; fail "no clamped list"; }; ok
for g in 0 1 3; do [ "$(limit $g)" = 400 ] || fail "GPU $g at $(limit $g) W, above its admin's 400 W"; ok; done
[ "$(limit 2)" = 300 ] || fail "GPU 2 not capped"; ok
contains "$LOG" "caps clamped to their ceiling"
curl -s -m 5 "$URL/metrics" | grep -q '^pfi_gpu_power_cap_ceiling_watts{gpu="2",.*} 400$' || fail "GPU 2's ceiling not its baseline"; ok

# ---- 5. drift ----
# lowered by an admin below pfi's 300 W: adopted, kept after the lease
set_limits 400 400 250 400
wait_for 10 "the lowered limit adopted" 'curl -s -m 5 "$URL/metrics" | grep -q "^pfi_gpu_cap_drift_total{kind=\"lowered\",.*} 1$"'
contains "$LOG" "limit lowered out of band to 250 W"
curl -s -m 5 "$URL/v1/node" | grep -q '"ceiling_w":250' || fail "the ceiling is not the admin's 250 W"; ok
# raised while the lease holds (a reset to the default): re-applied; 3 times in 60 s: contested
put 60 6 '{"index":3,"cap_w":300}'
[ "$CODE" = 200 ] || { cat "$T/body" >&2; fail "PUT: HTTP $CODE"; }; ok
for k in 1 2 3; do
  set_limits 400 400 250 700
  wait_for 10 "re-apply $k" '[ "$(limit 3)" = 300 ]'
done
curl -s -m 5 "$URL/metrics" | grep -q '^pfi_gpu_cap_drift_total{kind="raised",.*} 3$' || fail "3 re-applies not counted"; ok
set_limits 400 400 250 700
wait_for 10 "GPU 3 contested" 'curl -s -m 5 "$URL/metrics" | grep -q "^pfi_gpu_cap_contested{gpu=\"3\",.*} 1$"'
contains "$LOG" "contested"
[ "$(limit 3)" = 700 ] || fail "a contested GPU was set again"; ok
[ "$(grep -c "limit raised out of band" "$LOG")" = 1 ] || fail "each re-apply logged"; ok
stop_daemon $PID
[ "$(limit 2)" = 250 ] || fail "the admin's lowered 250 W was raised back to $(limit 2) W"; ok

# ---- 6. persistence mode off: warned once ----
rm -f "$STATE" "$STATE.baselines"
set_limits 700 700 700 700
export FAKE_NVML_PERSISTENCE=0
start_agent e
contains "$LOG" "GPU 0 $(U 0): persistence mode is off"
stop_daemon $PID
unset FAKE_NVML_PERSISTENCE

# ---- 8. MIG: a MIG-enabled GPU is left at its baseline, reported, its draw fixed ----
rm -f "$STATE" "$STATE.baselines"
export FAKE_NVML_MIG=1
start_agent g
contains "$LOG" "GPU 1 $(U 1): MIG mode is enabled: left at its baseline"
put 60 8 '{"index":0,"cap_w":400},{"index":1,"cap_w":400}'
[ "$CODE" = 200 ] || { cat "$T/body" >&2; fail "PUT beside a MIG GPU: HTTP $CODE"; }; ok
grep -q '"skipped":\[{"index":1,"uuid":"'"$(U 1)"'","state":"mig"}\]' "$T/body" || { cat "$T/body" >&2; fail "the MIG GPU not skipped"; }; ok
[ "$(limit 1)" = 700 ] && [ "$(limit 0)" = 400 ] || fail "limits $(limit 0) / $(limit 1) W"; ok
curl -s -m 5 "$URL/metrics" | grep -q '^pfi_gpu_mig_enabled{gpu="1",.*} 1$' || fail "pfi_gpu_mig_enabled"; ok
curl -s -m 5 "$URL/v1/control" | grep -q '\[200,700,700,null,"mig"\]' || fail "/v1/control: the MIG GPU's ceiling not null"; ok
stop_daemon $PID
unset FAKE_NVML_MIG

# ---- 9. minors: a job file's device minors mapped with nvmlDeviceGetMinorNumber ----
rm -f "$STATE" "$STATE.baselines"
export FAKE_NVML_MINORS=3,2,1,0
mkdir -p "$T/jobs"
printf '{"job_id": "jm", "minors": [3, 2], "tier": 2}\n' >"$T/jobs/jm.json"
printf '{"job_id": "jx", "minors": [7]}\n' >"$T/jobs/jx.json"
chmod 644 "$T/jobs/"*.json
start_agent h --jobs-dir "$T/jobs"
wait_for 15 "job jm mapped" 'curl -s -m 5 "$URL/v1/node" | grep -q "\"job_id\":\"jm\""'
curl -s -m 5 "$URL/v1/node" | /usr/bin/python3 -c '
import json, sys
n = json.load(sys.stdin)
got = sorted(g["index"] for g in n["gpus"] if g["job_id"] == "jm")
assert got == [0, 1], got  # minors 3 and 2 are NVML GPUs 0 and 1
assert [g["minor"] for g in n["gpus"]] == [3, 2, 1, 0]' || fail "minors mapped to the wrong GPUs"
ok
wait_for 15 "the unknown minor named" 'grep -q "job jx: GPU with minor number 7 is not one GPU of this node" "$LOG"'
stop_daemon $PID
unset FAKE_NVML_MINORS

# ---- 10. quiet by default: a steady event on an 8-GPU node ----
# a cap request every 0.5 s for 20 s, each moving all 8 caps (a controller
# tracking its target): at info, a handful of lines, not one per GPU per
# request (320 before); --log-level debug has each GPU's change
rm -f "$STATE" "$STATE.baselines"
export FAKE_NVML_GPUS=8
set_limits 700 700 700 700 700 700 700 700
start_agent q
n0=$(wc -l <"$LOG")
end=$(( $(date +%s) + 20 )); k=0
while [ "$(date +%s)" -lt "$end" ]; do
  c=$(( 400 + (k % 2) * 10 )); g=
  for i in 0 1 2 3 4 5 6 7; do g="$g${g:+,}{\"index\":$i,\"cap_w\":$c}"; done
  put 60 9 "$g"; [ "$CODE" = 200 ] || { cat "$T/body" >&2; fail "PUT $k: HTTP $CODE"; }
  k=$((k + 1)); sleep 0.5
done
n=$(( $(wc -l <"$LOG") - n0 ))
echo "steady caps: $k requests x 8 GPUs in 20 s, $n info lines"
[ "$k" -ge 10 ] && [ "$n" -le 4 ] || { tail -n 20 "$LOG" >&2; fail "$n info lines for $k requests in 20 s (at most 4: 5 a minute)"; }; ok
grep -q "caps: [0-9]* requests set [0-9]* GPU caps, 400..410 W" "$LOG" || { tail "$LOG" >&2; fail "no coalesced caps line"; }; ok
stop_daemon $PID
expect_error 2 "--log-level: 'loud' is not error, warning, info or debug" "$PFI_AGENT" --backend nvml --log-level loud
unset FAKE_NVML_GPUS
export FAKE_NVML_GPUS=4
set_limits 700 700 700 700

# ---- 7. --read-only ----
rm -f "$STATE" "$STATE.baselines"
export FAKE_NVML_SETTER_LOG=$T/setters
start_agent f --read-only
put 60 7 '{"index":0,"cap_w":300}'
[ "$CODE" = 403 ] || fail "PUT on a read-only agent: HTTP $CODE"; ok
curl -s -m 5 "$URL/metrics" | grep -q '^pfi_gpu_up{gpu="3",.*state="ok"} 1$' || fail "a read-only agent does not sample"; ok
curl -s -m 5 "$URL/v1/control" | grep -q fast_trigger_port && fail "fast trigger datagrams on in read-only mode"; ok
stop_daemon $PID
[ ! -e "$T/setters" ] || { cat "$T/setters" >&2; fail "a read-only agent called a setter"; }; ok
[ ! -e "$STATE" ] && [ ! -e "$STATE.baselines" ] || fail "a read-only agent wrote a state file"; ok
done_ok
