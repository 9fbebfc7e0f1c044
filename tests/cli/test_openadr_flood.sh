#!/bin/sh
# test_openadr_flood.sh — a flood of new OpenADR event ids costs the
# controller a bounded book and a bounded log (openadr.h,
# docs/controller.md "OpenADR 3"): a poll that lists 4,600 events with new
# ids, each refused (a negative priority: malformed), is counted in full
# (pfi_ctl_openadr_rejected_total{reason="malformed"} 4600) but logged in
# PFI_OADR_LOG_BURST (20) lines; the book, full at 4,096 ids, forgets 512
# to make room (one line) but not the grid's scheduled event, older than
# every flooding id: served again it is "unchanged", not scheduled anew.
# The summary line of the suppressed rejections, a minute later, is
# test_openadr_book's (log_limit). Before the bound every id stayed in the
# book and each rejection was a log line (4,600 lines).
. "$SRC/tests/cli/lib.sh"
: "${PFI_AGENT:?}"
CTL=${PFI_CONTROLLER_BIN:-$(dirname "$PFI_AGENT")/pfi-controller}
new_token "$T/atok" "$T/ctok"
CTOK=$(cat "$T/ctok")
kill_daemons_on_exit
N=4600
# the poller's VTN: the flood once (the first GET), then an empty list
cat >"$T/vtn.py" <<'PY'
import http.server, json, os, sys
portfile, n = sys.argv[1], int(sys.argv[2])
FLOOD = json.dumps([{"id": "flood-%d" % k, "objectType": "EVENT", "priority": -1,
                     "intervalPeriod": {"start": "2099-01-01T00:00:00Z", "duration": "PT1H"},
                     "intervals": [{"id": 0, "payloads": [{"type": "SIMPLE", "values": [1]}]}]}
                    for k in range(n)]).encode()
served = [0]
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        b = FLOOD if served[0] == 0 else b"[]"
        served[0] += 1
        open(portfile + ".gets", "w").write(str(served[0]))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)
    def log_message(self, *a): pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
open(portfile + ".tmp", "w").write(str(s.server_address[1]))
os.rename(portfile + ".tmp", portfile)
s.serve_forever()
PY
start_daemon "fixture VTN" "$T/vtn.log" "$T/vtn.port" python3 "$T/vtn.py" "$T/vtn.port" "$N"
POLL=http://127.0.0.1:$DPORT/events
start_daemon agent "$T/a.log" "$T/a.port" "$PFI_AGENT" --backend "sim:gpus=4,job=j1:moe-ft-qwen30ba3b-x8@0-3,load=0,steplogs=$T,state=$T/hw.json" \
  --listen 127.0.0.1:0 --port-file "$T/a.port" --token-file "$T/atok" --state-file "$T/a.state" --interval 1 --log "$T/a.log"
cat >"$T/ctl.json" <<EOF
{"listen": "127.0.0.1:0", "token_file": "$T/ctok", "db": "$T/ctl.db", "control_period_s": 0.5, "tiers": {"j1": 3},
 "openadr": {"poll_url": "$POLL", "poll_s": 1},
 "agents": [{"name": "n1", "url": "http://127.0.0.1:$(cat "$T/a.port")", "token_file": "$T/atok"}]}
EOF
# the grid's own event first, through the webhook: scheduled for 2099
KEEP='{"id":"keep-1","objectType":"EVENT","modificationDateTime":"2026-01-01T00:00:00Z","intervalPeriod":{"start":"2099-01-01T00:00:00Z","duration":"PT1H"},"intervals":[{"id":0,"payloads":[{"type":"SIMPLE","values":[2]}]}]}'
start_daemon controller "$T/ctl.log" "$T/c.port" "$CTL" --config "$T/ctl.json" --port-file "$T/c.port"
URL=http://127.0.0.1:$DPORT
post() { CODE=$(curl -s -m 10 -o "$T/body" -w '%{http_code}' -H "Authorization: Bearer $CTOK" -H 'Content-Type: application/json' --data-binary "$1" "$URL/openadr3/events"); }
post "$KEEP"
[ "$CODE" = 200 ] || { cat "$T/body" >&2; fail "keep-1: HTTP $CODE"; }; ok
contains "$T/body" '"result":"applied"'
malformed() { metric "$URL" 'pfi_ctl_openadr_rejected_total{reason="malformed"}'; }
wait_for 60 "the flood counted" '[ "$(malformed)" = "$N" ]'
wait_for 30 "a poll after the flood" '[ "$(cat "$T/vtn.port.gets")" -ge 2 ]'
[ "$(malformed)" = "$N" ] || fail "malformed counted $(malformed), expected $N"; ok
# logged: the first 20 of the minute
n=$(grep -c 'OpenADR event flood-[0-9]* (poll): not acted on (malformed)' "$T/ctl.log")
[ "$n" = 20 ] || fail "$n rejection lines logged, expected 20"; ok
# the book: full once, 512 forgotten, keep-1 not among them
[ "$(grep -c 'OpenADR: 4096 event ids known, the bound: 512 forgotten to make room' "$T/ctl.log")" = 1 ] ||
  { grep 'event ids known' "$T/ctl.log" >&2; fail "the book's bound not reached once"; }; ok
post "$KEEP"
[ "$CODE" = 200 ] || { cat "$T/body" >&2; fail "keep-1 again: HTTP $CODE"; }; ok
contains "$T/body" '"result":"unchanged"'
[ "$(grep -c 'OpenADR event keep-1 (webhook): 1 interval scheduled' "$T/ctl.log")" = 1 ] || fail "keep-1 scheduled anew"; ok
curl -s -m 5 "$URL/v1/events/keep-1" | grep -q '"status":"scheduled"' || fail "keep-1 not scheduled"; ok
curl -s -m 5 "$URL/healthz" | grep -q '"ok":true' || fail "healthz after the flood"; ok
done_ok
