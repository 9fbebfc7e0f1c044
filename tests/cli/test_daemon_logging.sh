#!/bin/sh
# test_daemon_logging.sh — pfi-agent and pfi-controller under systemd's
# conventions (issue 17 item 3, and the daemons' part of item 2):
#  - sd_notify: READY=1 once the agent has sampled and listens / after the
#    controller's first control period, WATCHDOG=1 from the loop only when
#    WATCHDOG_USEC is set for this very process (WATCHDOG_PID), STOPPING=1
#    at SIGTERM; received by our own datagram socket (tests/tools/notify_sink.c);
#  - JOURNAL_STREAM naming stderr: "<N>" priority prefixes, no timestamps;
#    naming another file: timestamps as before;
#  - start-up errors on stderr also with --log FILE or --syslog; --syslog
#    writes nothing to stderr;
#  - the exit codes of pfi-agent(8) and pfi-controller(8), and the messages
#    of a missing or misspelt configuration, and of a token file the
#    daemon's user cannot read (the uid named; run as root);
#  - no help text prints '%%' or points at a C header, and every daemon
#    option is in its man page.
. "$SRC/tests/cli/lib.sh"
: "${PFI_AGENT:?}"
: "${TOOLS:?}"
CTL=${PFI_CONTROLLER_BIN:-$(dirname "$PFI_AGENT")/pfi-controller}
command -v curl >/dev/null || fail "curl is needed (scripts/bootstrap.sh test)"
new_token "$T/token" "$T/ctok"
NS=$T/notify.sock
SIM="sim:gpus=2,state=$T/hw.json"

# start_sink OUT: systemd's side of sd_notify, its messages in OUT (one a line)
start_sink() {
  rm -f "$NS"
  "$TOOLS/notify_sink" "$NS" "$1" 300 2>>"$T/sink.err" &
  SINK=$!; PIDS="$PIDS $SINK"
  wait_for 10 "the notify socket" '[ -S "$NS" ]'
}
stop_sink() { kill "$SINK" 2>/dev/null; wait "$SINK" 2>/dev/null; }
# has FILE REGEX: grep -E, for wait_for
has() { [ -f "$1" ] && grep -qE -- "$2" "$1"; }
count() { grep -cE -- "$2" "$1" 2>/dev/null || true; }
# SELF CMD...: CMD with WATCHDOG_PID set to its own pid (exec keeps the pid)
SELF='export WATCHDOG_PID=$$; exec "$@"'

# ---- agent: READY after the first sample, WATCHDOG, STOPPING ----
start_sink "$T/n.agent"
start_daemon agent "$T/a.err" "$T/a.port" \
  env NOTIFY_SOCKET="$NS" WATCHDOG_USEC=400000 sh -c "$SELF" sh "$PFI_AGENT" --backend "$SIM" --listen 127.0.0.1:0 \
  --port-file "$T/a.port" --token-file "$T/token" --state-file "$T/a.state" --interval 0.2
APID=$DPID; APORT=$DPORT
wait_for 30 "the agent's READY=1" 'has "$T/n.agent" "^READY=1"'
contains "$T/n.agent" "READY=1|STATUS=2 GPUs (sim), sampling every 0.2 s, listening on port $APORT|pid=$APID"
# ready means sampled: every GPU has a measured power
curl -s -m 5 "http://127.0.0.1:$APORT/v1/node" >"$T/node"
[ "$(grep -o '"power_w":[0-9.]*' "$T/node" | wc -l)" -eq 2 ] || { cat "$T/node" >&2; fail "READY before every GPU was sampled"; }; ok
# WatchdogSec=0.4 s: a ping at least every 0.2 s, from the agent itself
wait_for 30 "three WATCHDOG=1" '[ "$(count "$T/n.agent" "^WATCHDOG=1[|]pid=$APID$")" -ge 3 ]'
lacks "$T/n.agent" "STOPPING=1"
stop_daemon $APID TERM
[ "$STOP_RC" -eq 0 ] || { cat "$T/a.err" >&2; fail "agent exit $STOP_RC on SIGTERM (expected 0)"; }; ok
wait_for 10 "the agent's STOPPING=1" 'has "$T/n.agent" "^STOPPING=1"'
contains "$T/n.agent" "STOPPING=1|STATUS=signal 15: stopping, restoring every cap|pid=$APID"
# the order systemd needs: READY, then STOPPING last
[ "$(grep -nE '^READY=1' "$T/n.agent" | cut -d: -f1)" -lt "$(grep -nE '^STOPPING=1' "$T/n.agent" | cut -d: -f1)" ] || fail "STOPPING before READY"; ok
[ "$(tail -n 1 "$T/n.agent" | cut -c1-10)" = "STOPPING=1" ] || fail "a message after STOPPING=1"; ok
stop_sink

# ---- agent: WATCHDOG_USEC meant for another process (WATCHDOG_PID): no pings ----
start_sink "$T/n.agent2"
start_daemon agent "$T/a2.err" "$T/a2.port" \
  env NOTIFY_SOCKET="$NS" WATCHDOG_USEC=400000 WATCHDOG_PID=1 "$PFI_AGENT" --backend "$SIM" --listen 127.0.0.1:0 --port-file "$T/a2.port" --token-file "$T/token" \
  --state-file "$T/a2.state" --interval 0.2
APID=$DPID; APORT=$DPORT; AURL=http://127.0.0.1:$APORT
wait_for 30 "the agent's READY=1" 'has "$T/n.agent2" "^READY=1"'
# a second of sampling passes (10 pings' worth had it been on)
sampled_at() { curl -s -m 5 "$AURL/v1/node" | grep -o '"sampled_at":[0-9.]*' | head -n 1 | cut -d: -f2; }
t0=$(sampled_at)
wait_for 30 "1 s of sampling" 'num "$(sampled_at)" ">" "$t0 + 1"'
lacks "$T/n.agent2" "WATCHDOG=1"
stop_sink
# this agent serves the controller below

# ---- controller: READY after its first control period, WATCHDOG, STOPPING ----
cat >"$T/ctl.json" <<EOF
{"listen": "127.0.0.1:0", "token_file": "$T/ctok", "db": "$T/ctl.db", "control_period_s": 0.5, "lease_s": 30,
 "agents": [{"name": "n1", "url": "$AURL", "token_file": "$T/token"}]}
EOF
start_sink "$T/n.ctl"
start_daemon controller "$T/c.err" "$T/c.port" \
  env NOTIFY_SOCKET="$NS" WATCHDOG_USEC=400000 sh -c "$SELF" sh "$CTL" --config "$T/ctl.json" --port-file "$T/c.port"
CPID=$DPID; CPORT=$DPORT
wait_for 30 "the controller's READY=1" 'has "$T/n.ctl" "^READY=1"'
# its first period has collected the agent: it counts it as up
contains "$T/n.ctl" "READY=1|STATUS=1 of 1 agents up; no event active|pid=$CPID"
wait_for 30 "three WATCHDOG=1" '[ "$(count "$T/n.ctl" "^WATCHDOG=1[|]pid=$CPID$")" -ge 3 ]'
stop_daemon $CPID TERM
[ "$STOP_RC" -eq 0 ] || { cat "$T/c.err" >&2; fail "controller exit $STOP_RC on SIGTERM (expected 0)"; }; ok
wait_for 10 "the controller's STOPPING=1" 'has "$T/n.ctl" "^STOPPING=1"'
contains "$T/n.ctl" "STOPPING=1|STATUS=signal 15: stopping; caps stay under the agents' leases|pid=$CPID"
stop_sink
# outside systemd (no NOTIFY_SOCKET) nothing breaks: every other test runs so

# ---- the journal: JOURNAL_STREAM names stderr -> "<N>" prefixes, no timestamps ----
ISO='[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}'
: >"$T/j.err"
JS=$(stat -L -c '%d:%i' "$T/j.err")
start_daemon agent "$T/j.err" "$T/j.port" env JOURNAL_STREAM="$JS" "$PFI_AGENT" --backend "$SIM" \
  --listen 127.0.0.1:0 --port-file "$T/j.port" --state-file "$T/j.state" --interval 0.2
stop_daemon $DPID TERM
[ "$STOP_RC" -eq 0 ] || { cat "$T/j.err" >&2; fail "agent exit $STOP_RC"; }; ok
contains "$T/j.err" "<4>warning: no --token-file: PUT /v1/caps is refused"
contains "$T/j.err" "<6>pfi-agent "
contains "$T/j.err" "<6>signal 15: stopping"
n=$(grep -cvE '^<[3467]>' "$T/j.err"); [ "$n" -eq 0 ] || { cat "$T/j.err" >&2; fail "$n lines without a priority prefix"; }; ok
! grep -qE "$ISO" "$T/j.err" || { cat "$T/j.err" >&2; fail "a timestamp of our own in the journal"; }; ok
# an error, at once
: >"$T/cj.err"
JS=$(stat -L -c '%d:%i' "$T/cj.err")
JOURNAL_STREAM=$JS "$CTL" --config "$T/none.json" 2>>"$T/cj.err"; rc=$?
[ $rc -eq 2 ] || fail "exit $rc for a missing configuration (expected 2)"; ok
[ "$(cat "$T/cj.err")" = "<3>error: $T/none.json: cannot open: No such file or directory" ] || { cat "$T/cj.err" >&2; fail "the journal line"; }; ok
# JOURNAL_STREAM naming another file (stderr redirected away from the journal): as before
: >"$T/other"
start_daemon agent "$T/o.err" "$T/o.port" env JOURNAL_STREAM="$(stat -L -c '%d:%i' "$T/other")" "$PFI_AGENT" \
  --backend "$SIM" --listen 127.0.0.1:0 --port-file "$T/o.port" --state-file "$T/o.state" --interval 0.2
stop_daemon $DPID TERM
grep -qE "^$ISO:[0-9.]+Z pfi-agent: warning: no --token-file" "$T/o.err" || { cat "$T/o.err" >&2; fail "no timestamped line"; }; ok
lacks "$T/o.err" "<4>"
lacks "$T/o.err" "<6>"

# ---- start-up errors reach stderr also with --log FILE, with the documented status ----
# (the second agent still runs: its port is taken)
expect_error 1 "pfi-agent: error: " "$PFI_AGENT" --backend "$SIM" --listen "127.0.0.1:$APORT" \
  --state-file "$T/b.state" --token-file "$T/token" --log "$T/b.log"
contains "$T/b.log" "error: "
expect_error 1 "pfi-agent: error: $T/missing-token" "$PFI_AGENT" --backend "$SIM" --token-file "$T/missing-token" \
  --state-file "$T/b.state" --log "$T/b.log"
contains "$T/b.log" "error: $T/missing-token"
expect_error 1 "pfi-agent: error: " "$PFI_AGENT" --backend "$SIM" --token-file "$T/missing-token" \
  --state-file "$T/b.state" --syslog
cat >"$T/busy.json" <<EOF
{"listen": "127.0.0.1:$APORT", "db": "$T/busy.db", "log": "$T/busy.log", "control_period_s": 0.5,
 "agents": [{"name": "n1", "url": "$AURL", "token_file": "$T/token"}]}
EOF
expect_error 1 "pfi-controller: error: " "$CTL" --config "$T/busy.json"
contains "$T/busy.log" "error: "
sed "s|\"$T/token\"|\"$T/missing-token\"|" "$T/busy.json" >"$T/notok.json"
expect_error 1 "pfi-controller: error: agents[0]: $T/missing-token" "$CTL" --config "$T/notok.json"
# a token file the daemon's user may not read (the packaged controller runs
# as its own user, pfi-controller: a root-owned token): the error says which
# uid it runs as, so the owner to give the file is plain
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null; then
  chmod 711 "$T"
  mkdir -m 755 "$T/pub"
  cp "$T/token" "$T/pub/root.token"
  printf '{"listen": "127.0.0.1:0", "db": "%s", "agents": [{"url": "%s", "token_file": "%s"}]}\n' \
    "$T/pub/x.db" "$AURL" "$T/pub/root.token" >"$T/pub/rootok.json"
  chmod 644 "$T/pub/rootok.json"
  expect_error 1 "agents[0]: $T/pub/root.token: cannot open the token file: Permission denied (this process runs as uid 65534: the file must be that user's)" \
    setpriv --reuid 65534 --regid 65534 --clear-groups "$CTL" --config "$T/pub/rootok.json"
  chmod 700 "$T"
fi

# ---- exit codes (pfi-agent(8), pfi-controller(8) EXIT STATUS) ----
expect_error 2 "unknown option '--bogus'" "$PFI_AGENT" --bogus
expect_error 2 "unexpected argument 'extra'" "$PFI_AGENT" extra
expect_error 2 "--interval" "$PFI_AGENT" --interval 0
expect_error 2 "--log and --syslog exclude each other" "$PFI_AGENT" --log "$T/x.log" --syslog
expect_error 2 "--tls-client-ca needs --tls-cert" "$PFI_AGENT" --backend "$SIM" --state-file "$T/b.state" --tls-client-ca "$T/token"
expect_error 2 "unknown option '--bogus'" "$CTL" --bogus
expect_error 2 "--config FILE is required" "$CTL"
expect_error 2 "unexpected argument 'extra'" "$CTL" --config "$T/ctl.json" extra
# a missing configuration: one line naming the file, no jansson line -1
expect_error 2 "pfi-controller: error: /nonexistent.json: cannot open: No such file or directory" "$CTL" --config /nonexistent.json
lacks "$T/err" ":-1:"
expect_error 2 "$T: cannot open: Is a directory" "$CTL" --config "$T"
printf '{"agents": [\n' >"$T/broken.json"
expect_error 2 "$T/broken.json:2: " "$CTL" --config "$T/broken.json"
# a misspelt key: the closest known one suggested, at the top and in an agent
sed 's/"control_period_s"/"control_periods"/' "$T/ctl.json" >"$T/typo.json"
expect_error 2 "$T/typo.json: control_periods: unknown key; did you mean 'control_period_s'?" "$CTL" --config "$T/typo.json"
sed 's/"token_file": "[^"]*"}/"tokenfile": "x"}/' "$T/ctl.json" >"$T/typo2.json"
expect_error 2 "agents[0].tokenfile: unknown key (url, token_file," "$CTL" --config "$T/typo2.json"
contains "$T/err" "did you mean 'token_file'?"
sed 's|"lease_s": 30,|"lease_s": 30, "log": "'"$T"'/x.log",|' "$T/ctl.json" >"$T/withlog.json"
expect_error 2 "--syslog: $T/withlog.json sets a log file" "$CTL" --config "$T/withlog.json" --syslog

# ---- --syslog: nothing on stderr while it runs, exit 0 ----
start_daemon agent "$T/s.err" "$T/s.port" "$PFI_AGENT" --backend "$SIM" --listen 127.0.0.1:0 \
  --port-file "$T/s.port" --token-file "$T/token" --state-file "$T/s.state" --interval 0.2 --syslog
code=$(curl -s -m 5 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$DPORT/v1/node"); [ "$code" = 200 ] || fail "HTTP $code"; ok
stop_daemon $DPID TERM
[ "$STOP_RC" -eq 0 ] || { cat "$T/s.err" >&2; fail "agent --syslog exit $STOP_RC"; }; ok
[ ! -s "$T/s.err" ] || { cat "$T/s.err" >&2; fail "agent --syslog wrote to stderr"; }; ok
start_daemon controller "$T/cs.err" "$T/cs.port" "$CTL" --config "$T/ctl.json" --port-file "$T/cs.port" --syslog
code=$(curl -s -m 5 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$DPORT/v1/status"); [ "$code" = 200 ] || fail "HTTP $code"; ok
stop_daemon $DPID TERM
[ "$STOP_RC" -eq 0 ] || { cat "$T/cs.err" >&2; fail "controller --syslog exit $STOP_RC"; }; ok
[ ! -s "$T/cs.err" ] || { cat "$T/cs.err" >&2; fail "controller --syslog wrote to stderr"; }; ok
stop_daemon $APID TERM

# ---- help: no '%%', no C header named; every daemon option in its man page ----
{
  "$PFI" help
  for c in $("$PFI" help | awk '/^  [a-z]/ {print $1}'); do "$PFI" "$c" --help; done
  "$PFI_AGENT" --help
  "$CTL" --help
} >"$T/help.txt" 2>&1
[ "$(wc -l <"$T/help.txt")" -gt 200 ] || fail "the help text is short: $(wc -l <"$T/help.txt") lines"; ok
lacks "$T/help.txt" "%%"
! grep -nE '\b[a-z_]+\.h\b' "$T/help.txt" || fail "help names a C header"; ok
for prog in pfi-agent pfi-controller; do
  bin=$PFI_AGENT; [ $prog = pfi-agent ] || bin=$CTL
  for o in $("$bin" --help | grep -oE -- '--[a-z][a-z-]*' | sort -u); do
    grep -qF -- "$(printf '%s' "$o" | sed 's/-/\\-/g')" "$SRC/man/$prog.8" || fail "man/$prog.8 does not name $o"; ok
  done
done
done_ok
