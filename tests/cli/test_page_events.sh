#!/bin/sh
# test_page_events.sh — an operator can run an event from the status page
# (issue 16 item 4): three simulated agents, three overlapping events (one
# open-ended, one short that ends), a planned one cancelled and one still
# scheduled; headless Chromium must show,
# within a deadline, every event with its id and status, the active ones
# with "until cancelled" or their time left, the ended one with its
# steady-window verdict, the deepest cut marked as the
# one that sets the target, met / not met, the chart's axis labels and its
# tolerance band, each job's loss against its baseline with its tier's
# limit, and the agents' last answer and lease generation; and a screenshot
# of the page must be a PNG. Plain build only (label "plain"): Chromium
# (docs/testing.md).
. "$SRC/tests/cli/lib.sh"
: "${PFI_AGENT:?}"
CTL=${PFI_CONTROLLER_BIN:-$(dirname "$PFI_AGENT")/pfi-controller}
command -v chromium >/dev/null || fail "chromium is not installed (scripts/bootstrap.sh test)"
export PFI_TIME_SCALE=20 PFI_EPOCH=$(date +%s)
kill_daemons_on_exit
new_token "$T/atok" "$T/ctok"
CTOK=$(cat "$T/ctok")
NOW() { awk -v e="$PFI_EPOCH" -v w="$(date +%s.%N)" 'BEGIN{printf "%.3f", e + (w - e) * 20}'; }
ISO() { date -u -d "@$(awk -v n="$(NOW)" -v d="$1" 'BEGIN{printf "%.0f", n + d}')" +%Y-%m-%dT%H:%M:%SZ; }

n=0
for b in "job=j1:moe-ft-qwen30ba3b-x8@0-3,job=j2:dense-pt-llama70b-x8-compile@4-7" \
  "job=j3:moe-pt-gptoss20b-x8-ep1-nocompile@0-7" "job=j4:dense-ft-llama70b-x8-compile@0-7"; do
  n=$((n + 1))
  start_daemon "agent $n" "$T/a$n.log" "$T/a$n.port" "$PFI_AGENT" --backend "sim:gpus=8,$b,load=0,steplogs=$T,state=$T/hw$n.json" \
    --listen 127.0.0.1:0 --port-file "$T/a$n.port" --token-file "$T/atok" --state-file "$T/a$n.state" --interval 1 --log "$T/a$n.log"
done
printf '[{"id": "planned-1", "start": "%s", "duration_s": 600, "level": 2}]\n' "$(ISO 100000)" >"$T/sched.json"
cat >"$T/ctl.json" <<EOF2
{"listen": "127.0.0.1:0", "token_file": "$T/ctok", "db": "$T/ctl.db", "control_period_s": 5, "baseline_window_s": 30,
 "tiers": {"j1": 3, "j2": 2, "j3": 1, "j4": 0}, "schedule": "$T/sched.json",
 "agents": [{"name": "n1", "url": "http://127.0.0.1:$(cat "$T/a1.port")", "token_file": "$T/atok"},
            {"name": "n2", "url": "http://127.0.0.1:$(cat "$T/a2.port")", "token_file": "$T/atok"},
            {"name": "n3", "url": "http://127.0.0.1:$(cat "$T/a3.port")", "token_file": "$T/atok"}]}
EOF2
start_daemon controller "$T/ctl.log" "$T/c.port" "$CTL" --config "$T/ctl.json" --port-file "$T/c.port"
URL=http://127.0.0.1:$DPORT
# baselines: a few periods (5 clock s each) of every job before the events
wait_counter 30 "$URL" pfi_ctl_cycles_total 8

post() { # JSON: POST it, expect 201
  code=$(curl -s -o "$T/body" -w '%{http_code}' -X POST -H "Authorization: Bearer $CTOK" --data-binary "$1" "$URL/v1/events")
  [ "$code" = 201 ] || { cat "$T/body" >&2; fail "POST $1: HTTP $code"; }; ok
}
post "{\"id\":\"a-open\",\"start\":\"$(ISO 0)\",\"open_ended\":true,\"reduction_pct\":15}"
post "{\"id\":\"b-deep\",\"start\":\"$(ISO 0)\",\"duration_s\":3600,\"reduction_pct\":30}"
# the deepest cut while it runs: a period's samples are kept under the event
# that sets the target, and an ended event's verdict is read from them
post "{\"id\":\"c-short\",\"start\":\"$(ISO 0)\",\"duration_s\":40,\"reduction_pct\":40}"
post "{\"id\":\"d-later\",\"start\":\"$(ISO 7200)\",\"duration_s\":600,\"target_kw\":9}"
code=$(curl -s -o "$T/body" -w '%{http_code}' -X DELETE -H "Authorization: Bearer $CTOK" "$URL/v1/events/planned-1")
[ "$code" = 200 ] || fail "cancel planned-1: HTTP $code"; ok

# the page, drawn by Chromium, until it shows everything (or the deadline)
page_has_all() {
  chromium_dom "$URL/"
  for want in '<td>a-open</td>' '<td>b-deep</td>' '<td>planned-1</td>' '<td>api</td>' '<td>schedule</td>' \
    '<td>c-short</td>' '<td>d-later</td>' '>active (' '>cancelled<' '>done<' '>scheduled<' 'starts in 1h ' \
    ' (steady window)<' 'until cancelled' '<tr class="gov"><td>b-deep</td>' '>sets the target<' \
    '2 events active: ' 'set by event b-deep' 'id="xlabel"' '>time (minutes before now' 'GPU power (kW)</text>' \
    '<g id="band" class="band"><polygon' '<g id="target"><polyline' '(tier 3 allows −50%)' '(tier 1 allows −10%)' \
    '(tier 0 allows no loss)' '>lease generation<' ' ago<' '<td>j4</td>'; do
    grep -qF -- "$want" "$T/dom" || { MISSING=$want; return 1; }
  done
  grep -qE '>(met|not met) \(now' "$T/dom" || { MISSING="met / not met"; return 1; }
  # a loss against the baseline: a signed percentage before the tier's limit
  grep -qE '>[−+]?[0-9]+\.[0-9]% \(tier 2 allows −25%\)' "$T/dom" || { MISSING="j2's loss"; return 1; }
  rows=$(grep -o '<tr[^>]*><td>[^<]*</td><td>\(api\|schedule\|openadr\)</td>' "$T/dom" | wc -l)
  [ "$rows" -ge 5 ] || { MISSING="5 event rows (have $rows)"; return 1; }
}
MISSING=
end=$(($(date +%s) + 90))
until page_has_all; do
  check_daemons "the status page"
  [ "$(date +%s)" -lt "$end" ] || { head -c 6000 "$T/dom" >&2; show_logs; fail "not within 90 s: the page lacks $MISSING"; }
  sleep 0.5
done; ok
# the band's polygon has points; the time left of the 1 h event is shown
grep -q '<polygon fill="#d62728" fill-opacity="0.15" stroke="none" points="[0-9]' "$T/dom" || fail "empty tolerance band"; ok
grep -qE '<td>b-deep</td>(<td[^>]*>[^<]*</td>){4}<td>([0-9]+h [0-9]+m|[0-9]+m [0-9]+s)</td>' "$T/dom" || { grep -o '<tr class="gov">.*</tr>' "$T/dom" | head -c 800 >&2; fail "no time left for b-deep"; }; ok
# the same in the JSON (the page draws what /v1/status says)
curl -s "$URL/v1/status" >"$T/status.json"
contains "$T/status.json" '"governing_event":"b-deep"'
contains "$T/status.json" '"tolerance_pct":'
contains "$T/status.json" '"sets_target":true'
contains "$T/status.json" '"until_cancelled":true'
contains "$T/status.json" '"last_ok_age_s":'
contains "$T/status.json" '"feasible":'
# shellcheck disable=SC2086
timeout 120 chromium $CHROMIUM_FLAGS --user-data-dir="$T/c2" --virtual-time-budget=4000 --window-size=1100,1400 --screenshot="$T/shot.png" "$URL/" >/dev/null 2>&1 \
  || fail "chromium --screenshot failed"
[ -s "$T/shot.png" ] || fail "empty screenshot"; ok
[ "$(head -c 8 "$T/shot.png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] || fail "the screenshot is not a PNG"; ok
[ "$(wc -c <"$T/shot.png")" -gt 20000 ] || fail "screenshot only $(wc -c <"$T/shot.png") bytes"; ok
cp "$T/shot.png" "${PFI_SHOT:-/dev/null}" 2>/dev/null || true
done_ok
