#!/bin/sh
# test_controller_profile.sh — profiles at job start (ctl_profile.c;
# docs/controller.md, "Profiles") end to end on the simulated backend, on a
# clock 20x faster: one agent, three simulated jobs (j1, j2 Flex 3, j3
# Flex 0). Once their baselines are steady the controller steps j1's and
# j2's caps through the schedule under its lease (the agent's GPUs show the
# profile's caps), measures the points, goes back to the ceiling; j3 is
# never capped. Checked: /v1/status jobs[].profile, the status page's
# column (headless Chromium), pfi_ctl_job_profile_points / _cost_ratio / _profiling, the cost
# (<= 1% of a job's first hour), the points stored (SQLite job_points); a
# restarted controller remembers them and does not profile again; at a 30%
# event, each profiled job's first-round target (safe-online from its known
# points) is within 2% of the oracle's allocation on the measured curves
# (an independent greedy here, in Python); at a 75% event the floors
# cannot fit: the SLA shortfall in kW on /v1/status, /metrics and the log.
. "$SRC/tests/cli/lib.sh"
: "${PFI_AGENT:?}"
CTL=${PFI_CONTROLLER_BIN:-$(dirname "$PFI_AGENT")/pfi-controller}
export PFI_TIME_SCALE=20 PFI_EPOCH=$(date +%s)
new_token "$T/atok" "$T/ctok"
CTOK=$(cat "$T/ctok")
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3

B="sim:gpus=12,job=j1:moe-ft-qwen30ba3b-x8@0-3,job=j2:dense-pt-llama70b-x8-compile@4-7,job=j3:moe-pt-gptoss20b-x8-ep1-nocompile@8-11,load=0,steplogs=$T,state=$T/hw.json"
HW=$T/hw.json
start_daemon agent "$T/a.log" "$T/a.port" "$PFI_AGENT" --backend "$B" --listen 127.0.0.1:0 \
  --port-file "$T/a.port" --token-file "$T/atok" --state-file "$T/a.state" --interval 1 --log "$T/a.log"
AP=$(cat "$T/a.port")
cat >"$T/ctl.json" <<EOF
{"listen": "127.0.0.1:0", "token_file": "$T/ctok", "db": "$T/ctl.db", "control_period_s": 5,
 "baseline_window_s": 30, "lease_s": 30, "ramp_s": 0, "ramp_down_s": 0, "default_tier": 3,
 "tiers": {"j3": 0},
 "agents": [{"name": "n1", "url": "http://127.0.0.1:$AP", "token_file": "$T/atok"}]}
EOF
NOW() { awk -v e="$PFI_EPOCH" -v w="$(date +%s.%N)" 'BEGIN{printf "%.3f", e + (w - e) * 20}'; }
ISO() { date -u -d "@$(printf '%.0f' "$1")" +%Y-%m-%dT%H:%M:%SZ; }
start_ctl() {
  start_daemon controller "$T/ctl.log" "$T/c.port" "$CTL" --config "$T/ctl.json" --port-file "$T/c.port"
  CP=$DPID; URL=http://127.0.0.1:$DPORT
}
req() { # METHOD PATH [BODY]
  CODE=$(curl -s -o "$T/body" -w '%{http_code}' -X "$1" -H "Authorization: Bearer $CTOK" ${3:+--data-binary "$3"} "$URL$2")
}
# a field of a job's profile on /v1/status: prof JOB FIELD
prof() {
  curl -s -m 5 "$URL/v1/status" | "$PY" -c '
import json, sys
s = json.load(sys.stdin)
j = next((x for x in s["jobs"] if x["job_id"] == sys.argv[1]), None)
v = None if j is None else j["profile"].get(sys.argv[2])
print("" if v is None else len(v) if isinstance(v, list) else v)' "$1" "$2"
}
jmetric() { curl -s -m 5 "$URL/metrics" | sed -n "s/^$1{hpc_job=\"$2\",tier=\"[0-9-]*\"} //p"; }

start_ctl
# ---- the profile runs: the agent's GPUs show its caps, j3's never ----
wait_for 60 "j1's profile to start" '[ "$(prof j1 state)" = running ]'
wait_for 30 "a profile's cap on j1's GPUs" 'num "$(hw_cap 0)" "<" 700 || num "$(hw_cap 1)" "<" 700'
[ "$(jmetric pfi_ctl_job_profiling j1)" = 1 ] || [ "$(prof j1 state)" = done ] || fail "pfi_ctl_job_profiling j1: $(jmetric pfi_ctl_job_profiling j1)"; ok
for j in j1 j2; do wait_for 90 "$j's profile to finish" "[ \"\$(prof $j state)\" = done ]"; done
wait_for 30 "j1's and j2's caps back at the ceiling" '[ "$(hw_cap 0)" = 700 ] && [ "$(hw_cap 4)" = 700 ]'
[ "$(hw_cap 8)" = 700 ] || fail "j3 (Flex 0) was capped: $(hw_cap 8) W"; ok
[ "$(prof j3 state)" = off ] && [ "$(prof j3 stopped)" = "Flex 0" ] || fail "j3: $(prof j3 state) ($(prof j3 stopped))"; ok
grep -q "job j3: profile started" "$T/ctl.log" && fail "j3 (Flex 0) was profiled"; ok
for j in j1 j2; do
  n=$(prof $j points); c=$(prof $j cost_ratio)
  num "$n" ">=" 2 || fail "$j: $n profile points"; ok
  num "$c" ">" 0 && num "$c" "<=" 0.01 || fail "$j: profile cost $c of its first hour (bound 0.01)"; ok
  [ "$(jmetric pfi_ctl_job_profile_points $j)" = "$n" ] || fail "$j: pfi_ctl_job_profile_points $(jmetric pfi_ctl_job_profile_points $j), status $n"; ok
  near "$(jmetric pfi_ctl_job_profile_cost_ratio $j)" "$c" 1e-6
  [ "$(jmetric pfi_ctl_job_profiling $j)" = 0 ] || fail "$j still profiling"; ok
  echo "$j: $n profile points, cost $c of its first hour ($(prof $j stopped))"
done
grep -q "job j1: profile done: " "$T/ctl.log" || fail "no profile line in the log"; ok
# the status page shows each job's profile (headless Chromium runs its script)
chromium_dom "$URL/"
contains "$T/dom" "<th>profile</th>"
grep -qE "<td>done( \(cost\)| \(tier floor\))?: [0-9]+ points, 0\.[0-9]+%</td>" "$T/dom" || { grep -o "<td>[a-z][^<]*points[^<]*</td>" "$T/dom" >&2; fail "no profile on the status page"; }; ok
contains "$T/dom" "<td>off (Flex 0)</td>"
# stored under the job's key
[ "$("$PY" -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("select count(*) from job_points where profiled=1").fetchone()[0])' "$T/ctl.db")" = 2 ] ||
  fail "job_points: not 2 profiled jobs stored"; ok

# ---- a restarted controller remembers: no second profile ----
stop_daemon $CP TERM
: >"$T/ctl.log"
start_ctl
wait_for 60 "j1's remembered profile" '[ "$(prof j1 stopped)" = remembered ] && [ "$(prof j2 stopped)" = remembered ]'
contains "$T/ctl.log" "remembered points of 2 jobs read"
lacks "$T/ctl.log" "profile started"
num "$(prof j1 known_points)" ">=" 2 || fail "j1: $(prof j1 known_points) known points after the restart"; ok

# ---- a 15% event (j3, Flex 0, keeps its power: j1 and j2 give 22%, within
# their measured range): the first round from the known points, near the oracle's ----
S=$(ISO $(awk -v n="$(NOW)" 'BEGIN{printf "%.0f", n + 5}'))
req POST /v1/events "{\"id\":\"e15\",\"start\":\"$S\",\"duration_s\":600,\"reduction_pct\":15}"
[ "$CODE" = 201 ] || fail "event: HTTP $CODE"; ok
wait_for 60 "safe-online's first targets" 'curl -s -m 5 "$URL/v1/status" | grep -q "\"first_target_w\":[0-9]"'
curl -s -m 5 "$URL/v1/status" >"$T/st"
"$PY" - "$T/st" <<'PY' || fail "first round vs oracle: see above"
import json, sys
s = json.load(open(sys.argv[1]))
on = {j["job_id"]: j for j in s["online"]["jobs"]}
jobs = {j["job_id"]: j for j in s["jobs"]}
names = ["j1", "j2"]
# each job's measured curve: its profile points and its baseline (the top),
# upper concave hull; the oracle spends the two jobs' first-round total
# from the lowest measured points up, steepest segment first
def hull(pts):
    pts = sorted(pts)
    h = []
    for p in pts:
        while len(h) >= 2 and (h[-1][1] - h[-2][1]) * (p[0] - h[-2][0]) <= (p[1] - h[-2][1]) * (h[-1][0] - h[-2][0]):
            h.pop()
        h.append(p)
    return h
segs, alloc = [], {}
for n in names:
    j = jobs[n]
    pts = [(p["power_w"], p["tokens_per_s"]) for p in j["profile"]["points"]]
    pts.append((j["baseline_w"], j["baseline_tokens_per_s"]))
    h = hull(pts)
    alloc[n] = h[0][0]
    segs += [((b[1] - a[1]) / (b[0] - a[0]), b[0] - a[0], n) for a, b in zip(h, h[1:])]
budget = sum(on[n]["first_target_w"] for n in names) - sum(alloc.values())
for slope, width, n in sorted(segs, reverse=True):
    take = min(width, max(budget, 0))
    alloc[n] += take
    budget -= take
bad = 0
for n in names:
    got, want = on[n]["first_target_w"], alloc[n]
    print("%s: first-round target %.1f W, oracle on its measured curve %.1f W (%+.2f%%)" % (n, got, want, 100 * (got / want - 1)))
    bad += abs(got / want - 1) > 0.02
sys.exit(1 if bad else 0)
PY
ok

# ---- a 75% event: the floors cannot fit: the shortfall said ----
req DELETE /v1/events/e15
S=$(ISO $(awk -v n="$(NOW)" 'BEGIN{printf "%.0f", n + 5}'))
req POST /v1/events "{\"id\":\"e75\",\"start\":\"$S\",\"duration_s\":600,\"reduction_pct\":75}"
[ "$CODE" = 201 ] || fail "event: HTTP $CODE"; ok
wait_for 60 "the SLA shortfall on /v1/status" 'curl -s -m 5 "$URL/v1/status" | grep -q "\"sla_shortfall_kw\":[0-9.]*[1-9]"'
num "$(metric "$URL" pfi_ctl_sla_shortfall_kw)" ">" 0 || fail "pfi_ctl_sla_shortfall_kw: $(metric "$URL" pfi_ctl_sla_shortfall_kw)"; ok
wait_for 10 "the shortfall's log line" 'grep -q "warning: SLA shortfall: the jobs. floors need" "$T/ctl.log"'
grep "SLA shortfall" "$T/ctl.log" | head -1
stop_daemon $CP TERM
done_ok
