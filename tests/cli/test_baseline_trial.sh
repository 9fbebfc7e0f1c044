#!/bin/sh
# test_baseline_trial.sh — issue 30's trial, replayed on the simulator: two
# jobs start (15 s of loading at low power, then training), a 20% event
# inside the first minute, a second 20% event soon after the first, then a
# 4-step event (SIMPLE levels 1, 2, 3, 1 through the OpenADR webhook: 10, 20,
# 30, 10% cuts), all announced at the start. Each event's and each step's
# baseline must match the jobs' steady uncapped training draw (here the
# estimate, 0.97 x the ceiling: nothing steady was measured before the
# announcement, issue 41) — not their start-up, not the capped draw
# of the step before (in the trial a "20%" event cut 50% and the report
# said 0.043 kWh shed where about 0.18 kWh were) — so each cut against that
# draw is the one asked for within the tolerance, and the energy shed the
# report gives matches the integral of (steady draw - measured) within 3%.
# The steady draw is measured after it all, with every job uncapped and
# training: the mean of 40 readings of /v1/status (the jobs' power summed)
# over 40 s — what the baseline of each event should have been, whatever
# the jobs did before it. Profiles at job start are off here: the first
# steady window comes after the events, and a profile would cap the jobs
# while the steady draw is measured (test_controller_profile.sh has them).
. "$SRC/tests/cli/lib.sh"
: "${PFI_AGENT:?}"
CTL=${PFI_CONTROLLER_BIN:-$(dirname "$PFI_AGENT")/pfi-controller}
SCALE=10
export PFI_TIME_SCALE=$SCALE PFI_EPOCH=$(date +%s)
new_token "$T/atok" "$T/ctok"
CTOK=$(cat "$T/ctok")
kill_daemons_on_exit
NOW() { awk -v e="$PFI_EPOCH" -v w="$(date +%s.%N)" -v k=$SCALE 'BEGIN{printf "%.3f", e + (w - e) * k}'; }
ISO() { date -u -d "@$(printf '%.0f' "$1")" +%Y-%m-%dT%H:%M:%SZ; }
T0=$(NOW)
start_daemon agent "$T/a.log" "$T/a.port" "$PFI_AGENT" \
  --backend "sim:gpus=8,job=j1:moe-ft-qwen30ba3b-x8@0-3,job=j2:dense-pt-llama70b-x8-compile@4-7,load=15,noise=0.002,steplogs=$T,state=$T/hw.json" \
  --listen 127.0.0.1:0 --port-file "$T/a.port" --token-file "$T/atok" --state-file "$T/a.state" --interval 0.5 --log "$T/a.log"
AURL=http://127.0.0.1:$DPORT
cat >"$T/ctl.json" <<EOF
{"listen": "127.0.0.1:0", "token_file": "$T/ctok", "db": "$T/ctl.db", "control_period_s": 1,
 "ramp_s": 0, "ramp_down_s": 0, "lease_s": 60, "tolerance_pct": 2, "profile": false,
 "openadr": {"version": "3.1", "ven_name": "ven-a"},
 "agents": [{"name": "n1", "url": "$AURL", "token_file": "$T/atok"}]}
EOF
start_daemon controller "$T/ctl.log" "$T/c.port" "$CTL" --config "$T/ctl.json" --port-file "$T/c.port"
URL=http://127.0.0.1:$DPORT
post() { # JSON PATH: 2xx or fail
  c=$(curl -s -o "$T/body" -w '%{http_code}' -m 10 -X POST -H "Authorization: Bearer $CTOK" \
    -H 'Content-Type: application/json' --data-binary "$1" "$URL$2")
  case "$c" in 2*) ok ;; *) cat "$T/body" >&2; fail "POST $2: HTTP $c" ;; esac
}
ev_is() { curl -s -m 5 "$URL/v1/events/$1" | grep -q "\"status\":\"$2\""; }
wait_pfi() { # until the pfi clock passes T
  wait_for 120 "pfi clock at $1" "awk -v n=\"\$(NOW)\" -v t=$1 'BEGIN{exit !(n >= t)}'"
}

# ---- the schedule (pfi clock, from the agent's start) ----
A0=$(awk -v t="$T0" 'BEGIN{printf "%.0f", t + 45}')    # inside the first minute
B0=$((A0 + 120 + 20))                                  # 20 s after A ends
C0=$((B0 + 120 + 20))                                  # the 4-step event
post "{\"id\":\"ev-a\",\"start\":\"$(ISO $A0)\",\"duration_s\":120,\"reduction_pct\":20}" /v1/events
post "{\"id\":\"ev-b\",\"start\":\"$(ISO $B0)\",\"duration_s\":120,\"reduction_pct\":20}" /v1/events
post "{\"objectType\":\"EVENT\",\"id\":\"ev-c\",\"programID\":\"p1\",\"intervalPeriod\":{\"start\":\"$(ISO $C0)\",\"duration\":\"PT60S\"},\"payloadDescriptors\":[{\"payloadType\":\"SIMPLE\"}],\"intervals\":[{\"id\":0,\"payloads\":[{\"type\":\"SIMPLE\",\"values\":[1]}]},{\"id\":1,\"payloads\":[{\"type\":\"SIMPLE\",\"values\":[2]}]},{\"id\":2,\"payloads\":[{\"type\":\"SIMPLE\",\"values\":[3]}]},{\"id\":3,\"payloads\":[{\"type\":\"SIMPLE\",\"values\":[1]}]}]}" /openadr3/events

wait_for 120 "ev-a done" 'ev_is ev-a done'
wait_for 120 "ev-b done" 'ev_is ev-b done'
wait_for 120 "ev-c.3 done" 'ev_is ev-c.3 done'
# the steady uncapped training draw, after it all: settled for 20 s
wait_pfi $((C0 + 240 + 20))
: >"$T/steady"
for i in $(seq 40); do
  curl -s -m 5 "$URL/v1/status" | python3 -c "import json,sys; print(sum(j['power_w'] for j in json.load(sys.stdin)['jobs']))" >>"$T/steady" ||
    fail "no /v1/status"
  wait_pfi $((C0 + 240 + 20 + i))
done
STEADY=$(awk '{s += $1; n++} END {printf "%.3f", s / n}' "$T/steady")
echo "steady uncapped draw: $STEADY W (40 readings)"
num "$STEADY" ">" 3000 || fail "steady draw $STEADY W: the jobs are not training"; ok

# ---- every event and step: its baseline, its cut, its energy shed ----
check() { # ID CUT_PCT event|""
  curl -s -m 10 "$URL/v1/events/$1/report" >"$T/r.json"
  python3 - "$T/r.json" "$STEADY" "$2" "$3" "$1" <<'PY' || fail "event $1"
import json, sys
r = json.load(open(sys.argv[1])); steady = float(sys.argv[2]); cut = float(sys.argv[3]); ev = sys.argv[5]
base = r["baseline_kw"] * 1000; target = r["target_kw"] * 1000
bad = []
if abs(base - steady) > 0.02 * steady:
    bad.append("baseline %.0f W, steady draw %.0f W" % (base, steady))
real_cut = 100 * (1 - target / steady)
if abs(real_cut - cut) > 2:
    bad.append("target %.0f W is a %.1f%% cut of the steady draw, asked %g%%" % (target, real_cut, cut))
# every event here is announced at the start, before the jobs have a
# steady window: issue 41's rule takes the estimate (0.97 x the ceiling;
# the windows after an announcement are not looked at, so a job cannot
# inflate them), and the cut against the steady draw is still the one
# asked (above); a short window (the rule before) is no longer taken
if r["baseline_source"] != "estimate":
    bad.append("baseline source %s, not the estimate (announced before any steady window)"
               % r["baseline_source"])
# the verdict is the control loop's (one late period under load makes an
# event "not met"), not the baseline's: only never "nothing to shed"
if r["verdict"] in ("nothing to shed", "not applicable"):
    bad.append("verdict %s" % r["verdict"])
ach = r["achieved_reduction_pct"]
print("%s: baseline %.0f W (%s), cut %.1f%% of the steady draw (asked %g%%), achieved %.1f%%, verdict %s, shed %.4f kWh"
      % (ev, base, r["baseline_source"], real_cut, cut, ach, r["verdict"], r["energy_shed_kwh"]))
# the energy shed: the report's integral against the steady draw
tl = r["timeline"]
true_kwh = sum(0.5 * ((steady - 1000 * a["measured_kw"]) + (steady - 1000 * b["measured_kw"])) * (b["t_s"] - a["t_s"])
               for a, b in zip(tl, tl[1:])) / 3.6e6
got = r["energy_shed_kwh"]
print("  energy shed: report %.4f kWh, against the steady draw %.4f kWh (%+.1f%%)" % (got, true_kwh, 100 * (got / true_kwh - 1)))
if abs(got - true_kwh) > 0.03 * abs(true_kwh):
    bad.append("energy shed %.4f kWh, against the steady draw %.4f kWh" % (got, true_kwh))
if bad:
    print("FAIL: %s: %s" % (ev, "; ".join(bad)), file=sys.stderr)
    sys.exit(1)
PY
}
check ev-a 20 event
check ev-b 20 event
check ev-c.0 10 ""
check ev-c.1 20 ""
check ev-c.2 30 ""
check ev-c.3 10 ""
contains "$T/ctl.log" "event ev-a started: baseline"
lacks "$T/ctl.log" "nothing to shed"
done_ok
