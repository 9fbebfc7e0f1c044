#!/bin/sh
# test_openadr_first_bounded.sh — the stored first receipts of OpenADR
# events (oadr_first: what "now" meant for each id) are bounded (issue 41
# (B): a page of 60,000 events left 60,000 rows, refused or never booked
# ones included, and no row was ever deleted). Only a version that is
# applied leaves a row: an event refused as malformed, one that ended before
# it arrived and one for another VEN leave none. At start (and each minute)
# rows of ids with nothing scheduled or running that are older than a week
# go; a recent one, and the row of an event that is running, stay, and the
# running "now" event keeps its start through the restart.
. "$SRC/tests/cli/lib.sh"
: "${PFI_AGENT:?}"
CTL=${PFI_CONTROLLER_BIN:-$(dirname "$PFI_AGENT")/pfi-controller}
new_token "$T/atok" "$T/ctok"
CTOK=$(cat "$T/ctok")
kill_daemons_on_exit
cat >"$T/ctl.json" <<JSON
{"listen": "127.0.0.1:0", "token_file": "$T/ctok", "db": "$T/ctl.db", "control_period_s": 0.5,
 "openadr": {"ven_name": "pfi-test-ven"},
 "agents": [{"name": "n1", "url": "http://127.0.0.1:9", "token_file": "$T/atok"}]}
JSON
start_ctl() {
  start_daemon controller "$T/ctl.log" "$T/c.port" "$CTL" --config "$T/ctl.json" --port-file "$T/c.port"
  CP=$DPID URL=http://127.0.0.1:$DPORT
}
post() { # BODY EXPECTED-CODE
  CODE=$(curl -s -o "$T/body" -w '%{http_code}' -H "Authorization: Bearer $CTOK" -H 'Content-Type: application/json' --data-binary "$1" "$URL/openadr3/events")
  [ "$CODE" = "$2" ] || { cat "$T/body" >&2; fail "webhook: HTTP $CODE, expected $2"; }; ok
}
ev() { # ID START DURATION [TARGETS]
  printf '{"id":"%s","objectType":"EVENT","programID":"p1","modificationDateTime":"2026-01-01T00:00:00Z",%s"intervalPeriod":{"start":"%s","duration":"%s"},"intervals":[{"id":0,"payloads":[{"type":"IMPORT_CAPACITY_LIMIT","values":[5]}]}]}' "$1" "${4:-}" "$2" "$3"
}
rows() { python3 -c 'import sqlite3,sys; print(" ".join(r[0] for r in sqlite3.connect(sys.argv[1]).execute("SELECT event_id FROM oadr_first ORDER BY event_id")))' "$T/ctl.db"; }
start_ctl
post "$(ev later 2099-01-01T00:00:00Z PT1H)" 200
post "$(ev running 0001-01-01T00:00:00Z PT2H)" 200
post "$(ev ended 2020-01-01T00:00:00Z PT1H)" 200
post "$(ev elsewhere 2099-01-01T00:00:00Z PT1H '"targets":["another-ven"],')" 200
post '{"id":"malformed","objectType":"EVENT","programID":"p1","modificationDateTime":"2026-01-01T00:00:00Z","intervalPeriod":{"start":"2099-01-01T00:00:00Z","duration":"PT1H"}}' 400
[ "$(rows)" = "later running" ] || fail "oadr_first rows: '$(rows)', expected 'later running'"; ok
S0=$(curl -s "$URL/v1/events/running" | sed -n 's/.*"start":"\([^"]*\)".*/\1/p')
[ -n "$S0" ] || fail "the running event is not listed"; ok
stop_daemon "$CP" TERM
python3 - "$T/ctl.db" <<'PYEOF'
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1])
now = time.time()
db.execute("INSERT INTO oadr_first VALUES('old-gone', ?)", (now - 8 * 86400,))
db.execute("INSERT INTO oadr_first VALUES('recent', ?)", (now - 86400,))
db.commit()
PYEOF
start_ctl
wait_for 30 "the old row forgotten" 'grep -q "1 stored first receipt of events with nothing scheduled or running forgotten" "$T/ctl.log"'
[ "$(rows)" = "later recent running" ] || fail "oadr_first rows after the prune: '$(rows)'"; ok
post "$(ev running 0001-01-01T00:00:00Z PT2H)" 200
S1=$(curl -s "$URL/v1/events/running" | sed -n 's/.*"start":"\([^"]*\)".*/\1/p')
[ "$S1" = "$S0" ] || fail "the running event restarted: $S1, was $S0"; ok
done_ok
