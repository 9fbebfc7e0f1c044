#!/bin/sh
# bench_trigger_stale.sh — a trigger's latency on the 409 path (issue 43):
# the trigger's push to an agent that another writer took meanwhile (a PUT
# one above its generation_max) is refused as stale; since issue 43 that 409
# is an input of the next period, which decides the raise, stores it in its
# transaction and carries it (docs/controller.md, "Lease generations"). So
# such an agent's caps land at the next period, not within milliseconds.
# Measured here, one pfi-agent (4 simulated GPUs) and a pfi-controller at
# the default period (5 s; BENCH_STALE_PERIOD to change), BENCH_STALE_ROUNDS
# (5) rounds of: a trigger on the plain path, then an intruder's PUT and a
# trigger. Each trigger is deeper than the last; its latency is from just
# before the POST until the agent holds the controller's lease again with
# GPU 0 capped below its cap before the trigger (polled on the sim's state
# file and GET /v1/node). Prints both paths' p50 and max.
# Needs PFI_BIN, PFI_AGENT_BIN, PFI_CONTROLLER_BIN (scripts/run-bench.sh).
set -u
SRC=$(cd "$(dirname "$0")/.." && pwd)
PFI=${PFI_BIN:?}
export PFI SRC
. "$SRC/tests/cli/lib.sh"
AGENT=${PFI_AGENT_BIN:?}
CTL=${PFI_CONTROLLER_BIN:?}
PERIOD=${BENCH_STALE_PERIOD:-5}
ROUNDS=${BENCH_STALE_ROUNDS:-5}
new_token "$T/atok" "$T/ctok"
ATOK=$(cat "$T/atok")
CTOK=$(cat "$T/ctok")
kill_daemons_on_exit
HW=$T/hw.json
start_daemon agent "$T/a.log" "$T/a.port" "$AGENT" \
  --backend "sim:gpus=4,job=j1:moe-ft-qwen30ba3b-x8@0-3,load=0,steplogs=$T,state=$HW" \
  --listen 127.0.0.1:0 --port-file "$T/a.port" --token-file "$T/atok" --state-file "$T/a.state" \
  --interval 0.5 --log "$T/a.log"
AP=$DPORT
cat >"$T/ctl.json" <<EOF
{"listen": "127.0.0.1:0", "token_file": "$T/ctok", "db": "$T/ctl.db", "control_period_s": $PERIOD,
 "baseline_window_s": $((2 * PERIOD)), "ramp_s": 0, "ramp_down_s": 0, "tiers": {"j1": 3}, "profile": false,
 "agents": [{"name": "n1", "url": "http://127.0.0.1:$AP", "token_file": "$T/atok"}]}
EOF
start_daemon controller "$T/ctl.log" "$T/c.port" "$CTL" --config "$T/ctl.json" --port-file "$T/c.port"
URL=http://127.0.0.1:$DPORT
node() { curl -s -m 5 "http://127.0.0.1:$AP/v1/node"; }
gen_max() { node | sed -n 's/.*"generation_max":\([0-9]*\).*/\1/p'; }
holder_ctl() { node | grep -q '"controller":"pfi-controller'; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }
# the baseline window: the controller's status says the job is steady
wait_for 120 "the job's baseline" 'curl -s -m 5 "$URL/v1/status" | grep -Eq "\"baseline_w\": ?[0-9]"'

# one trigger: $1 its cut; prints the ms until GPU 0 is below $2 with the controller holding
trigger() {
  t0=$(now_ms)
  c=$(curl -s -o "$T/tr" -w '%{http_code}' -m 5 -X POST -H "Authorization: Bearer $CTOK" \
    --data-binary "{\"reduction_pct\":$1}" "$URL/v1/trigger")
  [ "$c" = 200 ] || [ "$c" = 201 ] || { cat "$T/tr" >&2; fail "trigger $1: HTTP $c"; }
  deadline=$((t0 + 60000))
  while :; do
    cap=$(hw_cap 0)
    if [ -n "$cap" ] && num "$cap" "<" "$2" && holder_ctl; then break; fi
    [ "$(now_ms)" -lt "$deadline" ] || { show_logs; fail "trigger $1: caps not landed in 60 s"; }
  done
  echo $(($(now_ms) - t0))
}

cut=10
: >"$T/plain"; : >"$T/stale"
for r in $(seq 1 "$ROUNDS"); do
  before=$(hw_cap 0)
  trigger $cut "$before" >>"$T/plain"
  cut=$((cut + 5))
  # another writer takes the agent: one above its generation_max, no caps
  G=$(($(gen_max) + 1))
  c=$(curl -s -o "$T/put" -w '%{http_code}' -m 5 -X PUT -H "Authorization: Bearer $ATOK" \
    --data-binary "{\"lease_s\":30,\"controller\":\"intruder\",\"generation\":$G,\"gpus\":[]}" \
    "http://127.0.0.1:$AP/v1/caps")
  [ "$c" = 200 ] || { cat "$T/put" >&2; fail "the intruder's PUT: HTTP $c"; }
  before=$(hw_cap 0)
  trigger $cut "$before" >>"$T/stale"
  cut=$((cut + 5))
done
stats() { sort -n "$1" | awk '{v[NR] = $1} END {printf "p50 %d ms, max %d ms (%d triggers)", v[int((NR + 1) / 2)], v[NR], NR}'; }
echo "bench trigger stale: control period $PERIOD s, one agent of 4 simulated GPUs"
echo "bench trigger stale: plain path (200): trigger -> caps landed $(stats "$T/plain")"
echo "bench trigger stale: 409 path (an intruder took the agent): trigger -> caps landed $(stats "$T/stale") (the next period carries the stored raise)"
[ -z "${BENCH_KEEP:-}" ] || cp "$T"/*.log "$BENCH_KEEP"/
