#!/bin/sh
# test_offer.sh — the offer (issue 44): a controller over one agent with two
# simulated jobs computes what the site can shed at 0.5..10% cost, on every
# surface: GET /v1/offer (offers non-decreasing in cost, within the floors
# point; each job's part), "offer" in /v1/status, the gauges on /metrics
# (promtool accepts them), `pfi offer` as a table, CSV and JSON. Before the
# jobs' profiles nothing is measured (the proportional bound: the 5% offer
# is 5% of the baselines); after them the offer is backed by measured points.
# During a trigger's event the offer is what remains. A bad "offer" key is a
# one-line error naming it. A limit set out of band below the plan's cap
# (a BMC's) is said: the offer counts the job at it and the event's report
# names it (clamped_jobs).
. "$SRC/tests/cli/lib.sh"
: "${PFI_AGENT:?}"
CTL=${PFI_CONTROLLER_BIN:-$(dirname "$PFI_AGENT")/pfi-controller}
new_token "$T/atok" "$T/ctok"
kill_daemons_on_exit
start_daemon agent "$T/a.log" "$T/a.port" "$PFI_AGENT" \
  --backend "sim:gpus=4,job=j1:moe-ft-qwen30ba3b-x8@0-1,job=j2:dense-pt-llama70b-x8-compile@2-3,load=0,steplogs=$T,state=$T/hw.json" \
  --listen 127.0.0.1:0 --port-file "$T/a.port" --token-file "$T/atok" --state-file "$T/a.state" \
  --interval 0.5 --log "$T/a.log"
AP=$DPORT
cfg() { # EXTRA
  cat <<EOF2
{"listen": "127.0.0.1:0", "token_file": "$T/ctok", "db": "$T/c.db", "control_period_s": 0.5,
 "baseline_window_s": 2, "ramp_s": 0, "profile_samples": 3, "profile_settle_periods": 0$1,
 "agents": [{"name": "n1", "url": "http://127.0.0.1:$AP", "token_file": "$T/atok"}]}
EOF2
}
# a bad offer key: one line naming it, exit 2
cfg ', "offer": {"facility_factor": 9}' >"$T/bad.json"
expect_error 2 "offer.facility_factor" "$CTL" --config "$T/bad.json"
cfg ', "offer": {"interval_s": 1}' >"$T/c.json"
start_daemon controller "$T/c.log" "$T/c.port" "$CTL" --config "$T/c.json" --port-file "$T/c.port"
URL=http://127.0.0.1:$DPORT
offer() { curl -s -m 5 "$URL/v1/offer" >"$T/offer.json"; }
field() { python3 -c 'import json,sys; o=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$T/offer.json" "$1"; }
# the offer's shape: 5 costs, total non-decreasing and within the floors, kw <= total
shape() {
  python3 - "$T/offer.json" <<'PY' || fail "offer's shape: $(cat "$T/offer.json")"
import json, sys
o = json.load(open(sys.argv[1]))
of = o["offers"]
assert [x["max_loss_pct"] for x in of] == [0.5, 1, 2, 5, 10], of
tot = [x["total_kw"] for x in of]
assert all(a <= b + 1e-9 for a, b in zip(tot, tot[1:])), tot
assert tot[-1] <= o["floors_kw"] + 1e-9 and o["floors_kw"] <= o["baseline_kw"] + 1e-9, o
assert all(x["kw"] <= x["total_kw"] + 1e-9 and x["kw"] >= 0 for x in of), of
assert len(o["jobs"]) == 2 and {j["id"] for j in o["jobs"]} == {"j1", "j2"}, o["jobs"]
PY
  ok
}
wait_for 60 "an offer with both jobs" 'offer && [ "$(field "len(o[\"jobs\"]) if o else 0")" = 2 ]'
shape

# after the profiles: the offer rests on measured points
wait_for 90 "both profiles done" '[ "$(grep -c "profile done" "$T/c.log")" -ge 2 ]'
wait_for 30 "an offer backed by measured points" 'offer && [ "$(field "o[\"offers\"][3][\"measured_share\"]")" = 1.0 ]'
shape
[ "$(field 'all(j["measured"] for j in o["jobs"])')" = True ] || fail "jobs not measured: $(cat "$T/offer.json")"; ok
num "$(field 'o["offers"][3]["total_kw"]')" ">" 0 || fail "nothing offered at 5%"; ok

# the surfaces
curl -s -m 5 "$URL/v1/status" | grep -q '"offer": *{' || fail "no offer in /v1/status"; ok
curl -s -m 5 "$URL/metrics" >"$T/m.txt"
[ "$(grep -c '^pfi_ctl_offer_watts{max_loss_ratio=' "$T/m.txt")" = 5 ] || fail "offer gauges: $(grep offer "$T/m.txt")"; ok
grep -q '^pfi_ctl_offer_floors_watts ' "$T/m.txt" || fail "no floors gauge"; ok
grep -q '^pfi_ctl_offer_measured_ratio 1$' "$T/m.txt" || fail "measured ratio: $(grep measured_ratio "$T/m.txt")"; ok
if command -v promtool >/dev/null; then promtool check metrics <"$T/m.txt" >"$T/promtool.out" 2>&1 || { cat "$T/promtool.out" >&2; fail "promtool"; }; ok; fi
expect_status 0 "$PFI" offer --controller "$URL"
contains "$T/out" "floors"
contains "$T/out" "max_loss_pct"
expect_status 0 "$PFI" offer --controller "$URL" --format csv
[ "$(head -1 "$T/out")" = "max_loss_pct,kw,total_kw,measured_share" ] || fail "csv header: $(head -1 "$T/out")"; ok
lines "$T/out" 6
expect_status 0 "$PFI" offer --controller "$URL" --jobs --format csv
lines "$T/out" 3
expect_status 0 "$PFI" offer --controller "$URL" --format json
python3 -c 'import json,sys; json.load(open(sys.argv[1]))["offers"]' "$T/out" || fail "json"; ok
expect_error 2 "takes no operands" "$PFI" offer --controller "$URL" extra

# during an event: what remains
c=$(curl -s -o "$T/tr" -w '%{http_code}' -m 5 -X POST -H "Authorization: Bearer $(cat "$T/ctok")" \
  --data-binary '{"reduction_pct": 10}' "$URL/v1/trigger")
[ "$c" = 200 ] || [ "$c" = 201 ] || { cat "$T/tr" >&2; fail "trigger: HTTP $c"; }; ok
wait_for 30 "the offer during the event" 'offer && [ "$(field "o[\"event_active\"]")" = True ] && num "$(field "o[\"shed_now_kw\"]")" ">" 0'
shape
[ "$(field 'all(abs(x["kw"] - max(0, x["total_kw"] - o["shed_now_kw"])) < 1e-9 for x in o["offers"])')" = True ] ||
  fail "kw is not what remains: $(cat "$T/offer.json")"; ok
EID=$(sed -n 's/.*"id": *"\([^"]*\)".*/\1/p' "$T/tr" | head -1)
[ -n "$EID" ] || fail "no event id in the trigger's answer: $(cat "$T/tr")"; ok

# a limit set out of band (a BMC's) holds j2's GPUs at 300 W, below the
# plan's cap: the agent reports it, the offer counts j2 at it, the event's
# report names it. The simulated hardware's file is rewritten until the
# agent shows it (the agent rewrites that file when it sets a cap)
clamp() {
  python3 - "$T/hw.json" <<'PY'
import json, os, sys
p = sys.argv[1]
o = json.load(open(p))
o["enforced_w"] = [0, 0, 300, 300]
open(p + ".tmp", "w").write(json.dumps(o))
os.replace(p + ".tmp", p)
PY
  curl -s -m 5 -H "Authorization: Bearer $(cat "$T/atok")" "http://127.0.0.1:$AP/v1/control" | tr -d ' ' | grep -q ',null,300\]'
}
wait_for 30 "the agent reports the out-of-band limit" clamp
wait_for 30 "the offer counts j2 at its clamped power" \
  'offer && [ "$(field "[j for j in o[\"jobs\"] if j[\"id\"] == \"j2\"][0][\"clamped\"] and [j for j in o[\"jobs\"] if j[\"id\"] == \"j2\"][0][\"base_kw\"] <= 0.6 + 1e-9")" = True ]'
[ "$(field '[j for j in o["jobs"] if j["id"] == "j1"][0]["clamped"]')" = False ] || fail "j1 counted clamped: $(cat "$T/offer.json")"; ok
wait_for 30 "the event's report names j2 as clamped" \
  'curl -s -m 5 "$URL/v1/events/$EID/report" >"$T/rep.json" && python3 -c "import json,sys; c=json.load(open(sys.argv[1]))[\"clamped_jobs\"]; assert [(x[\"job\"], x[\"limit_w\"], x[\"by\"]) for x in c] == [(\"j2\", 300, \"enforced\")] and c[0][\"planned_cap_w\"] > 301" "$T/rep.json" 2>/dev/null'
contains "$T/c.log" "job j2 is held at 300 W per GPU by a limit set out of band"

# the event's report keeps the offer at notification and at start beside what it delivered
wait_for 30 "the event's report with its offer and a delivered shed" \
  'curl -s -m 5 "$URL/v1/events/$EID/report" >"$T/rep.json" && python3 -c "import json,sys; o=json.load(open(sys.argv[1]))[\"offer\"]; assert len(o[\"at_start_kw\"]) == 5 and o[\"at_notification_kw\"][4] is not None and o[\"delivered_kw\"] > 0" "$T/rep.json" 2>/dev/null'
done_ok
