#!/bin/sh
# test_vtn_mock_olrs.sh — pfi-controller's VEN against a VTN that answers as
# openleadr-rs does (tests/tools/mock_vtn.py: pages of at most 50, events
# in its wire forms, 403 to a token it no longer accepts, strict reports
# with a unique reportName and an existing eventID), issue 29:
#   - 121 events of the program in three pages (50, 50, 21), an event of
#     another program not asked for; every one of ours in /v1/events;
#   - "now" stored as 0001-01-01T00:00:00+00:00, until cancelled as
#     P9999Y0M0DT0H0M0S, the limit 1500.0 in the program's unit (W): 1.5 kW,
#     the caps lowered; the program changed to KW: its events read again
#     (9000.0 is then 9000 kW, not 9 kW);
#   - reports of the running event accepted by the strict VTN (each under a
#     name of its own, the VTN's own event id), none refused; one whose name
#     the VTN holds already is answered 409, asked for by name, found and
#     counted accepted (not refused);
#   - every token revoked: the next request answered 403, one new token,
#     the request retried, polling goes on;
#   - an event deleted at the VTN while a page of the listing fails (500
#     on skip=50) is kept; once a listing is complete and GET /events/{id}
#     answers 404, it is discarded; the running event too, its caps back.
. "$SRC/tests/cli/lib.sh"
: "${PFI_AGENT:?}"
CTL=${PFI_CONTROLLER_BIN:-$(dirname "$PFI_AGENT")/pfi-controller}
new_token "$T/atok" "$T/ctok"
printf 'pfi-ven-client\n' >"$T/cid"
printf 'pfi-ven-secret\n' >"$T/csecret"
chmod 600 "$T/cid" "$T/csecret"
kill_daemons_on_exit
V=$T/vtn
mkdir -p "$V/events" "$V/programs"
# the program (openleadr-wire's Program: objectType, descriptors tagged
# EVENT_PAYLOAD_DESCRIPTOR, +00:00 with milliseconds) declaring W
program() {
  printf '{"id":"prog-1","createdDateTime":"2026-07-01T08:00:00.776+00:00","modificationDateTime":"%s","objectType":"PROGRAM","programName":"flex","payloadDescriptors":[{"objectType":"EVENT_PAYLOAD_DESCRIPTOR","payloadType":"IMPORT_CAPACITY_LIMIT","units":"%s"}],"targets":[]}\n' \
    "$1" "$2" >"$V/programs/prog-1.json.tmp"
  mv "$V/programs/prog-1.json.tmp" "$V/programs/prog-1.json"
}
program "2026-07-01T08:00:00.776+00:00" W
# 120 future events and one running now, in openleadr-rs's forms: no
# objectType, "priority": null, "targets": [], full-form durations, +00:00
python3 - "$V/events" <<'PY'
import datetime, json, sys
d = sys.argv[1]
t0 = datetime.datetime(2030, 2, 1, tzinfo=datetime.timezone.utc)
def event(eid, prog, start, dur, kw):
    return {"id": eid, "createdDateTime": "2026-07-01T08:00:00.123456+00:00",
            "modificationDateTime": "2026-07-01T08:00:00.123456+00:00", "programID": prog,
            "eventName": None, "priority": None, "targets": [],
            "intervalPeriod": {"start": start, "duration": dur},
            "intervals": [{"id": 0, "payloads": [{"type": "IMPORT_CAPACITY_LIMIT", "values": [kw]}]}]}
def put(e):
    e = {k: v for k, v in e.items() if v is not None or k == "priority"}
    open("%s/%s.json" % (d, e["id"]), "w").write(json.dumps(e))
for i in range(120):
    put(event("olrs-%03d" % i, "prog-1", (t0 + datetime.timedelta(minutes=15 * i)).isoformat(),
              "P0Y0M0DT0H15M0S", 9000.0))
put(event("olrs-now", "prog-1", "0001-01-01T00:00:00+00:00", "P9999Y0M0DT0H0M0S", 1500.0))
put(event("other-prog", "prog-2", "2030-02-01T00:00:00+00:00", "P0Y0M0DT1H0M0S", 1.0))
PY
start_daemon "mock VTN" "$T/vtn.log" "$T/vtn.port" python3 "$SRC/tests/tools/mock_vtn.py" \
  --port-file "$T/vtn.port" --state "$V" --strict-reports --olrs-reports \
  --client-id pfi-ven-client --client-secret pfi-ven-secret
VTN=http://127.0.0.1:$DPORT
HW=$T/hw.json
start_daemon agent "$T/a.log" "$T/a.port" "$PFI_AGENT" --backend "sim:gpus=4,job=j1:moe-ft-qwen30ba3b-x8@0-3,load=0,steplogs=$T,state=$HW" \
  --listen 127.0.0.1:0 --port-file "$T/a.port" --token-file "$T/atok" --state-file "$T/a.state" --interval 0.5 --log "$T/a.log"
AP=$DPORT
cat >"$T/ctl.json" <<EOF
{"listen": "127.0.0.1:0", "token_file": "$T/ctok", "db": "$T/ctl.db", "control_period_s": 0.5,
 "baseline_window_s": 2, "ramp_s": 0, "ramp_down_s": 0, "lease_s": 30, "tiers": {"j1": 3},
 "openadr": {"version": "3.1", "vtn_url": "$VTN", "client_id_file": "$T/cid", "client_secret_file": "$T/csecret",
             "ven_name": "pfi-test-ven", "program_id": "prog-1", "poll_s": 1, "report_interval_s": 2},
 "agents": [{"name": "n1", "url": "http://127.0.0.1:$AP", "token_file": "$T/atok"}]}
EOF
start_daemon controller "$T/ctl.log" "$T/c.port" "$CTL" --config "$T/ctl.json" --port-file "$T/c.port"
URL=http://127.0.0.1:$DPORT
ev() { curl -s -m 5 "$URL/v1/events/$1" >"$T/ev"; }
ev_is() { curl -s -m 5 "$URL/v1/events/$1" | grep -q "\"status\":\"$2\""; }
listed() { curl -s -m 5 "$URL/v1/events" | grep -o '"id":"[a-z0-9-]*"' | grep -c '"id":"olrs-'; }

# ---- three pages of the program's events, the other program's not asked ----
wait_for 60 "the first complete poll" 'grep -qF "VTN: polled events: 121 listed" "$T/ctl.log"'; ok
# the first page without skip (its default, 0), then skip=50 and skip=100
for q in "limit=50" "skip=50&limit=50" "skip=100&limit=50"; do
  grep -qF "GET /events?programID=prog-1&$q -> 200" "$T/vtn.log" ||
    { grep "GET /events" "$T/vtn.log" | head -5 >&2; fail "no page $q"; }; ok
done
grep -qF "skip=150" "$T/vtn.log" && fail "a page asked for after a short one"; ok
grep "GET /events?" "$T/vtn.log" | grep -v "programID=prog-1" | head -1 | grep -q . && fail "a poll without programID=prog-1"; ok
wait_for 30 "121 events in /v1/events" '[ "$(listed)" = 121 ]'; ok
lacks "$T/ctl.log" "not acted on"
ev other-prog; contains "$T/ev" '"error"'
ev olrs-037; contains "$T/ev" '"status":"scheduled"'; contains "$T/ev" '"start":"2030-02-01T09:15:00Z"'; contains "$T/ev" '"duration_s":900'
grep -Eq '"target_kw":9(\.0)?[,}]' "$T/ev" || fail "9000.0 W is not 9 kW: $(cat "$T/ev")"; ok

# ---- "now" (+00:00), until cancelled (P9999Y0M0DT0H0M0S), units from the program ----
wait_for 30 "olrs-now active" 'ev_is olrs-now active'
ev olrs-now; contains "$T/ev" '"open_ended":true'
grep -Eq '"target_kw":1.5[,}]' "$T/ev" || fail "1500.0 W is not 1.5 kW: $(cat "$T/ev")"; ok
contains "$T/ctl.log" "VTN: program prog-1: payloadDescriptors read"
wait_for 30 "the caps lowered" 'num "$(hw_cap 0)" "<" 700'; ok

# ---- reports of the running event: accepted by the strict VTN ----
wait_for 60 "two reports of olrs-now accepted" '[ -e "$V/reports/002.json" ]'; ok
[ ! -d "$V/refused" ] || [ -z "$(ls "$V/refused")" ] || { cat "$V/refused"/* >&2; grep -- '-> 4' "$T/vtn.log" >&2; fail "a report refused"; }; ok
contains "$V/reports/001.json" '"eventID":"olrs-now"'
n1=$(sed 's/.*"reportName":"\([^"]*\)".*/\1/' "$V/reports/001.json")
n2=$(sed 's/.*"reportName":"\([^"]*\)".*/\1/' "$V/reports/002.json")
[ -n "$n1" ] && [ "$n1" != "$n2" ] || fail "report names: '$n1' '$n2'"; ok
# a report whose name is at the VTN already (sent before: by a dead leader, or
# answered but the answer lost): openleadr-rs answers 409 on the unique name;
# the controller asks for it by name, finds it and counts it accepted
python3 - "$V/reports/seeded.json" <<'PY2'
import json, sys
json.dump({"id": "seeded-5", "eventID": "olrs-now", "clientName": "pfi-test-ven", "reportName": "pfi olrs-now#5",
           "createdDateTime": "2026-07-01T08:00:00Z", "modificationDateTime": "2026-07-01T08:00:00Z",
           "objectType": "REPORT", "payloadDescriptors": [], "resources": []}, open(sys.argv[1], "w"))
PY2
wait_for 60 "the report of the taken name found" 'grep -q "report for event olrs-now#5 found at the VTN (report seeded-5)" "$T/ctl.log"'
grep -q "POST /reports -> 409" "$T/vtn.log" || fail "the VTN did not answer 409 to the taken name"; ok
grep -q "GET /reports?eventID=olrs-now&clientName=pfi-test-ven" "$T/vtn.log" || fail "not asked for by name"; ok
lacks "$T/ctl.log" "olrs-now#5: HTTP 409: refused"
wait_for 30 "the next report accepted" 'grep -q "report for event olrs-now#6 accepted" "$T/ctl.log"'
lacks "$T/ctl.log" "refused, not sent again"

# ---- every token revoked: 403, one new token, the request retried ----
fetched=$(grep -c "POST /auth/token -> 200" "$T/vtn.log")
echo '*' >"$V/revoked"
wait_for 30 "a 403 and one retry" 'grep -qF "VTN: a request was refused (401 or 403): new token, request retried once" "$T/ctl.log"'; ok
grep -q -- "-> 403" "$T/vtn.log" || fail "the VTN never answered 403"; ok
[ "$(grep -c "POST /auth/token -> 200" "$T/vtn.log")" -gt "$fetched" ] || fail "no new token fetched"; ok
polls=$(grep -c "GET /events?.* -> 200" "$T/vtn.log")
wait_for 30 "polling to go on" '[ "$(grep -c "GET /events?.* -> 200" "$T/vtn.log")" -ge $((polls + 3)) ]'; ok

# ---- a deletion while a page fails half-way: nothing discarded ----
echo 50 >"$V/fail_skip"
fails=$(grep -c "skip=50.* -> 500" "$T/vtn.log")
rm "$V/events/olrs-010.json"
wait_for 30 "two polls failing at skip=50" '[ "$(grep -c "skip=50.* -> 500" "$T/vtn.log")" -ge $((fails + 2)) ]'; ok
ev olrs-010; contains "$T/ev" '"status":"scheduled"'
lacks "$T/ctl.log" "/events/olrs-010: 404"; lacks "$T/vtn.log" "GET /events/olrs-010 "
# the listing is complete again: olrs-010 (404 at the VTN) is discarded
rm "$V/fail_skip"
wait_for 30 "olrs-010 discarded" 'grep -qF "GET /events/olrs-010: 404): discarded" "$T/ctl.log"'; ok
ev olrs-010; contains "$T/ev" '"deleted at the VTN"'
grep -q "GET /events/olrs-010 -> 404" "$T/vtn.log" || fail "olrs-010 not asked for before it was discarded"; ok
[ "$(listed)" = 121 ] || fail "the others lost: $(listed)"; ok
ev olrs-011; contains "$T/ev" '"status":"scheduled"'

# ---- the running event deleted at the VTN: discarded, caps back ----
num "$(hw_cap 0)" "<" 700 || fail "the caps not lowered: $(hw_cap 0)"; ok
rm "$V/events/olrs-now.json"
wait_for 30 "olrs-now discarded" 'ev olrs-now; grep -qF "\"deleted at the VTN\"" "$T/ev"'; ok
wait_for 30 "the caps back at the ceiling" 'num "$(hw_cap 0)" "==" 700'; ok

# ---- the program's unit changes: its events read again ----
program "2026-07-02T08:00:00.000+00:00" KW
wait_for 30 "the program's change followed" 'grep -qF "VTN: program prog-1: payloadDescriptors changed: its events are read again" "$T/ctl.log"'; ok
wait_for 30 "olrs-037 at 9000 kW" 'ev olrs-037; grep -Eq "\"target_kw\":9000(\\.0)?[,}]" "$T/ev"'; ok
ev olrs-037; contains "$T/ev" '"status":"scheduled"'; contains "$T/ev" '"start":"2030-02-01T09:15:00Z"'
done_ok
