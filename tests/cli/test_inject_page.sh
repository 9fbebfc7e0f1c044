#!/bin/sh
# test_inject_page.sh — markup in what the status page shows is text, never
# run (issue 14 item 3, docs/security.md "Job ids"): agents named and
# addressed with <img onerror> markup whose handler would change the page's
# title; headless Chromium loads the page under its Content-Security-Policy,
# and the DOM must show the markup as text, hold no <img>, keep its title,
# and still be drawn (the script runs under the policy). Plain build only
# (label "plain"): Chromium (docs/testing.md).
. "$SRC/tests/cli/lib.sh"
: "${PFI_AGENT:?}"
CTL=${PFI_CONTROLLER_BIN:-$(dirname "$PFI_AGENT")/pfi-controller}
command -v chromium >/dev/null || fail "chromium is not installed (scripts/bootstrap.sh test)"
export PFI_TIME_SCALE=20 PFI_EPOCH=$(date +%s)
kill_daemons_on_exit
new_token "$T/atok" "$T/ctok"

fetch_has() { curl -s "$1" >"$T/fetched" && grep -qF -- "$2" "$T/fetched"; }

start_daemon agent "$T/a.log" "$T/a.port" "$PFI_AGENT" --backend "sim:gpus=2,job=j1:moe-ft-qwen30ba3b-x8@0-1,load=0" \
  --listen 127.0.0.1:0 --port-file "$T/a.port" --token-file "$T/atok" --state-file "$T/a.state" --interval 1 --log "$T/a.log"
cat >"$T/ctl.json" <<EOF
{"listen": "127.0.0.1:0", "token_file": "$T/ctok", "db": "$T/ctl.db", "control_period_s": 5,
 "agents": [{"name": "<img src=x onerror=document.title='XSS'>", "url": "http://127.0.0.1:$(cat "$T/a.port")", "token_file": "$T/atok"},
            {"name": "down", "url": "http://127.0.0.1:1/<img src=y onerror=document.title='XSS2'>", "token_file": "$T/atok"}]}
EOF
start_daemon controller "$T/ctl.log" "$T/c.port" "$CTL" --config "$T/ctl.json" --port-file "$T/c.port"
URL=http://127.0.0.1:$DPORT
wait_for 30 "job j1 in the controller's status" 'fetch_has "$URL/v1/status" "\"job_id\":\"j1\""'
curl -sI "$URL/" >"$T/h"
contains "$T/h" "Content-Security-Policy: default-src 'none'; script-src 'self'"
chromium_dom "$URL/"
n=$DOM_POINTS
[ -n "$n" ] && [ "$n" -ge 1 ] || { head -c 2000 "$T/dom" >&2; fail "the page's script did not draw (points: $n)"; }; ok
contains "$T/dom" "<title>pfi-controller</title>" # no handler ran (it would have set the title)...
contains "$T/dom" "<td>&lt;img src=x onerror=document.title='XSS'&gt;</td>" # ...because the name is text
contains "$T/dom" "/&lt;img src=y onerror=document.title='"
lacks "$T/dom" "<img"
contains "$T/dom" "<td>j1</td>"
done_ok
