#!/bin/sh
# test_vtn_log_lines.sh — strings from a VTN cannot forge log lines: a VTN
# answer body (the token endpoint's token_type) and an event field polled
# from the VTN (a reportDescriptors payloadType) carrying
# "\n<0>ALARM: ..." each give one log line, with the newline escaped, in
# the journal's format (stderr named by JOURNAL_STREAM: "<N>message") and
# in a log file; no line of either starts with "<0>" or "ALARM:". The VTN
# is a small python3 fixture: its token endpoint first answers a
# token_type with the forged line (the VEN retries), then a good token;
# GET /events lists one event whose reportDescriptors carry the forged
# line. (docs/security.md: every log line is escaped by the daemons' log
# writer, pfi_log_escape.)
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
portfile = sys.argv[1]
FORGED = "\n<0>ALARM: forged"
tokens = [0]
EVENT = {"id": "ev-forge", "objectType": "EVENT", "modificationDateTime": "2026-01-01T00:00:00Z",
         "intervalPeriod": {"start": "2099-01-01T00:00:00Z", "duration": "PT1H"},
         "intervals": [{"id": 0, "payloads": [{"type": "SIMPLE", "values": [1]}]}],
         "reportDescriptors": [{"payloadType": "X" + FORGED, "units": "VOLTS"}]}
class H(http.server.BaseHTTPRequestHandler):
    def reply(self, code, obj):
        b = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)
    def do_GET(self):
        path = self.path.split("?")[0]
        if path == "/auth/server": self.reply(200, {"tokenURL": "http://127.0.0.1:%d/auth/token" % self.server.server_address[1]})
        elif path == "/events": self.reply(200, [EVENT])
        elif path.startswith("/events/"): self.reply(200, EVENT)
        elif path == "/vens": self.reply(200, [])
        else: self.reply(404, {"title": "Not Found", "status": 404})
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        path = self.path.split("?")[0]
        if path == "/auth/token":
            tokens[0] += 1
            self.reply(200, {"access_token": "tok-1", "expires_in": 3600,
                             "token_type": "x" + FORGED if tokens[0] == 1 else "Bearer"})
        elif path == "/vens": self.reply(201, {"id": "ven-1", "objectType": "VEN", "venName": "pfi-test-ven"})
        else: self.reply(404, {"title": "Not Found", "status": 404})
    def log_message(self, *a): pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
open(portfile + ".tmp", "w").write(str(s.server_address[1]))
os.rename(portfile + ".tmp", portfile)
s.serve_forever()
PY
start_daemon "fixture VTN" "$T/vtn.log" "$T/vtn.port" python3 "$T/vtn.py" "$T/vtn.port"
VTN=http://127.0.0.1:$DPORT

# run_ctl NAME [LOG-KEY]: a controller of this VTN (no token_url: the VTN
# names it), logging to stderr ($T/NAME.err, the "journal") or to a file
run_ctl() {
  cat >"$T/$1.json" <<EOF
{"listen": "127.0.0.1:0", "token_file": "$T/ctok", "db": "$T/$1.db", "control_period_s": 0.5 ${2-},
 "openadr": {"vtn_url": "$VTN", "client_id_file": "$T/cid", "client_secret_file": "$T/csecret",
             "ven_name": "pfi-test-ven", "poll_s": 1},
 "agents": [{"name": "n1", "url": "http://127.0.0.1:9", "token_file": "$T/atok"}]}
EOF
  start_daemon "controller $1" "$T/$1.err" "$T/$1.port" "$CTL" --config "$T/$1.json" --port-file "$T/$1.port"
}
# one_line FILE FORGED-PART: the forged text is on exactly one line, escaped,
# and no line starts with "<0>" or "ALARM:"
one_line() {
  [ "$(grep -c "$2" "$1")" = 1 ] || { cat "$1" >&2; fail "$1: '$2' is not on exactly one line"; }; ok
  grep -q "$2"'\\n<0>ALARM: forged' "$1" || { cat "$1" >&2; fail "$1: '$2' without the escaped newline"; }; ok
  ! grep -q '^<0>\|^ALARM:' "$1" || { cat "$1" >&2; fail "$1: a forged line"; }; ok
}

# ---- the journal: stderr is the stream JOURNAL_STREAM names ----
: >"$T/j.err"
export JOURNAL_STREAM="$(stat -c '%d:%i' "$T/j.err")"
run_ctl j
unset JOURNAL_STREAM
wait_for 30 "the token_type warning" 'grep -q "token_type x" "$T/j.err"'
wait_for 30 "the event's reportDescriptors line" 'grep -q "reportDescriptors ask for X" "$T/j.err"'
one_line "$T/j.err" "token_type x"
one_line "$T/j.err" "reportDescriptors ask for X"
grep -q '^<4>warning: VTN registration: token endpoint .*token_type x\\n<0>ALARM' "$T/j.err" || { cat "$T/j.err" >&2; fail "the warning's priority"; }; ok
stop_daemon "$DPID"

# ---- a log file ----
run_ctl f ', "log": "'"$T/f.log"'"'
wait_for 30 "the event's reportDescriptors line in the file" 'grep -q "reportDescriptors ask for X" "$T/f.log"'
one_line "$T/f.log" "reportDescriptors ask for X"
done_ok
