#!/bin/sh
# test_status_page.sh — the controller's status page in headless Chromium:
# the page's script fetches /v1/status and draws cluster power vs target
# and the offer (now by cost, and its history from /v1/offer/history);
# after a few seconds the DOM must carry the drawn points and the measured
# power, the chart's polyline must have points, and a screenshot must be of
# real size. Plain build only (label "plain"): Chromium (docs/testing.md).
. "$SRC/tests/cli/lib.sh"
: "${PFI_AGENT:?}"
CTL=${PFI_CONTROLLER_BIN:-$(dirname "$PFI_AGENT")/pfi-controller}
command -v chromium >/dev/null || fail "chromium is not installed (scripts/bootstrap.sh test)"
export PFI_TIME_SCALE=20 PFI_EPOCH=$(date +%s)
new_token "$T/atok" "$T/ctok"
start_daemon agent "$T/a.log" "$T/a.port" "$PFI_AGENT" --backend "sim:gpus=8,job=j1:moe-ft-qwen30ba3b-x8@0-7,load=0" \
  --listen 127.0.0.1:0 --port-file "$T/a.port" --token-file "$T/atok" --state-file "$T/a.state" --interval 1 --log "$T/a.log"
cat >"$T/ctl.json" <<EOF2
{"listen": "127.0.0.1:0", "token_file": "$T/ctok", "db": "$T/ctl.db", "control_period_s": 5,
 "agents": [{"name": "n1", "url": "http://127.0.0.1:$(cat "$T/a.port")", "token_file": "$T/atok"}]}
EOF2
start_daemon controller "$T/ctl.log" "$T/c.port" "$CTL" --config "$T/ctl.json" --port-file "$T/c.port"
URL=http://127.0.0.1:$DPORT
# a few control periods (5 clock s each) of history before the event
wait_counter 30 "$URL" pfi_ctl_cycles_total 6
S=$(date -u -d "@$(awk -v e="$PFI_EPOCH" -v w="$(date +%s.%N)" 'BEGIN{printf "%.0f", e + (w - e) * 20 + 10}')" +%Y-%m-%dT%H:%M:%SZ)
CODE=$(curl -s -o "$T/body" -w '%{http_code}' -X POST -H "Authorization: Bearer $(cat "$T/ctok")" \
  --data-binary "{\"id\":\"page\",\"start\":\"$S\",\"duration_s\":600,\"reduction_pct\":25}" "$URL/v1/events")
[ "$CODE" = 201 ] || fail "event: HTTP $CODE"; ok
# the page draws what /v1/status says: wait until the event is active and a
# few periods of it are in the history
wait_for 30 "event page active" 'curl -s -m 5 "$URL/v1/events/page" | grep -q "\"status\":\"active\""'
wait_counter 30 "$URL" pfi_ctl_cycles_total 3
curl -s "$URL/" >"$T/page.html"
contains "$T/page.html" "<svg id=\"chart\""
lacks "$T/page.html" "http://"
lacks "$T/page.html" "https://"
chromium_dom "$URL/"
n=$DOM_POINTS
[ -n "$n" ] && [ "$n" -ge 3 ] || { head -c 2000 "$T/dom" >&2; fail "the page drew $n points"; }; ok
grep -q 'data-measured-w="[0-9][0-9]*"' "$T/dom" || fail "no measured power on the page"; ok
grep -q '<polyline id="measured" fill="none" stroke="#1f77b4" stroke-width="2" points="[0-9]' "$T/dom" || fail "empty chart"; ok
# the offer (issue 44): what the site can shed now by cost, and over time
grep -q '<polyline id="offer-now" fill="none" stroke="#08306b" stroke-width="2" points="[0-9]' "$T/dom" || fail "no offer curve"; ok
op=$(sed -n 's/.* data-offer-points="\([0-9]*\)".*/\1/p' "$T/dom" | head -1)
[ -n "$op" ] && [ "$op" -ge 2 ] || fail "the offer's history has '$op' points"; ok
grep -q '<polyline id="offer-h3" fill="none"' "$T/dom" || fail "no offer history line"; ok
curl -s -m 5 "$URL/v1/offer/history" | python3 -c 'import json,sys; h=json.load(sys.stdin); assert h["max_loss_pct"] == [0.5, 1, 2, 5, 10] and len(h["points"]) >= 2 and len(h["points"][0]) == 6' ||
  fail "GET /v1/offer/history"; ok
contains "$T/dom" "event active"
contains "$T/dom" "<td>j1</td>"
# shellcheck disable=SC2086
timeout 120 chromium $CHROMIUM_FLAGS --user-data-dir="$T/c2" --virtual-time-budget=4000 --window-size=1100,900 --screenshot="$T/shot.png" "$URL/" >/dev/null 2>&1 \
  || fail "chromium --screenshot failed"
[ "$(wc -c <"$T/shot.png")" -gt 20000 ] || fail "screenshot only $(wc -c <"$T/shot.png") bytes"; ok
cp "$T/shot.png" "${PFI_SHOT:-/dev/null}" 2>/dev/null || true
done_ok
