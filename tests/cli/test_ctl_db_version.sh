#!/bin/sh
# test_ctl_db_version.sh — the controller's database carries its format
# version (SQLite user_version): a new database is marked 4, a database from
# before versions were kept (0) is opened and marked 4, a format-1 one gets
# format 2's columns (issue 30), format 3's job_points table (issue 31) and
# format 4's announced_t column (issue 41) with its events kept, and one
# from a newer controller (5) is refused at start with a one-line error
# naming the file and the version, exit non-zero, without being changed.
. "$SRC/tests/cli/lib.sh"
: "${PFI_AGENT:?}"
CTL=${PFI_CONTROLLER_BIN:-$(dirname "$PFI_AGENT")/pfi-controller}
new_token "$T/atok" "$T/ctok"
kill_daemons_on_exit
uv() { python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('PRAGMA user_version').fetchone()[0])" "$1"; }
setuv() { python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('PRAGMA user_version=%d' % int(sys.argv[2])); c.commit()" "$1" "$2"; }
conf() {
  cat >"$T/ctl.json" <<EOF2
{"listen": "127.0.0.1:0", "token_file": "$T/ctok", "db": "$1", "control_period_s": 5,
 "agents": [{"name": "n1", "url": "http://127.0.0.1:9", "token_file": "$T/atok"}]}
EOF2
}
# new, then pre-versioning (0): marked 4 once the controller is up
for case in new old; do
  db="$T/$case.db"
  [ "$case" = old ] && { setuv "$db" 0; [ "$(uv "$db")" = 0 ] || fail "setup"; }
  conf "$db"
  rm -f "$T/c.port"
  start_daemon controller "$T/$case.log" "$T/c.port" "$CTL" --config "$T/ctl.json" --port-file "$T/c.port"
  [ "$(uv "$db")" = 4 ] || fail "$case database: user_version $(uv "$db"), expected 4"; ok
  stop_daemon "$DPID"
done
# format 1 (before issue 30): the events table gets the baseline's source
# and the operators' columns, the job_points table, its events still load, marked 3
db="$T/v1.db"
python3 - "$db" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.execute("CREATE TABLE events(id TEXT PRIMARY KEY, json TEXT NOT NULL, source TEXT, status TEXT NOT NULL,"
          " baseline_w REAL, target_w REAL, ramp_s REAL, ramp_down_s REAL, reached_t REAL)")
c.execute("INSERT INTO events VALUES('old-1', '{\"id\":\"old-1\",\"start\":\"2030-01-01T00:00:00Z\","
          "\"duration_s\":600,\"target_kw\":5}', 'api', 'scheduled', NULL, NULL, 0, 0, NULL)")
c.execute("PRAGMA user_version=1")
c.commit()
PY
conf "$db"
rm -f "$T/c.port"
start_daemon controller "$T/v1.log" "$T/c.port" "$CTL" --config "$T/ctl.json" --port-file "$T/c.port"
[ "$(uv "$db")" = 4 ] || fail "format-1 database: user_version $(uv "$db"), expected 4"; ok
python3 -c "import sqlite3,sys; sqlite3.connect(sys.argv[1]).execute('SELECT count(*) FROM job_points').fetchone()" "$db" ||
  fail "format-1 database: no job_points table"; ok
cols=$(python3 -c "import sqlite3,sys; print(','.join(r[1] for r in sqlite3.connect(sys.argv[1]).execute('PRAGMA table_info(events)')))" "$db")
case "$cols" in *baseline_source,created_by,changed_by,cancelled_by,announced_t) ok ;; *) fail "columns: $cols" ;; esac
curl -s -m 5 "http://127.0.0.1:$DPORT/v1/events/old-1" | grep -q '"status":"scheduled"' || fail "old-1 not loaded"; ok
stop_daemon "$DPID"
# newer: refused, unchanged
db="$T/newer.db"
setuv "$db" 5
conf "$db"
rc=0
timeout 30 "$CTL" --config "$T/ctl.json" --port-file "$T/n.port" >"$T/newer.out" 2>&1 || rc=$?
[ $rc -ne 0 ] && [ $rc -ne 124 ] || { cat "$T/newer.out" >&2; fail "a newer database was not refused (exit $rc)"; }; ok
grep -q "newer.db: format_version 5 is newer than this controller's (4)" "$T/newer.out" ||
  { cat "$T/newer.out" >&2; fail "no one-line error naming the file and the version"; }; ok
[ "$(uv "$db")" = 5 ] || fail "the newer database was changed"; ok
[ ! -e "$T/n.port" ] || fail "a refused controller wrote its port file"; ok
done_ok
