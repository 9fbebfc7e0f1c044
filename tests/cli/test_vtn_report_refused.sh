#!/bin/sh
# test_vtn_report_refused.sh — reports interval by interval, and a refused
# one: a REPORT the VTN refuses with a 4xx is logged, counted
# (pfi_ctl_openadr_reports_refused_total) and not sent again, while the VEN
# goes on polling (issue 16: "a 4xx answer is not retried but logged and
# counted"); an event's report interval is reported once it is over, while
# the event still runs, each interval in a REPORT of its own. The VTN is a
# small python3 fixture that answers the token, registration and polling
# requests as a VTN does, accepts the reports of events "ok-*" and refuses
# the others with 400; Prism (test_vtn_prism.sh) cannot be made to refuse
# one.
. "$SRC/tests/cli/lib.sh"
: "${PFI_AGENT:?}"
CTL=${PFI_CONTROLLER_BIN:-$(dirname "$PFI_AGENT")/pfi-controller}
new_token "$T/atok" "$T/ctok"
CTOK=$(cat "$T/ctok")
printf 'pfi-ven-client\n' >"$T/cid"
printf 'pfi-ven-secret\n' >"$T/csecret"
chmod 600 "$T/cid" "$T/csecret"
kill_daemons_on_exit
cat >"$T/vtn.py" <<'PY'
import http.server, json, os, sys
portfile, countdir = sys.argv[1], sys.argv[2]
def bump(name):
    p = countdir + "/" + name
    try: n = int(open(p).read())
    except FileNotFoundError: n = 0
    open(p, "w").write(str(n + 1))
class H(http.server.BaseHTTPRequestHandler):
    def reply(self, code, obj):
        b = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)
    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n)
    def do_GET(self):
        path = self.path.split("?")[0]
        if path == "/events": bump("events"); self.reply(200, [])
        elif path in ("/vens", "/subscriptions"): self.reply(200, [])
        # the events this test sends to the webhook exist at the VTN (it
        # lists none: they are not in the VEN's program), so the VEN keeps them
        elif path.startswith("/events/"): self.reply(200, {"id": path[8:], "objectType": "EVENT"})
        else: self.reply(404, {"title": "Not Found", "status": 404})
    def do_POST(self):
        self.last_body = self.body()
        path = self.path.split("?")[0]
        if path == "/auth/token":
            self.reply(200, {"access_token": "tok-1", "token_type": "Bearer", "expires_in": 3600})
        elif path == "/vens": self.reply(201, {"id": "ven-1", "objectType": "VEN", "venName": "pfi-test-ven"})
        elif path == "/subscriptions": self.reply(201, {"id": "sub-1", "objectType": "SUBSCRIPTION"})
        elif path == "/reports":
            r = json.loads(self.last_body or b"{}")
            n_ok = len(open(countdir + "/ok_types").readlines()) if os.path.exists(countdir + "/ok_types") else 0
            # openleadr-rs keeps a unique index on reportName: a second report
            # of the same name is 409 Conflict (migrations/..._initial_scheme.sql)
            names = countdir + "/names"
            seen = open(names).read().split("\n") if os.path.exists(names) else []
            if r.get("reportName") is not None and r.get("reportName") in seen:
                bump("conflicts"); self.reply(409, {"title": "Conflict", "status": 409, "detail": "reportName taken"}); return
            if r.get("reportName") is not None: open(names, "a").write(r["reportName"] + "\n")
            if str(r.get("eventID", "")).startswith("ok-"):
                bump("ok_reports")
                iv = r["resources"][0]["intervals"]
                if r["eventID"] == "ok-long":
                    open(countdir + "/ok_intervals", "a").write(" ".join("%s@%s" % (x["id"], x["intervalPeriod"]["start"]) for x in iv) + "\n")
                types = sorted(p["type"] for p in iv[0]["payloads"])
                desc = sorted(d["payloadType"] for d in r["payloadDescriptors"])
                open(countdir + "/ok_types", "a").write("%s %s %s\n" % (r["eventID"], ",".join(types), ",".join(desc)))
                self.reply(201, {"id": "rep-%d" % (n_ok + 1), "objectType": "REPORT"})
            else:
                bump("reports"); self.reply(400, {"title": "Bad Request", "status": 400, "detail": "refused by the fixture"})
        else: self.reply(404, {"title": "Not Found", "status": 404})
    def log_message(self, *a): pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
open(portfile + ".tmp", "w").write(str(s.server_address[1]))
import os; os.rename(portfile + ".tmp", portfile)
s.serve_forever()
PY
mkdir "$T/counts"
start_daemon "fixture VTN" "$T/vtn.log" "$T/vtn.port" python3 "$T/vtn.py" "$T/vtn.port" "$T/counts"
VTN=http://127.0.0.1:$DPORT
start_daemon agent "$T/a.log" "$T/a.port" "$PFI_AGENT" --backend "sim:gpus=4,job=j1:moe-ft-qwen30ba3b-x8@0-3,load=0,steplogs=$T,state=$T/hw.json" \
  --listen 127.0.0.1:0 --port-file "$T/a.port" --token-file "$T/atok" --state-file "$T/a.state" --interval 0.5 --log "$T/a.log"
AP=$DPORT
cat >"$T/ctl.json" <<EOF
{"listen": "127.0.0.1:0", "token_file": "$T/ctok", "db": "$T/ctl.db", "control_period_s": 0.5,
 "baseline_window_s": 2, "tiers": {"j1": 3},
 "openadr": {"vtn_url": "$VTN", "token_url": "$VTN/auth/token",
             "client_id_file": "$T/cid", "client_secret_file": "$T/csecret",
             "ven_name": "pfi-test-ven", "poll_s": 1, "report_interval_s": 2},
 "agents": [{"name": "n1", "url": "http://127.0.0.1:$AP", "token_file": "$T/atok"}]}
EOF
start_daemon controller "$T/ctl.log" "$T/c.port" "$CTL" --config "$T/ctl.json" --port-file "$T/c.port"
URL=http://127.0.0.1:$DPORT
wait_for 30 "the VEN to register" 'grep -qF "VTN: registered as VEN pfi-test-ven (id ven-1)" "$T/ctl.log"'; ok
S=$(date -u -d "@$(( $(date +%s) + 1 ))" +%Y-%m-%dT%H:%M:%SZ)
c=$(curl -s -o "$T/body" -w '%{http_code}' -m 5 -X POST -H "Authorization: Bearer $CTOK" -H 'Content-Type: application/json' \
  --data-binary '{"objectType":"EVENT","id":"ev-refused","intervalPeriod":{"start":"'$S'","duration":"PT2S"},"intervals":[{"id":0,"payloads":[{"type":"IMPORT_CAPACITY_LIMIT","values":[1.5]}]}]}' \
  "$URL/openadr3/events")
[ "$c" = 200 ] || { cat "$T/body" >&2; fail "webhook event: HTTP $c"; }; ok
wait_for 60 "the refused report" 'grep -qF "warning: VTN POST /reports for event ev-refused#0: HTTP 400: refused, not sent again; the VTN said: {" "$T/ctl.log"'; ok
contains "$T/ctl.log" "refused by the fixture"
[ "$(cat "$T/counts/reports")" = 1 ] || fail "reports sent: $(cat "$T/counts/reports")"; ok
# the VEN goes on: five more polls, and still one POST /reports
polls=$(cat "$T/counts/events")
wait_for 30 "five more polls" '[ "$(cat "$T/counts/events")" -ge $((polls + 5)) ]'; ok
[ "$(cat "$T/counts/reports")" = 1 ] || fail "a refused report was sent again ($(cat "$T/counts/reports") times)"; ok
m=$(curl -s -m 5 "$URL/metrics")
printf '%s\n' "$m" | grep -qx 'pfi_ctl_openadr_reports_refused_total 1' ||
  { printf '%s\n' "$m" | grep refused >&2; fail "refused reports not counted"; }; ok
# interval by interval: a 6 s event, 2 s report intervals; interval 0 is
# reported (and accepted) while the event still runs
S=$(date -u -d "@$(( $(date +%s) + 1 ))" +%Y-%m-%dT%H:%M:%SZ)
c=$(curl -s -o "$T/body" -w '%{http_code}' -m 5 -X POST -H "Authorization: Bearer $CTOK" -H 'Content-Type: application/json' \
  --data-binary '{"objectType":"EVENT","id":"ok-long","intervalPeriod":{"start":"'$S'","duration":"PT6S"},"intervals":[{"id":0,"payloads":[{"type":"IMPORT_CAPACITY_LIMIT","values":[1.5]}]}]}' \
  "$URL/openadr3/events")
[ "$c" = 200 ] || { cat "$T/body" >&2; fail "webhook event ok-long: HTTP $c"; }; ok
wait_for 30 "interval 0 of ok-long reported" 'grep -qF "VTN: report for event ok-long#0 accepted (report " "$T/ctl.log"'; ok
st=$(curl -s -m 5 "$URL/v1/events/ok-long" | sed -n 's/.*"status": *"\([a-z]*\)".*/\1/p')
[ "$st" = active ] || fail "interval 0 was reported only once the event was $st"; ok
wait_for 30 "ok-long done and fully reported" 'grep -qF "VTN: report for event ok-long#2 accepted (report " "$T/ctl.log"'; ok
# one REPORT per interval, each carrying only its own interval
# each report interval carries the event's own interval id (0: one interval),
# at its own start, 2 s apart (issue 29: the VTN's ids, not ours)
[ "$(sort "$T/counts/ok_intervals" | sed 's/@.*//' | tr '\n' ' ')" = "0 0 0 " ] || fail "interval ids reported: $(cat "$T/counts/ok_intervals")"; ok
[ "$(sort -u "$T/counts/ok_intervals" | wc -l)" = 3 ] || fail "report interval starts: $(cat "$T/counts/ok_intervals")"; ok
grep -qx "ok-long BASELINE,DELTA_USAGE,DEMAND BASELINE,DELTA_USAGE,DEMAND" "$T/counts/ok_types" ||
  fail "without reportDescriptors: $(grep ok-long "$T/counts/ok_types" | head -1)"; ok
# reportDescriptors: READING in KW is what pfi measures, READING in VOLTS and KVAR it cannot
S=$(date -u -d "@$(( $(date +%s) + 1 ))" +%Y-%m-%dT%H:%M:%SZ)
c=$(curl -s -o "$T/body" -w '%{http_code}' -m 5 -X POST -H "Authorization: Bearer $CTOK" -H 'Content-Type: application/json' \
  --data-binary '{"objectType":"EVENT","id":"ok-rd","intervalPeriod":{"start":"'$S'","duration":"PT2S"},"intervals":[{"id":0,"payloads":[{"type":"IMPORT_CAPACITY_LIMIT","values":[1.5]}]}],"reportDescriptors":[{"payloadType":"READING","units":"VOLTS"},{"payloadType":"READING","units":"KW"},{"payloadType":"READING","units":"KVAR"}]}' \
  "$URL/openadr3/events")
[ "$c" = 200 ] || { cat "$T/body" >&2; fail "webhook event ok-rd: HTTP $c"; }; ok
contains "$T/ctl.log" "OpenADR event ok-rd: reportDescriptors ask for READING in VOLTS, READING in KVAR: pfi cannot measure them, not reported"
wait_for 30 "ok-rd reported" 'grep -qF "VTN: report for event ok-rd#0 accepted (report " "$T/ctl.log"'; ok
grep -qx "ok-rd READING READING" "$T/counts/ok_types" || fail "with reportDescriptors: $(grep ok-rd "$T/counts/ok_types")"; ok
# every report under a name of its own (openleadr-rs answers a reused one 409)
[ ! -e "$T/counts/conflicts" ] || fail "a reportName sent twice (openleadr-rs: 409)"; ok
done_ok
