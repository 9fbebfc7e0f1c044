#!/bin/sh
# test_generation_store.sh — a lease generation goes out only once stored
# (issue 43): an agent mid-event is taken by another writer (a PUT one
# above its generation_max); the controller's next decision raises its
# generation for that agent, but the period's transaction cannot commit (the
# database is held locked by another process): the push carries the stored
# generation (the agent refuses it, 409) and the log says the new one was not
# stored; once the lock is gone the raise is stored and carried, the agent
# is the controller's again, and pfi_ctl_generation_changes_total counts it.
. "$SRC/tests/cli/lib.sh"
: "${PFI_AGENT:?}"
CTL=${PFI_CONTROLLER_BIN:-$(dirname "$PFI_AGENT")/pfi-controller}
new_token "$T/atok" "$T/ctok"
ATOK=$(cat "$T/atok")
kill_daemons_on_exit
HW=$T/hw.json
start_daemon agent "$T/a.log" "$T/a.port" "$PFI_AGENT" \
  --backend "sim:gpus=4,job=j1:moe-ft-qwen30ba3b-x8@0-3,load=0,steplogs=$T,state=$HW" \
  --listen 127.0.0.1:0 --port-file "$T/a.port" --token-file "$T/atok" --state-file "$T/a.state" \
  --interval 0.5 --log "$T/a.log"
AP=$DPORT
cat >"$T/ctl.json" <<EOF
{"listen": "127.0.0.1:0", "token_file": "$T/ctok", "db": "$T/ctl.db", "control_period_s": 0.5,
 "baseline_window_s": 2, "ramp_s": 0, "ramp_down_s": 0, "lease_s": 30, "tiers": {"j1": 3},
 "agents": [{"name": "n1", "url": "http://127.0.0.1:$AP", "token_file": "$T/atok"}]}
EOF
start_daemon controller "$T/ctl.log" "$T/c.port" "$CTL" --config "$T/ctl.json" --port-file "$T/c.port"
URL=http://127.0.0.1:$DPORT
gen_max() { curl -s -m 5 "http://127.0.0.1:$AP/v1/node" | sed -n 's/.*"generation_max":\([0-9]*\).*/\1/p'; }
holder() { curl -s -m 5 "http://127.0.0.1:$AP/v1/node" | grep -q "\"controller\":\"$1"; }

# an event now: the controller holds the agent's caps
c=$(curl -s -o "$T/body" -w '%{http_code}' -m 5 -X POST -H "Authorization: Bearer $(cat "$T/ctok")" \
  --data-binary "{\"id\":\"cut\",\"start\":\"$(date -u +%Y-%m-%dT%H:%M:%SZ)\",\"duration_s\":3600,\"reduction_pct\":30}" "$URL/v1/events")
[ "$c" = 201 ] || { cat "$T/body" >&2; fail "event: HTTP $c"; }; ok
wait_for 30 "the controller's caps" 'num "$(hw_cap 0)" "<" 700 && holder pfi-controller'; ok
G0=$(gen_max)

# another process holds the database locked (a write lock, not released)
python3 - "$T/ctl.db" "$T/locked" <<'PY' >"$T/lock.log" 2>&1 &
import sqlite3, sys, time, os
db = sqlite3.connect(sys.argv[1], timeout=30, isolation_level=None)
db.execute("BEGIN EXCLUSIVE")
open(sys.argv[2], "w").close()
while os.path.exists(sys.argv[2]):
    time.sleep(0.05)
db.execute("ROLLBACK")
PY
LPID=$!; PIDS="$PIDS $LPID"
wait_for 30 "the database locked" '[ -e "$T/locked" ]'; ok

# another writer takes the agent: one above its generation_max
G=$((G0 + 1))
c=$(curl -s -o "$T/put" -w '%{http_code}' -m 5 -X PUT -H "Authorization: Bearer $ATOK" \
  --data-binary "{\"lease_s\":30,\"controller\":\"intruder\",\"generation\":$G,\"gpus\":[]}" "http://127.0.0.1:$AP/v1/caps")
[ "$c" = 200 ] || { cat "$T/put" >&2; fail "the intruder's PUT: HTTP $c"; }; ok
# the raise is decided but not stored: the push carries the stored one (refused)
wait_for 60 "the raise not stored" 'grep -q "warning: agent n1: generation $((G + 1)) not stored: the push carries $G0" "$T/ctl.log"'; ok
wait_for 30 "a push refused as stale" 'grep -q "rejected caps from controller pfi-controller.* generation $G0" "$T/a.log"'; ok
holder intruder || fail "the agent left the intruder without a stored generation"; ok
changes() { curl -s -m 5 "$URL/metrics" | awk '/^pfi_ctl_generation_changes_total\{/ {s += $NF} END {print s + 0}'; }
[ "$(changes)" = 0 ] || fail "a change counted while not stored: $(changes)"; ok

# the lock goes: the raise is stored, then carried
rm "$T/locked"
wait_for 60 "the raise stored and logged" 'grep -q "agent n1: generation $G0 -> " "$T/ctl.log"'; ok
wait_for 30 "the controller holding the agent again" 'holder pfi-controller'; ok
[ "$(gen_max)" -gt "$G" ] || fail "generation_max $(gen_max), expected above $G"; ok
stored=$(python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("SELECT generation FROM agent_generations WHERE agent=\"n1\"").fetchone()[0])' "$T/ctl.db")
[ "$stored" -gt "$G" ] || fail "stored generation $stored"; ok
num "$(changes)" ">=" 1 || fail "no generation change counted"; ok
done_ok
