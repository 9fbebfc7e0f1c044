#!/bin/sh
# test_demo_openadr.sh — `pfi demo --openadr`: the demo's grid event goes
# the way a VTN's would, an OpenADR 3.1 EVENT POSTed to the controller's
# webhook /openadr3/events, and has the outcome of the API path
# (test_demo.sh): caps applied, measured power within the demo's 2%
# tolerance of the target during the event, every job within its tier,
# every cap back at its baseline. The demo itself polls with deadlines.
. "$SRC/tests/cli/lib.sh"
: "${PFI_AGENT:?}" "${PFI_CONTROLLER_BIN:?}"
cd "$T" || fail "no temp dir"
expect_status 0 timeout -k 10 "${DEMO_TIMEOUT_S:-300}" "$PFI" demo --openadr --time-scale 40 --dir "$T/d" --keep
cp "$T/out" "$T/demo.out"
# the path it took, said in the timeline
contains "$T/demo.out" "sent as an OpenADR 3.1 EVENT (SIMPLE level 3) to POST /openadr3/events"
contains "$T/demo.out" "MET (tolerance 2%)"
contains "$T/demo.out" "every GPU is back at its 700 W baseline"
# the controller took it from the webhook, as an OpenADR event
contains "$T/pfi-demo-report.json" '"source": "openadr"'
n=$(grep -cE '^ +[+-][0-9]+\.[0-9] ' "$T/demo.out")
[ "$n" -ge 15 ] || fail "timeline has $n rows"; ok
# caps applied: during the event measured power is within 2% of the target
awk '$1 ~ /^\+[0-9]/ && $1+0 >= 2 && $1+0 <= 9.5 { if ($3 > $2 * 1.02) bad++; n++ } END { exit !(n >= 10 && bad == 0) }' "$T/demo.out" \
  || fail "measured power above target + 2% during the event"; ok
grep -E '^    job[0-9] Flex' "$T/demo.out" >"$T/jobs"
lines "$T/jobs" 4
lacks "$T/jobs" "VIOLATED"
R="$T/pfi-demo-report.json"
contains "$R" '"met": true'
contains "$R" '"requested_reduction_pct": 30'
ach=$(grep -o '"achieved_reduction_pct": [0-9.]*' "$R" | awk '{print $2}')
awk -v a="$ach" 'BEGIN { exit !(a >= 28 && a <= 35) }' || fail "achieved reduction $ach%"; ok
[ "$(head -c 8 "$T/pfi-demo-report.png" | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ] || fail "pfi-demo-report.png is not a PNG"; ok
! pgrep -f "$T/d" >/dev/null || fail "a daemon of the demo is still running"; ok
done_ok
