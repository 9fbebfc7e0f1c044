#!/bin/sh
# test_vtn_oversized_page.sh — a VTN page longer than the limit asked is
# refused whole (issue 41 (B): a 60,000-event page was parsed and booked,
# holding the control loop's lock for seconds). A python3 fixture VTN
# ignores the poller's limit=50 and lists 3,000 events: the controller
# books none of them, logs one line naming the page's size and the VTN,
# and counts it (pfi_ctl_openadr_rejected_total{reason="page"}); the
# controller keeps answering meanwhile. The longest hold of the lock by a
# poll's booking is exported (pfi_ctl_lock_hold_max_seconds) and printed.
. "$SRC/tests/cli/lib.sh"
: "${PFI_AGENT:?}"
CTL=${PFI_CONTROLLER_BIN:-$(dirname "$PFI_AGENT")/pfi-controller}
new_token "$T/atok" "$T/ctok"
printf 'pfi-ven-client\n' >"$T/cid"
printf 'pfi-ven-secret\n' >"$T/csecret"
chmod 600 "$T/cid" "$T/csecret"
kill_daemons_on_exit
cat >"$T/vtn.py" <<'PY'
import http.server, json, os, sys
portfile, n = sys.argv[1], int(sys.argv[2])
PAGE = json.dumps([{"id": "big-%d" % k, "objectType": "EVENT", "programID": "p1",
                    "modificationDateTime": "2026-01-01T00:00:00Z",
                    "intervalPeriod": {"start": "2099-01-01T00:00:00Z", "duration": "PT1H"},
                    "intervals": [{"id": 0, "payloads": [{"type": "SIMPLE", "values": [1]}]}]}
                   for k in range(n)]).encode()
class H(http.server.BaseHTTPRequestHandler):
    def reply(self, code, body):
        b = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)
    def do_GET(self):
        path = self.path.split("?")[0]
        if path == "/auth/server": self.reply(200, {"tokenURL": "http://127.0.0.1:%d/auth/token" % self.server.server_address[1]})
        elif path == "/events": self.reply(200, PAGE)  # whatever limit was asked
        elif path == "/vens": self.reply(200, [])
        else: self.reply(404, {"title": "Not Found", "status": 404})
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        path = self.path.split("?")[0]
        if path == "/auth/token": self.reply(200, {"access_token": "tok-1", "expires_in": 3600, "token_type": "Bearer"})
        elif path == "/vens": self.reply(201, {"id": "ven-1", "objectType": "VEN", "venName": "pfi-test-ven"})
        else: self.reply(404, {"title": "Not Found", "status": 404})
    def log_message(self, *a): pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
open(portfile + ".tmp", "w").write(str(s.server_address[1]))
os.rename(portfile + ".tmp", portfile)
s.serve_forever()
PY
start_daemon "fixture VTN" "$T/vtn.log" "$T/vtn.port" python3 "$T/vtn.py" "$T/vtn.port" 3000
VTN=http://127.0.0.1:$DPORT
cat >"$T/ctl.json" <<JSON
{"listen": "127.0.0.1:0", "token_file": "$T/ctok", "db": "$T/ctl.db", "control_period_s": 0.5,
 "openadr": {"vtn_url": "$VTN", "client_id_file": "$T/cid", "client_secret_file": "$T/csecret",
             "ven_name": "pfi-test-ven", "poll_s": 1},
 "agents": [{"name": "n1", "url": "http://127.0.0.1:9", "token_file": "$T/atok"}]}
JSON
start_daemon controller "$T/ctl.log" "$T/c.port" "$CTL" --config "$T/ctl.json" --port-file "$T/c.port"
URL=http://127.0.0.1:$DPORT
wait_for 60 "the oversized page refused" 'grep -q "OpenADR poll: a page of 3000 events" "$T/ctl.log"'
contains "$T/ctl.log" "from the VTN $VTN, which was asked for at most 50: refused whole"
num "$(metric "$URL" 'pfi_ctl_openadr_rejected_total{reason="page"}')" ">=" 1 || fail "the page not counted"; ok
curl -s -m 10 "$URL/v1/events" >"$T/events"
lacks "$T/events" "big-"
c=$(curl -s -m 10 -o /dev/null -w '%{http_code}' "$URL/healthz"); [ "$c" = 200 ] || fail "/healthz: HTTP $c"; ok
h=$(metric "$URL" 'pfi_ctl_lock_hold_max_seconds{holder="openadr_ingest"}')
[ -n "$h" ] || fail "pfi_ctl_lock_hold_max_seconds is not exported"; ok
echo "figure: longest lock hold booking a poll: $h s"
done_ok
