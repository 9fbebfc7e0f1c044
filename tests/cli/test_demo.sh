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
# safe-online (the controller's default) against the reference (equal weight),
# both measured in the event: the numbers parse, are finite and positive
grep -E '^  throughput under the cut: [0-9]+ tok/s; reference \(equal weight\) counterfactual: [0-9]+ tok/s \([-+][0-9]+\.[0-9]%\)$' "$T/demo.out" >"$T/tput" ||
  fail "no throughput-vs-reference line in the demo's report"; ok
awk '{ x = $5 + 0; y = $11 + 0; exit !(x > 0 && y > 0 && x < 1e12 && y < 1e12) }' "$T/tput" || fail "throughput figures: $(cat "$T/tput")"; ok
contains "$T/err" "reconstruction"
demo_outcome "$T/d"
# every job within its tier, by its loss
awk '{ split($4, a, "%"); split($6, b, "%"); if (a[1] + 0 < b[1] + 0) exit 1 }' "$T/jobs" || fail "a job lost more than its tier allows"; ok
contains "$R" '"status": "done"'
contains "$R" '"energy_shed_kwh"'
# kept: the controller's SQLite and logs
[ -s "$T/d/controller.db" ] || ls "$T/d" >&2
ls "$T/d" | grep -q '\.db$' || fail "--keep lost the controller database"; ok
done_ok
