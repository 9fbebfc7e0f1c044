#!/bin/sh
# test_demo.sh — `pfi demo` end to end: a controller and 4 agents (8
# simulated GPUs each) on loopback under one sped-up clock, a 30% grid
# event, the timeline, the event report written here (JSON + PNG), the
# target met with every job within its Flex tier, everything stopped and
# every cap back at its baseline; bad options refused.
. "$SRC/tests/cli/lib.sh"
: "${PFI_AGENT:?}" "${PFI_CONTROLLER_BIN:?}"
# the demo finds pfi-agent and pfi-controller next to pfi
cd "$T" || fail "no temp dir"
expect_error 2 "--cut" "$PFI" demo --cut 95
expect_error 2 "--time-scale" "$PFI" demo --time-scale -3
expect_error 2 "--bogus" "$PFI" demo --bogus

# bounded: timeout(1) signals the demo's whole process group (its daemons too)
expect_status 0 timeout -k 10 "${DEMO_TIMEOUT_S:-300}" "$PFI" demo --time-scale 40 --dir "$T/d" --keep
cp "$T/out" "$T/demo.out"
contains "$T/demo.out" "4 agents x 8 simulated H200"
contains "$T/demo.out" "tokens/s per job"
contains "$T/demo.out" "MET (tolerance 2%)"
contains "$T/demo.out" "every GPU is back at its 700 W baseline"
contains "$T/err" "reconstruction"
# the timeline has rows before, during and after the event
n=$(grep -cE '^ +[+-][0-9]+\.[0-9] ' "$T/demo.out")
[ "$n" -ge 15 ] || fail "timeline has $n rows"; ok
# during the event, measured power is within 2% of the target (steady part)
awk '$1 ~ /^\+[0-9]/ && $1+0 >= 2 && $1+0 <= 9.5 { if ($3 > $2 * 1.02) bad++; n++ } END { exit !(n >= 10 && bad == 0) }' "$T/demo.out" \
  || fail "measured power above target + 2% during the event"; ok
# every job within its tier
grep -E '^    job[0-9] Flex' "$T/demo.out" >"$T/jobs"
lines "$T/jobs" 4
lacks "$T/jobs" "VIOLATED"
awk '{ split($4, a, "%"); split($6, b, "%"); if (a[1] + 0 < b[1] + 0) exit 1 }' "$T/jobs" || fail "a job lost more than its tier allows"; ok
# the report files
R="$T/pfi-demo-report.json"
[ -s "$R" ] || fail "no pfi-demo-report.json"; ok
contains "$R" '"status": "done"'
contains "$R" '"met": true'
contains "$R" '"requested_reduction_pct": 30'
contains "$R" '"energy_shed_kwh"'
ach=$(grep -o '"achieved_reduction_pct": [0-9.]*' "$R" | awk '{print $2}')
awk -v a="$ach" 'BEGIN { exit !(a >= 28 && a <= 35) }' || fail "achieved reduction $ach%"; ok
[ "$(head -c 8 "$T/pfi-demo-report.png" | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ] || fail "pfi-demo-report.png is not a PNG"; ok
# kept: the controller's SQLite and logs; no daemon left running
[ -s "$T/d/controller.db" ] || ls "$T/d" >&2
ls "$T/d" | grep -q '\.db$' || fail "--keep lost the controller database"; ok
! pgrep -f "$T/d" >/dev/null || fail "a daemon of the demo is still running"; ok
done_ok
