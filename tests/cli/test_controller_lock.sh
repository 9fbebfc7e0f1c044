#!/bin/sh
# test_controller_lock.sh — one controller per database (issue 30; docs/deploy.md,
# "Standby"; src/daemon/controller/ctl_lock.c): with a controller running an
# event, a second one on the same database (another port) exits non-zero
# within 15 s with a one-line error naming the first (its pid, host and
# listen address, port included); the first keeps running, its event
# active and its row in the database unchanged, and the agent's lease
# still the first's. After the first stops (SIGTERM), a new one starts on
# the database and resumes the event; after that one is killed (SIGKILL:
# the kernel releases its flock) another starts too: the lock file left
# behind blocks nobody. A controller whose lock file cannot be opened
# exits naming the file. The lock is the database file's, not a path's: a
# symbolic or hard link to the database is refused too (issue 41), and the
# refusal says the holder still runs; both files are created 0600.
# A shared clock 20x faster (control period 5 s = 0.25 s).
. "$SRC/tests/cli/lib.sh"
: "${PFI_AGENT:?}"
CTL=${PFI_CONTROLLER_BIN:-$(dirname "$PFI_AGENT")/pfi-controller}
export PFI_TIME_SCALE=20 PFI_EPOCH=$(date +%s)
new_token "$T/atok" "$T/ctok"
CTOK=$(cat "$T/ctok")
start_daemon agent "$T/a.log" "$T/a.port" "$PFI_AGENT" \
  --backend "sim:name=n1,gpus=8,job=j1:moe-ft-qwen30ba3b-x8@0-7,load=0,state=$T/hw.json" \
  --listen 127.0.0.1:0 --port-file "$T/a.port" --token-file "$T/atok" --state-file "$T/a.state" \
  --interval 1 --log "$T/a.log"
AP=$DPORT
cat >"$T/ctl.json" <<EOF
{"listen": "127.0.0.1:0", "token_file": "$T/ctok", "db": "$T/ctl.db", "control_period_s": 5,
 "baseline_window_s": 10, "lease_s": 30,
 "agents": [{"name": "n1", "url": "http://127.0.0.1:$AP", "token_file": "$T/atok"}]}
EOF
start_ctl() { # NAME
  start_daemon "$1" "$T/$1.log" "$T/$1.port" "$CTL" --config "$T/ctl.json" --port-file "$T/$1.port"
  CP=$DPID; URL=http://127.0.0.1:$DPORT
}
ev_status() { curl -s -m 5 "$URL/v1/events/lock-ev" | sed -n 's/.*"status":"\([a-z]*\)".*/\1/p'; }
row() { sqlite3 "$T/ctl.db" "SELECT status, baseline_w, target_w, json FROM events WHERE id='lock-ev'"; }
gen_max() { curl -s -m 5 "http://127.0.0.1:$AP/v1/node" | sed -n 's/.*"generation_max":\([0-9]*\).*/\1/p'; }

# ---- the first controller, an event running ----
start_ctl ctl1
P1=$CP URL1=$URL
wait_counter 30 "$URL" pfi_ctl_cycles_total 3
CODE=$(curl -s -o "$T/body" -w '%{http_code}' -X POST -H "Authorization: Bearer $CTOK" \
  --data-binary '{"reduction_pct": 20, "id": "lock-ev"}' "$URL/v1/trigger")
[ "$CODE" = 201 ] || { cat "$T/body" >&2; fail "trigger: HTTP $CODE"; }; ok
wait_for 30 "event lock-ev to run" '[ "$(ev_status)" = active ]'
wait_for 30 "its row stored as active" 'row | grep -q "^active|"'
# the lock file names the first: its pid, and its port once it listens
contains "$T/ctl.db.lock" "pid $P1 on host $(hostname)"
contains "$T/ctl.db.lock" "listening on 127.0.0.1:$(cat "$T/ctl1.port")"
wait_counter 30 "$URL" pfi_ctl_cycles_total 2
row >"$T/row.before"
g0=$(gen_max)
[ -n "$g0" ] || fail "the agent's generation_max is not readable"; ok

# ---- a second one on the same database, another port: refused, naming the first ----
EXPECT_TIMEOUT_S=15 expect_error 1 "in use by another pfi-controller (pid $P1 on host $(hostname), listening on 127.0.0.1:$(cat "$T/ctl1.port")" \
  "$CTL" --config "$T/ctl.json" --port-file "$T/ctl2.port"
contains "$T/err" "$T/ctl.db: "
contains "$T/err" "lock $T/ctl.db.lock"
[ ! -s "$T/ctl2.port" ] || fail "the refused controller wrote a port file"; ok
contains "$T/err" "listening on 127.0.0.1:$(cat "$T/ctl1.port"); it runs;"
# another path to the same database: a symbolic link, a hard link (issue 41: the lock was per path)
ln -s "$T/ctl.db" "$T/link.db"
ln "$T/ctl.db" "$T/hard.db"
for p in link hard; do
  sed "s|\"db\": \"$T/ctl.db\"|\"db\": \"$T/$p.db\"|" "$T/ctl.json" >"$T/$p.json"
  EXPECT_TIMEOUT_S=15 expect_status 1 "$CTL" --config "$T/$p.json" --port-file "$T/$p.port"
  contains "$T/err" "in use by another pfi-controller"
  [ ! -s "$T/$p.port" ] || fail "a controller on $p.db started"; ok
  # through the symbolic link the holder file is the real path's: it names the first
  [ "$p" = hard ] || contains "$T/err" "pid $P1 on host"
done
# the database and its lock file are the controller's user's alone
[ "$(stat -c %a "$T/ctl.db")" = 600 ] || fail "ctl.db mode $(stat -c %a "$T/ctl.db")"; ok
[ "$(stat -c %a "$T/ctl.db.lock")" = 600 ] || fail "ctl.db.lock mode $(stat -c %a "$T/ctl.db.lock")"; ok
# the first runs on, its event untouched: two more periods, the same row
wait_counter 30 "$URL" pfi_ctl_cycles_total 2
alive "$P1" || fail "the first controller exited"; ok
[ "$(ev_status)" = active ] || fail "event lock-ev is $(ev_status) on the first controller"; ok
row >"$T/row.after"
cmp -s "$T/row.before" "$T/row.after" || { diff "$T/row.before" "$T/row.after" >&2; fail "the event's row changed"; }; ok
[ "$(gen_max)" = "$g0" ] || fail "the agent's generation moved from $g0 to $(gen_max): another controller wrote caps"; ok
lacks "$T/a.log" "lease taken over"

# ---- the first stops (SIGTERM): a new one starts on the database, resumes the event ----
stop_daemon "$P1" TERM
[ -e "$T/ctl.db.lock" ] || fail "the lock file went with its holder (fine, but unexpected)"; ok
start_ctl ctl3
P3=$CP
wait_for 30 "the third to resume lock-ev" 'grep -q "resuming event lock-ev" "$T/ctl3.log"'
contains "$T/ctl.db.lock" "pid $P3 on host"
[ "$(ev_status)" = active ] || fail "event lock-ev is $(ev_status) after the restart"; ok
# while it holds the lock, another is refused naming it
EXPECT_TIMEOUT_S=15 expect_error 1 "in use by another pfi-controller (pid $P3 on host" \
  "$CTL" --config "$T/ctl.json" --port-file "$T/ctl4.port"

# ---- it is killed (SIGKILL): the kernel drops its lock; the next one starts ----
stop_daemon "$P3" KILL
start_ctl ctl5
wait_counter 30 "$URL" pfi_ctl_cycles_total 2
contains "$T/ctl.db.lock" "pid $CP on host"
lacks "$T/ctl5.log" "in use by another"

# ---- a lock file it cannot open: one line naming it ----
sed "s|\"db\": \"$T/ctl.db\"|\"db\": \"$T/nodir/ctl.db\"|" "$T/ctl.json" >"$T/bad.json"
expect_error 1 "$T/nodir/ctl.db.lock: cannot open the database's lock file" \
  "$CTL" --config "$T/bad.json"
done_ok
