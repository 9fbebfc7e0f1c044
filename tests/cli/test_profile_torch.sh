#!/bin/sh
# test_profile_torch.sh — a profile at job start (ctl_profile.c) on a real
# training loop's step log: a tiny PyTorch loop (python/tests/tiny_train.py,
# CPU, one thread) writes its step log through python/pfi_steplog; a
# pfi-agent on simulated GPUs reads it as job "torch" (a job file names the
# log), pfi-controller profiles the job once its baseline is steady, and
# `pfi record` scrapes the agent throughout. Checked: the profile steps the
# GPUs' caps and hands them back (the simulator's state file), finishes
# with its points, each point's tokens/s within the loop's own per-step
# range (the step log's lines: a CPU loop's speed does not follow GPU caps,
# so the points are its speed, not a curve), its cost within 1% of the
# first hour; then `pfi ingest` of the profiled run gives its sweep row at
# the run's cap — the scrapes the profile capped left out, said in one line
# — where the same run without that rule (--no-cap-check: the whole
# training phase) mixes the capped scrapes in.
. "$SRC/tests/cli/lib.sh"
: "${PFI_AGENT:?}"
CTL=${PFI_CONTROLLER_BIN:-$(dirname "$PFI_AGENT")/pfi-controller}
PY=/usr/bin/python3
"$PY" -c 'import torch' 2>"$T/torch.err" || { cat "$T/torch.err" >&2; fail "python3-torch is needed (scripts/bootstrap.sh test)"; }
new_token "$T/atok" "$T/ctok"
mkdir -p "$T/run" "$T/jobs"
STEPS=$T/run/steps.jsonl
HW=$T/hw.json
printf '{"job_id": "torch", "gpus": [0, 1], "steplog": "%s"}\n' "$STEPS" >"$T/jobs/torch.json"
start_daemon agent "$T/agent.log" "$T/port" "$PFI_AGENT" \
  --backend "sim:gpus=2,job=j1:moe-ft-qwen30ba3b-x8@0-1,load=0,noise=0.002,state=$HW" \
  --listen 127.0.0.1:0 --port-file "$T/port" --token-file "$T/atok" --state-file "$T/agent-state.json" \
  --jobs-dir "$T/jobs" --interval 0.1 --log "$T/agent.log"
AURL=http://127.0.0.1:$DPORT
start_daemon record "$T/record.log" "" "$PFI" record --url "$AURL/metrics" --interval 0.2 --duration 600 -o "$T/run/telemetry.prom"
REC=$DPID
# the loop: bounded (at most 200,000 steps, a few minutes); stopped once the profile is done
start_daemon loop "$T/loop.log" "" env PFI_STEPLOG="$STEPS" PYTHONPATH="$SRC/python" PYTHONDONTWRITEBYTECODE=1 \
  "$PY" "$SRC/python/tests/tiny_train.py" "$T/loop.json" 200000
LOOP=$DPID
# no SLA tier: a CPU loop's speed swings with the machine's load (by half
# under stress), which a tier's floor would read as the curve: the schedule
# then stops at the first point ("tier floor"); without one it runs whole
cat >"$T/ctl.json" <<EOF
{"listen": "127.0.0.1:0", "token_file": "$T/ctok", "db": "$T/ctl.db", "control_period_s": 0.5,
 "baseline_window_s": 4, "baseline_settle_s": 1, "lease_s": 5,
 "profile_samples": 3, "profile_settle_periods": 1,
 "agents": [{"name": "n1", "url": "$AURL", "token_file": "$T/atok"}]}
EOF
start_daemon controller "$T/ctl.log" "$T/c.port" "$CTL" --config "$T/ctl.json" --port-file "$T/c.port"
URL=http://127.0.0.1:$DPORT
prof() {
  curl -s -m 5 "$URL/v1/status" | "$PY" -c '
import json, sys
j = next((x for x in json.load(sys.stdin)["jobs"] if x["job_id"] == "torch"), None)
v = None if j is None else j["profile"].get(sys.argv[1])
print("" if v is None else len(v) if isinstance(v, list) else v)' "$1"
}
wait_for 60 "the torch job's profile to start" '[ "$(prof state)" = running ]'
wait_for 30 "a profile's cap on the simulated GPUs" 'num "$(hw_cap 0)" "<" 700'
wait_for 60 "the torch job's profile to finish" '[ "$(prof state)" = done ]'
wait_for 30 "the caps back at 700 W" '[ "$(hw_cap 0)" = 700 ] && [ "$(hw_cap 1)" = 700 ]'
scrapes() { grep -c '^# pfi-scrape-time ' "$T/run/telemetry.prom" 2>/dev/null || echo 0; }
n0=$(scrapes)
grep -q "job torch: profile done" "$T/ctl.log" || fail "no profile line in the log"; ok
n=$(prof points); c=$(prof cost_ratio)
num "$n" ">=" 2 || fail "torch: $n profile points"; ok
num "$c" "<=" 0.01 || fail "torch: profile cost $c of its first hour (bound 0.01)"; ok
curl -s -m 5 "$URL/v1/status" >"$T/st"
# every point's throughput is the loop's: within its per-step range
"$PY" - "$T/st" "$STEPS" <<'PY' || fail "profile points vs the loop's step log"
import json, sys
j = next(x for x in json.load(open(sys.argv[1]))["jobs"] if x["job_id"] == "torch")
rates = []
for line in open(sys.argv[2]):
    try:
        s = json.loads(line)
    except ValueError:
        continue  # the line being written
    if s.get("step_time_s"):
        rates.append(s["tokens"] / s["step_time_s"])
lo, hi = min(rates[1:]), max(rates[1:])
bad = 0
for p in j["profile"]["points"]:
    ok = 0.9 * lo <= p["tokens_per_s"] <= 1.1 * hi and 0 < p["power_w"] < 2 * 700
    print("point: %.0f W, %.0f tokens/s (loop's steps %.0f..%.0f tokens/s)%s" % (p["power_w"], p["tokens_per_s"], lo, hi, "" if ok else "  <- outside"))
    bad += not ok
sys.exit(1 if bad else 0)
PY
ok
# some training at the cap after the profile, then the loop and the recording stop
wait_for 30 "40 scrapes at 700 W after the profile" 'num "$(scrapes)" ">=" $((n0 + 40))'
stop_daemon "$LOOP" TERM
stop_daemon "$REC" TERM
[ "$STOP_RC" -eq 0 ] || { cat "$T/record.log" >&2; fail "pfi record exited $STOP_RC"; }; ok

# the sweep row of the profiled run, at its cap
cat >"$T/run/run.json" <<JSON
{"group": "torch-tiny", "gpu_model": "H200", "gpus": 2, "cap_w": 700, "interval_s": 0.2,
 "telemetry": [{"path": "telemetry.prom", "format": "prometheus"}], "steplog": "steps.jsonl"}
JSON
"$PFI" ingest --agg mean "$T/run" >"$T/out" 2>"$T/err" || { cat "$T/err" >&2; fail "pfi ingest of the profiled run"; }; ok
contains "$T/err" "a profile or an event stepped the caps"
row() { csv_field "$T/out" group torch-tiny "$1"; }
p_cap=$(row power_w)
"$PFI" ingest --agg mean --no-cap-check "$T/run" >"$T/out" 2>"$T/err2" || { cat "$T/err2" >&2; fail "pfi ingest --no-cap-check"; }; ok
p_all=$(row power_w)
num "$p_cap" ">" "$p_all" || fail "the row at the cap ($p_cap W) is not above the one that mixes in the profile's scrapes ($p_all W)"; ok
echo "profile: $n points, cost $c; sweep row at 700 W: $p_cap W (the whole training phase: $p_all W)"
done_ok
