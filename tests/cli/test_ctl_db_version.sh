#!/bin/sh
# test_ctl_db_version.sh — the controller's database carries its format
# version (SQLite user_version): a new database is marked 1, a database from
# before versions were kept (0) is opened and marked 1, and one from a newer
# controller (2) is refused at start with a one-line error naming the file
# and the version, exit non-zero, without being changed.
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
# new, then pre-versioning (0): marked 1 once the controller is up
for case in new old; do
  db="$T/$case.db"
  [ "$case" = old ] && { setuv "$db" 0; [ "$(uv "$db")" = 0 ] || fail "setup"; }
  conf "$db"
  rm -f "$T/c.port"
  start_daemon controller "$T/$case.log" "$T/c.port" "$CTL" --config "$T/ctl.json" --port-file "$T/c.port"
  [ "$(uv "$db")" = 1 ] || fail "$case database: user_version $(uv "$db"), expected 1"; ok
  stop_daemon "$DPID"
done
# newer: refused, unchanged
db="$T/newer.db"
setuv "$db" 2
conf "$db"
rc=0
timeout 30 "$CTL" --config "$T/ctl.json" --port-file "$T/n.port" >"$T/newer.out" 2>&1 || rc=$?
[ $rc -ne 0 ] && [ $rc -ne 124 ] || { cat "$T/newer.out" >&2; fail "a newer database was not refused (exit $rc)"; }; ok
grep -q "newer.db: format_version 2 is newer than this controller's (1)" "$T/newer.out" ||
  { cat "$T/newer.out" >&2; fail "no one-line error naming the file and the version"; }; ok
[ "$(uv "$db")" = 2 ] || fail "the newer database was changed"; ok
[ ! -e "$T/n.port" ] || fail "a refused controller wrote its port file"; ok
done_ok
