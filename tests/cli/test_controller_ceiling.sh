#!/bin/sh
# test_controller_ceiling.sh — a grid event never raises a GPU above the
# limit it had before pfi touched it (issue 27 item 4; docs/agent.md,
# "Faults, baselines, ceilings and drift"). Four simulated GPUs that their
# admin limited to 400 W (the simulated hardware's state file), a Flex 0
# job on GPUs 0-1 and a Flex 3 job on GPUs 2-3. Reproduced before the fix:
# a 10% event set the Flex 0 job's GPUs to 700 W for the whole event, an
# event whose target is above the draw set every GPU to 700 W, and a 5%
# trigger set 529 W until the next period. Here, through a 10% event, a
# trigger and a target above the draw: no GPU's limit above 400 W in any
# sample, and no cap the controller sent was clamped by the agent (the
# controller's own plans stay under the ceiling it was told).
# Real time, a 1 s control period.
. "$SRC/tests/cli/lib.sh"
: "${PFI_AGENT:?}"
CTL=${PFI_CONTROLLER_BIN:-$(dirname "$PFI_AGENT")/pfi-controller}
new_token "$T/atok" "$T/ctok"
CTOK=$(cat "$T/ctok")
HW=$T/hw.json
printf '{"gpus": 4, "caps_w": [400, 400, 400, 400]}\n' >"$HW"
start_daemon agent "$T/a.log" "$T/a.port" "$PFI_AGENT" \
  --backend "sim:gpus=4,job=j0:dense-pt-llama70b-x8-compile@0-1,job=j1:moe-ft-qwen30ba3b-x8@2-3,load=0,state=$HW" \
  --listen 127.0.0.1:0 --port-file "$T/a.port" --token-file "$T/atok" --state-file "$T/a.state" \
  --interval 0.5 --log "$T/a.log"
PA=$DPORT
cat >"$T/ctl.json" <<EOF
{"listen": "127.0.0.1:0", "token_file": "$T/ctok", "db": "$T/ctl.db", "control_period_s": 1,
 "baseline_window_s": 3, "lease_s": 30, "tiers": {"j0": 0, "j1": 3},
 "agents": [{"name": "n1", "url": "http://127.0.0.1:$PA", "token_file": "$T/atok"}]}
EOF
start_daemon controller "$T/ctl.log" "$T/c.port" "$CTL" --config "$T/ctl.json" --port-file "$T/c.port"
URL=http://127.0.0.1:$DPORT
wait_counter 30 "$URL" pfi_ctl_cycles_total 4 # the baseline window
curl -s -m 5 "http://127.0.0.1:$PA/v1/control" | grep -q '\[200,700,400,400\]' || fail "the agent does not report the 400 W ceiling"; ok

# the highest limit seen on any GPU, polled while $1 seconds pass
MAX=0
watch_caps() {
  end=$(( $(date +%s) + $1 ))
  while [ "$(date +%s)" -lt "$end" ]; do
    for g in 0 1 2 3; do c=$(hw_cap $g); num "$c" ">" "$MAX" && MAX=$c; done
    sleep 0.1
  done
}
event() { # ID REDUCTION_PCT
  S=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  [ "$(curl -s -m 10 -o "$T/body" -w '%{http_code}' -X POST -H "Authorization: Bearer $CTOK" \
    --data-binary "{\"id\":\"$1\",\"start\":\"$S\",\"duration_s\":8,\"reduction_pct\":$2,\"ramp_s\":0}" "$URL/v1/events")" = 201 ] \
    || { cat "$T/body" >&2; fail "POST /v1/events $1"; }
  ok
}

# a 10% event: the Flex 0 job keeps its 400 W, the other is cut
event ev10 10
wait_for 20 "the Flex 3 job capped" 'num "$(hw_cap 2)" "<" 400'
watch_caps 4
# a 5% trigger on top of it
[ "$(curl -s -m 10 -o "$T/body" -w '%{http_code}' -X POST -H "Authorization: Bearer $CTOK" \
  --data-binary '{"reduction_pct": 5, "id": "trig5", "duration_s": 3}' "$URL/v1/trigger")" = 201 ] || { cat "$T/body" >&2; fail "POST /v1/trigger"; }
ok
watch_caps 3
wait_for 30 "ev10 to end" 'curl -s -m 5 "$URL/v1/events/ev10" | grep -q "\"status\":\"done\""'
# a target above the draw (a 1% cut of a baseline the jobs no longer reach)
event ev1 1
watch_caps 5
echo "highest limit seen on any GPU through both events and the trigger: $MAX W"
num "$MAX" "<=" 400 || fail "a GPU went to $MAX W, above its admin's 400 W"; ok
grep "clamped\|W (controller" "$T/a.log" | tail -20 >&2
lacks "$T/a.log" "clamped to their ceiling"
lacks "$T/a.log" "-> 7"
done_ok
