#!/bin/sh
# test_inject_page.sh — markup in what the status page shows is text, never
# run (issue 14 item 3, docs/security.md "Job ids"): agents named and
# addressed with <img onerror> markup whose handler would change the page's
# title; headless Chromium loads the page under its Content-Security-Policy,
# and the DOM must show the markup as text, hold no <img>, keep its title,
# and still be drawn (the script runs under the policy). The controller
# refuses an event id with markup (ids are [A-Za-z0-9._-]{1,63}); behind
# that, the page's script itself must show markup as text in every field
# of the events and jobs lists too: the same page, script and policy,
# served by a stand-in (python3) whose /v1/status carries markup in event
# ids, sources, times, phases and job ids. Plain build only (label
# "plain"): Chromium (docs/testing.md).
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

# an event id with markup is refused, never stored or shown
code=$(curl -s -o "$T/body" -w '%{http_code}' -X POST -H "Authorization: Bearer $(cat "$T/ctok")" \
  --data-binary '{"id":"<img src=z onerror=alert(1)>","start":"2030-01-01T00:00:00Z","duration_s":60,"level":1}' "$URL/v1/events")
[ "$code" = 400 ] || fail "an event id with markup: HTTP $code"; ok
curl -s "$URL/v1/events" >"$T/events"
lacks "$T/events" "<img"

# the page's own defence: the controller's page, script, style and policy,
# served with a /v1/status that has markup wherever the controller has text
mkdir -p "$T/www/v1"
curl -s "$URL/" >"$T/www/index.html"
for f in page.js page.css; do curl -s "$URL/$f" >"$T/www/$f"; done
CSP=$(sed -n 's/^Content-Security-Policy: //p' "$T/h" | tr -d '\r')
X='<img src=q onerror=document.title=1>'
cat >"$T/www/v1/status" <<EOF
{"now": 1000, "clock_now": 1000, "active": true, "strategy": "pfi-aware", "dry_run": false, "agents_total": 1, "agents_up": 1,
 "tolerance_pct": 2, "governing_event": "ev$X", "budget_w": 900, "measured_w": 950, "cycle_ms": 1,
 "history": [[900, 1000, -1], [950, 960, 900], [1000, 950, 900]],
 "agents": [{"name": "a$X", "url": "http://x/", "up": true, "error": "", "generation": 3, "last_ok_age_s": 1}],
 "jobs": [{"job_id": "job$X", "tier": 2, "gpus": 1, "power_w": 950, "cap_w": 600, "reachable": true, "tokens_per_s": 80,
           "alloc_w": 900, "alloc_cap_w": 600, "pfi_predicted": null, "baseline_w": 1000, "baseline_tokens_per_s": 100,
           "loss_pct": 20, "allowed_loss_pct": 25, "over_limit": false}],
 "events": [{"id": "ev$X", "source": "src$X", "status": "active", "start": "st$X", "end": "en$X", "reduction_pct": 10,
             "target_w": 900, "baseline_w": 1000, "until_cancelled": false, "starts_in_s": null, "time_left_s": 60,
             "phase": "ph$X", "sets_target": true, "tolerance_pct": 2, "achieved_w": 950, "met": false, "met_basis": "mb$X"}]}
EOF
cat >"$T/serve.py" <<'EOF'
import http.server, os, sys
class H(http.server.SimpleHTTPRequestHandler):
    def end_headers(self):
        self.send_header("Content-Security-Policy", sys.argv[2])
        super().end_headers()
    def guess_type(self, path):
        return "application/json" if path.endswith("/status") else super().guess_type(path)
    def log_message(self, *a):
        pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), lambda *a: H(*a, directory=sys.argv[3]))
open(sys.argv[1] + ".tmp", "w").write(str(s.server_address[1]))
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
s.serve_forever()
EOF
start_daemon "stand-in" "$T/py.log" "$T/py.port" python3 "$T/serve.py" "$T/py.port" "$CSP" "$T/www"
chromium_dom "http://127.0.0.1:$DPORT/"
[ "$DOM_POINTS" = 3 ] || { head -c 3000 "$T/dom" >&2; fail "the page did not draw the stand-in's status (points: $DOM_POINTS)"; }; ok
contains "$T/dom" "<title>pfi-controller</title>"
lacks "$T/dom" "<img"
for f in ev src st en job a; do contains "$T/dom" "<td>$f&lt;img src=q onerror=document.title=1&gt;</td>"; done
contains "$T/dom" "active (ph&lt;img src=q onerror=document.title=1&gt;)</td>"
contains "$T/dom" '<tr class="gov"><td>ev&lt;img'
contains "$T/dom" "set by event ev&lt;img src=q"
contains "$T/dom" "(tier 2 allows −25%)"
done_ok
