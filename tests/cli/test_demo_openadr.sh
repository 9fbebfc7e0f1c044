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
demo_outcome "$T/d"
done_ok
