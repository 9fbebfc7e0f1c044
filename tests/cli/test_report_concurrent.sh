#!/bin/sh
# test_report_concurrent.sh — the open reads outside the controller's lock
# (issue 30; ctl_view.c, ctl_report.c): while 8 clients fetch two events'
# report.png, the report JSON, /v1/status and /metrics in loops (two charts
# drawn at once: PLplot's one stream is shared), events change (a trigger,
# an update, a cancel) and every answer stays right: each PNG is a PNG, each
# report names its event, none is refused; the trigger's caps are written
# (the controller's "every cap written" line) and the controller keeps
# running. The chart is kept per content but never stale: a running event's
# chart changes once a period has added a sample (its report's timeline
# grew), and an ended event's chart, whose samples no longer change, comes
# back byte for byte.
# A shared clock 20x faster (control period 5 s = 0.25 s).
. "$SRC/tests/cli/lib.sh"
: "${PFI_AGENT:?}"
CTL=${PFI_CONTROLLER_BIN:-$(dirname "$PFI_AGENT")/pfi-controller}
export PFI_TIME_SCALE=20 PFI_EPOCH=$(date +%s)
new_token "$T/atok" "$T/ctok"
CTOK=$(cat "$T/ctok")
start_daemon agent "$T/a.log" "$T/a.port" "$PFI_AGENT" \
  --backend "sim:name=n1,gpus=8,job=j1:moe-ft-qwen30ba3b-x8@0-3,job=j2:dense-pt-llama70b-x8-compile@4-7,load=0" \
  --listen 127.0.0.1:0 --port-file "$T/a.port" --token-file "$T/atok" --state-file "$T/a.state" \
  --interval 1 --log "$T/a.log"
AP=$DPORT
cat >"$T/ctl.json" <<EOF
{"listen": "127.0.0.1:0", "token_file": "$T/ctok", "db": "$T/ctl.db", "control_period_s": 5,
 "baseline_window_s": 10, "lease_s": 30, "ramp_s": 0,
 "agents": [{"name": "n1", "url": "http://127.0.0.1:$AP", "token_file": "$T/atok"}]}
EOF
start_daemon controller "$T/ctl.log" "$T/c.port" "$CTL" --config "$T/ctl.json" --port-file "$T/c.port"
CP=$DPID URL=http://127.0.0.1:$DPORT
post() { # PATH BODY: the HTTP status in $CODE, the answer in $T/body
  CODE=$(curl -s -m 10 -o "$T/body" -w '%{http_code}' -X POST -H "Authorization: Bearer $CTOK" --data-binary "$2" "$URL$1")
}
NOW() { awk -v e="$PFI_EPOCH" -v w="$(date +%s.%N)" 'BEGIN{printf "%.0f", e + (w - e) * 20}'; }
ISO() { date -u -d "@$1" +%Y-%m-%dT%H:%M:%SZ; }
get_png() { curl -s -m 10 -o "$2" -w '%{http_code}' "$URL/v1/events/$1/report.png"; }
is_png() { [ "$(head -c 8 "$1" | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ]; }
samples() { curl -s -m 10 "$URL/v1/events/$1/report" | grep -o '"t_s"' | wc -l; }
wait_counter 30 "$URL" pfi_ctl_cycles_total 8 # baselines: 10 clock s = 2 periods, and some

# ---- an event that ends (its chart's samples fixed from then on) and one that runs ----
post /v1/events "{\"id\":\"done-ev\",\"start\":\"$(ISO "$(NOW)")\",\"duration_s\":40,\"reduction_pct\":20}"
[ "$CODE" = 201 ] || { cat "$T/body" >&2; fail "done-ev: HTTP $CODE"; }; ok
wait_for 30 "done-ev to end" 'curl -s -m 5 "$URL/v1/events/done-ev" | grep -q "\"status\":\"done\""'
post /v1/events "{\"id\":\"run-ev\",\"start\":\"$(ISO "$(NOW)")\",\"duration_s\":3600,\"reduction_pct\":20}"
[ "$CODE" = 201 ] || { cat "$T/body" >&2; fail "run-ev: HTTP $CODE"; }; ok
wait_for 30 "run-ev's chart (two samples)" '[ "$(get_png run-ev "$T/p0.png")" = 200 ]'

# ---- 8 clients in loops: each answer checked, the bad ones counted in $T/bad.N ----
client() { # N: its paths in turn until $T/stop exists
  n=$1 k=0
  while [ ! -e "$T/stop" ]; do
    case $(( (n + k) % 5 )) in
      0) p=/v1/events/run-ev/report.png ;; 1) p=/v1/events/done-ev/report.png ;;
      2) p=/v1/events/run-ev/report ;; 3) p=/v1/status ;; *) p=/metrics ;;
    esac
    k=$((k + 1))
    code=$(curl -s -m 10 -o "$T/c$n.out" -w '%{http_code}' "$URL$p")
    good=1
    [ "$code" = 200 ] || good=0
    case $p in
      *.png) is_png "$T/c$n.out" || good=0 ;;
      */report) grep -q '"id": "run-ev"' "$T/c$n.out" || good=0 ;;
      /v1/status) grep -q '"events":\[' "$T/c$n.out" || good=0 ;;
      /metrics) grep -q '^pfi_ctl_cycles_total ' "$T/c$n.out" || good=0 ;;
    esac
    [ $good = 1 ] || echo "$p: HTTP $code" >>"$T/bad.$n"
    echo x >>"$T/count.$n"
  done
}
CLIENTS=
for n in 1 2 3 4 5 6 7 8; do client $n & CLIENTS="$CLIENTS $!"; done
PIDS="$PIDS $CLIENTS"
fetches() { cat "$T"/count.* 2>/dev/null | wc -l; }
wait_for 30 "the clients under way (80 answers)" '[ "$(fetches)" -ge 80 ]'

# events change meanwhile: a trigger (its caps written), an update, a cancel
post /v1/trigger '{"reduction_pct": 35, "id": "trig-1", "duration_s": 600}'
[ "$CODE" = 201 ] || { cat "$T/body" >&2; fail "trigger: HTTP $CODE"; }; ok
wait_for 30 "the trigger's caps written" 'grep -q "trigger trig-1: caps pushed to 1 agents.*every cap written" "$T/ctl.log"'
S=$(ISO $(( $(NOW) + 100000 )))
post /v1/events "{\"id\":\"later\",\"start\":\"$S\",\"duration_s\":60,\"level\":1}"
[ "$CODE" = 201 ] || fail "later: HTTP $CODE"; ok
post /v1/events "{\"id\":\"later\",\"start\":\"$S\",\"duration_s\":90,\"level\":2}"
[ "$CODE" = 200 ] || fail "later (update): HTTP $CODE"; ok
CODE=$(curl -s -m 10 -o "$T/body" -w '%{http_code}' -X DELETE -H "Authorization: Bearer $CTOK" "$URL/v1/events/trig-1")
[ "$CODE" = 200 ] || fail "cancel trig-1: HTTP $CODE"; ok
wait_for 30 "trig-1 cancelled in /v1/status" 'curl -s -m 5 "$URL/v1/status" | grep -q "\"id\":\"trig-1\"[^}]*\"status\":\"cancelled\""'
n0=$(fetches)
wait_for 30 "80 more answers after the changes" '[ "$(fetches)" -ge $((n0 + 80)) ]'
touch "$T/stop"
for p in $CLIENTS; do wait "$p"; done # each within its last request's 10 s
alive "$CP" || fail "the controller exited"; ok
if ls "$T"/bad.* >/dev/null 2>&1; then cat "$T"/bad.* | sort | uniq -c >&2; fail "wrong answers among $(fetches)"; fi; ok
echo "$(fetches) answers checked while the events changed"

# ---- kept, never stale ----
# an ended event's chart: the same bytes each time
[ "$(get_png done-ev "$T/d1.png")" = 200 ] && [ "$(get_png done-ev "$T/d2.png")" = 200 ] || fail "done-ev's chart"; ok
is_png "$T/d1.png" || fail "done-ev's chart is not a PNG"; ok
cmp -s "$T/d1.png" "$T/d2.png" || fail "done-ev's chart changed with no new sample"; ok
# a running event's chart: redrawn once a period added a sample
[ "$(get_png run-ev "$T/r1.png")" = 200 ] || fail "run-ev's chart"; ok
n1=$(samples run-ev) # r1 has at most n1 samples
wait_for 30 "a new sample of run-ev" '[ "$(samples run-ev)" -gt "$n1" ]'
[ "$(get_png run-ev "$T/r2.png")" = 200 ] || fail "run-ev's chart after a period"; ok
! cmp -s "$T/r1.png" "$T/r2.png" || fail "run-ev's chart did not change with a new sample (stale)"; ok
# an event with one sample: 409, as before
post /v1/events "{\"id\":\"new-ev\",\"start\":\"$(ISO $(( $(NOW) + 100000 )))\",\"duration_s\":60,\"level\":1}"
[ "$(get_png new-ev "$T/n.png")" = 409 ] || fail "a scheduled event's chart is not 409"; ok
contains "$T/n.png" "fewer than two samples"
done_ok
