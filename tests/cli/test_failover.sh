#!/bin/sh
# test_failover.sh — two controllers fail over on a real etcd cluster
# (issue 45 part c; docs/controller.md, "Failover on etcd"): three etcd
# members on loopback, two agents on simulated GPUs, controllers ctl-a and
# ctl-b with the same configuration. At clock scale 1 (etcd's TTL cannot
# be scaled).
#   - a bad "failover" key is a one-line error naming it; a lease_s too
#     short for a takeover keeps the controller from starting;
#   - one leads (its pushes carry its name), the other follows: it pushes
#     nothing, commits the writes made to it to the store's inbox (an event
#     POSTed, a DELETE, a trigger: 202; a webhook's notification: 200; each
#     applied by the leader at its next period, checked first: a bad one is
#     400 and nothing is committed) and answers other writes with 503 naming
#     the leader;
#   - SIGKILL of the leader during an event: the follower takes over and
#     pushes before any agent's lease lapses, first the caps the dead
#     leader committed (each agent's jobs, in the store), then its period's;
#     the GPUs stay capped throughout (sampled every 0.1 s); the event the
#     dead leader acknowledged is the new leader's, once;
#   - SIGSTOP of the new leader past its TTL: the restarted ctl-a takes
#     over; on SIGCONT the stopped one pushes nothing an agent admits;
#   - pfi controller handover: the leader hands over to the warm standby,
#     and refuses when none is warm;
#   - the leader cut off from etcd but not from its agents (its etcd traffic
#     through relays, SIGSTOPped): it fences itself, the other takes over,
#     and no push of the cut-off one is admitted after the new leader's;
#   - a follower's read-only views show the leader's events, its lag
#     (pfi_ctl_store_lag_seconds) under 3 s; its /metrics leave the
#     cluster's and the jobs' series to the leader;
#   - pfi event given the controllers in order (a dead one, the follower,
#     the leader) reaches the leader;
#   - quorum lost (two etcd members stopped): no controller leads, the
#     agents' leases run out and the caps are restored; with quorum back a
#     leader caps them again;
#   - from the agents' own logs: per agent, the admitted generations never go
#     backwards, and once a controller of a higher term is admitted no write
#     of an earlier term is.
. "$SRC/tests/cli/lib.sh"
. "$SRC/tests/cli/etcd_lib.sh"
. "$SRC/tests/cli/failover_lib.sh"
: "${PFI_AGENT:?}"
CTL=${PFI_CONTROLLER_BIN:-$(dirname "$PFI_AGENT")/pfi-controller}
kill_daemons_on_exit "${KEEP:+cp -r \"\$T\" \"\$KEEP\"}"
new_token "$T/atok" "$T/ctok"
CTOK=$(cat "$T/ctok")
etcd_cluster 3

start_agent() { # N BACKEND
  start_daemon "agent $1" "$T/a$1.log" "$T/a$1.port" "$PFI_AGENT" --backend "$2" --listen 127.0.0.1:0 \
    --port-file "$T/a$1.port" --token-file "$T/atok" --state-file "$T/a$1.state" --interval 0.5 --log "$T/a$1.log"
}
start_agent 1 "sim:gpus=4,job=j1:moe-ft-qwen30ba3b-x8@0-3,load=0,steplogs=$T,state=$T/hw1.json"
start_agent 2 "sim:gpus=4,job=j3:moe-pt-gptoss20b-x8-ep1-nocompile@0-3,load=0,steplogs=$T,state=$T/hw2.json"
P1=$(cat "$T/a1.port"); P2=$(cat "$T/a2.port")
for n in a b; do ctl_json $n /pfi/test/ 8 "$P1" "$P2"; done
granted_to() { grep -q "lease granted: controller pfi-controller@[^ ]*/$1 \|controller pfi-controller@[^ ]*/$1 generation [0-9]* replaces" "$T/a1.log" "$T/a2.log" && \
  grep -q "controller pfi-controller@[^ ]*/$1 " "$T/a1.log" && grep -q "controller pfi-controller@[^ ]*/$1 " "$T/a2.log"; }

# ---- a bad "failover" key is a one-line error naming it (exit 2); a lease_s too short
# for a takeover keeps the controller from starting (exit 1, naming the bound)
bad_cfg() { sed "s|\"failover\": {[^}]*}|\"failover\": $1|" "$T/ctl-a.json" >"$T/bad.json"; }
bad_cfg '{"etcd": ["http://127.0.0.1:1"], "prefix": "pfi"}'
expect_error 2 "failover.prefix: expected a prefix ending in '/'" "$CTL" --config "$T/bad.json"
bad_cfg '{"etcd": ["ftp://127.0.0.1:1"]}'
expect_error 2 "failover.etcd[0]: expected an http:// or https:// URL" "$CTL" --config "$T/bad.json"
bad_cfg '{"etcd": ["http://127.0.0.1:1"], "ttl": 2}'
expect_error 2 "failover" "$CTL" --config "$T/bad.json"
bad_cfg '{"etcd": ["http://127.0.0.1:1"], "name": "a b"}'
expect_error 2 "failover.name: expected [A-Za-z0-9._-]" "$CTL" --config "$T/bad.json"
sed 's/"lease_s": 8/"lease_s": 3/; s|"log": "[^"]*",||' "$T/ctl-a.json" >"$T/bad.json"
expect_status 1 "$CTL" --config "$T/bad.json" --listen 127.0.0.1:0
contains "$T/err" "lease_s 3 s is below 2 x ttl_s + agent_timeout_s + the period + 1 s"

start_pair

# ---- writes to the follower: committed to the store's inbox, then applied by the leader
# (an event POSTed, a DELETE, a trigger: 202; a webhook's notification: 200)
S=$(date -u +%Y-%m-%dT%H:%M:%SZ)
CODE=$(curl -s -o "$T/body" -w '%{http_code}' -X POST -H "Authorization: Bearer $CTOK" \
  --data-binary "{\"id\":\"later\",\"start\":\"$S\",\"duration_s\":36000,\"reduction_pct\":5}" "$URL_b/v1/events")
[ "$CODE" = 202 ] || { cat "$T/body" >&2; fail "an event posted to the follower: HTTP $CODE, expected 202"; }; ok
contains "$T/body" '"leader":"ctl-a"'
wait_for 10 "the leader adds the follower's event" 'curl -s -m 2 "$URL_a/v1/events" | grep -q "\"id\":\"later\""'
# fw METHOD PATH [BODY]: a write to the follower; $CODE its status, $T/body its answer
fw() {
  CODE=$(curl -s -o "$T/body" -w '%{http_code}' -X "$1" -H "Authorization: Bearer $CTOK" \
    -H 'Content-Type: application/json' ${3:+--data-binary "$3"} "$URL_b$2")
}
ev_at_a() { curl -s -m 2 "$URL_a/v1/events/$1"; }
wait_for 10 "the follower shows the event it committed" 'curl -s -m 2 "$URL_b/v1/events/later" | grep -q "\"id\":\"later\""'
fw DELETE /v1/events/later
[ "$CODE" = 202 ] || { cat "$T/body" >&2; fail "a DELETE on the follower: HTTP $CODE, expected 202"; }; ok
wait_for 10 "the leader cancels it" 'ev_at_a later | grep -q "\"cancelled_by\":\"[^\"]"'
fw DELETE /v1/events/no-such-event
[ "$CODE" = 404 ] || { cat "$T/body" >&2; fail "a DELETE of no event on the follower: HTTP $CODE"; }; ok
# a trigger: the leader's event of source trigger, acted on by its fast path
fw POST /v1/trigger '{"reduction_pct": 5, "id": "trig-b", "duration_s": 600}'
[ "$CODE" = 202 ] || { cat "$T/body" >&2; fail "a trigger on the follower: HTTP $CODE, expected 202"; }; ok
wait_for 10 "the leader takes the follower's trigger" 'ev_at_a trig-b | grep -q "\"source\":\"trigger\""'
wait_for 10 "its fast path" 'grep -q "trigger trig-b" "$T/ctl-a.log"'
fw POST /v1/trigger '{"reduction_pct": 95}'
[ "$CODE" = 400 ] || { cat "$T/body" >&2; fail "a bad trigger on the follower: HTTP $CODE, expected 400"; }; ok
fw DELETE /v1/events/trig-b
[ "$CODE" = 202 ] || { cat "$T/body" >&2; fail "a trigger's cancel on the follower: HTTP $CODE"; }; ok
wait_for 10 "the leader cancels the trigger" 'ev_at_a trig-b | grep -q "\"cancelled_by\":\"[^\"]"'
# the VTN's notification (a webhook reaching the follower): 200 after the commit
OADR='{"id":"oadr-b","objectType":"EVENT","modificationDateTime":"2026-01-01T00:00:00Z","intervalPeriod":{"start":"2030-01-01T00:00:00Z","duration":"PT1H"},"intervals":[{"id":0,"payloads":[{"type":"IMPORT_CAPACITY_LIMIT","values":[2]}]}]}'
fw POST /openadr3/events "$OADR"
[ "$CODE" = 200 ] || { cat "$T/body" >&2; fail "a notification to the follower: HTTP $CODE, expected 200"; }; ok
contains "$T/body" '"accepted_by":"ctl-b"'
wait_for 10 "the leader takes the follower's notification" 'curl -s -m 2 "$URL_a/v1/events" | grep -q "\"id\":\"oadr-b"'
fw POST /openadr3/events '{"id":"oadr-bad","objectType":"EVENT","intervals":"x"}'
[ "$CODE" = 400 ] || { cat "$T/body" >&2; fail "a bad notification to the follower: HTTP $CODE, expected 400"; }; ok
wait_for 10 "the inbox emptied by the leader" '[ -z "$(etcdctl --endpoints="$ETCD_EPS" get --prefix /pfi/test/inbox/ --keys-only 2>/dev/null)" ]'
# every cancelled event committed (its cancelled_by a string: it was not, and no
# period's rows were committed while one was kept)
lacks "$T/ctl-a.log" "not committed"
lacks "$T/ctl-a.log" "not stored in etcd"
# other writes: 503 naming the leader
fw POST /v1/failover/handover
[ "$CODE" = 503 ] || { cat "$T/body" >&2; fail "a handover asked of the follower: HTTP $CODE, expected 503"; }; ok
contains "$T/body" "the leader is ctl-a"
CODE=$(curl -s -o "$T/body" -w '%{http_code}' -X POST -H "Authorization: Bearer $CTOK" \
  --data-binary "{\"id\":\"long\",\"start\":\"$S\",\"duration_s\":36000,\"reduction_pct\":30}" "$URL_a/v1/events")
[ "$CODE" = 201 ] || { cat "$T/body" >&2; fail "event: HTTP $CODE"; }; ok
wait_for 30 "caps on both agents from ctl-a" 'both_capped && granted_to ctl-a'
grep -q "/ctl-b " "$T/a1.log" "$T/a2.log" && fail "the follower pushed"; ok
# the follower's /metrics leave the cluster's and the jobs' series to the leader
curl -s -m 2 "$URL_b/metrics" >"$T/metrics_b"; curl -s -m 2 "$URL_a/metrics" >"$T/metrics_a"
contains "$T/metrics_b" 'pfi_ctl_leader{role="follower"} 0'
lacks "$T/metrics_b" "pfi_ctl_agents_up"
lacks "$T/metrics_b" "pfi_ctl_job_"
contains "$T/metrics_a" 'pfi_ctl_leader{role="leader"} 1'
contains "$T/metrics_a" "pfi_ctl_agents_up 2"
contains "$T/metrics_a" "pfi_ctl_job_power_watts"
# the follower's read-only views: the leader's event, its lag under 3 s
wait_for 10 "the follower shows the leader's event" 'curl -s -m 2 "$URL_b/v1/events" | grep -q "\"id\":\"long\""'
lag=$(curl -s -m 2 "$URL_b/metrics" | awk '$1 == "pfi_ctl_store_lag_seconds" {print $2}')
num "$lag" "<" 3 || fail "the follower's lag: '$lag' s"; ok

# ---- SIGKILL the leader: ctl-b takes over before the agents' leases (8 s) lapse
# (a sampler records GPU 0's cap on both agents every 0.1 s from here to the end)
( while :; do echo "$(acap "$P1") $(acap "$P2")" >>"$T/caps"; sleep 0.1; done ) &
SAMPLER=$!; PIDS="$PIDS $SAMPLER"
# (the agents' log lines from here: a lease lapsing after the caps were handed
# back above, before the event long, is the hand-back working, not a lapse)
L1=$(wc -l <"$T/a1.log"); L2=$(wc -l <"$T/a2.log")
ftseq() { etcdctl --endpoints="$ETCD_EPS" get /pfi/test/meta/ft_seq --print-value-only 2>/dev/null; }
SEQ0=$(ftseq)
num "$SEQ0" ">" 1700000000000000 || fail "the leader's fast-trigger seq not committed: '$SEQ0'"; ok
# the caps the leader pushes are committed, each agent's jobs under its name
wait_for 10 "the caps committed" '[ "$(etcdctl --endpoints="$ETCD_EPS" get /pfi/test/meta/caps_chunks --print-value-only 2>/dev/null)" = 1 ]'
etcdctl --endpoints="$ETCD_EPS" get /pfi/test/caps/0000 --print-value-only >"$T/caps_committed" 2>/dev/null
contains "$T/caps_committed" '"n1":[["j1",'
contains "$T/caps_committed" '"n2":[["j3",'
# what safe-online has measured of each job in the event is committed (a
# point once it has settled at its target: a few periods)
npoints() { etcdctl --endpoints="$ETCD_EPS" get --prefix /pfi/test/points/ --keys-only 2>/dev/null | grep -c .; }
wait_for 30 "both jobs' measured points committed" '[ "$(npoints)" = 2 ]'
# a remembered curve the store holds but cannot be read: skipped, named
etcdctl --endpoints="$ETCD_EPS" put /pfi/test/mem/0/4/700/bad '{"id":1,"points":[]}' >/dev/null 2>&1 ||
  fail "etcdctl put"; ok
# and so are a job's measured points that are not four finite numbers each
etcdctl --endpoints="$ETCD_EPS" put /pfi/test/points/3/bad '{"points":[[1,2,"x",4]]}' >/dev/null 2>&1 ||
  fail "etcdctl put"; ok
T0=$(date +%s.%N)
stop_daemon "$CPID_a" KILL
wait_for 15 "ctl-b leads and pushes" 'granted_to ctl-b && both_capped'
T1=$(date +%s.%N)
echo "takeover after SIGKILL: $(awk -v a="$T0" -v b="$T1" 'BEGIN{printf "%.2f", b - a}') s"
[ "$(role "$URL_b")" = leader ] || fail "ctl-b does not say it leads"; ok
contains "$T/ctl-b.log" "took over at term 2"
# it pushed the committed caps before its first period (which polls first)
contains "$T/ctl-b.log" "the last committed caps pushed to 2 agents"
contains "$T/ctl-b.log" "mem/0/4/700/bad: id: missing or too long; skipped"
contains "$T/ctl-b.log" "points/3/bad: not a job's points; skipped"
# and what safe-online measured of both jobs in the event, from the store
contains "$T/ctl-b.log" "failover: what safe-online measured of 2 jobs taken over"
# the new leader's seqs continue above the dead one's (committed with its periods)
wait_for 10 "ctl-b commits its fast-trigger seq" '[ "$(ftseq)" != "$SEQ0" ]'
num "$(ftseq)" ">" "$SEQ0" || fail "the fast-trigger seq went back: $(ftseq) after $SEQ0"; ok
# the event acknowledged (201) by the dead leader is the new leader's, once
curl -s -m 2 "$URL_b/v1/events" >"$T/events"
[ "$(grep -o '"id":"long"' "$T/events" | wc -l)" = 1 ] || { cat "$T/events" >&2; fail "the event long, once, at ctl-b"; }; ok

# ---- SIGSTOP ctl-b past its TTL: a restarted ctl-a takes over; ctl-b, resumed, fences itself
start_ctl a
wait_for 20 "ctl-a follows" '[ "$(role "$URL_a")" = follower ]'
# pfi event with the site's controllers in order: a dead one, then the follower (it
# commits it for the leader); pfi event cancel too
expect_status 0 "$PFI" event create --controller "http://127.0.0.1:1,$URL_a,$URL_b" --token-file "$T/ctok" \
  --reduction 10 --start now --duration 1h --id via-list
wait_for 10 "the event of pfi event at the leader" 'curl -s -m 2 "$URL_b/v1/events" | grep -q "\"id\":\"via-list\""'
expect_status 0 "$PFI" event cancel --controller "http://127.0.0.1:1,$URL_a,$URL_b" --token-file "$T/ctok" via-list
contains "$T/out" "via-list: the cancel committed by ctl-a for the leader ctl-b"
wait_for 10 "the leader cancels via-list" 'curl -s -m 2 "$URL_b/v1/events/via-list" | grep -q "\"cancelled_by\":\"[^\"]"'

kill -STOP "$CPID_b"
wait_for 20 "ctl-a leads again and pushes" '[ "$(role "$URL_a")" = leader ] && [ "$(grep -c "/ctl-a generation" "$T/a1.log")" -ge 2 ]'
kill -CONT "$CPID_b"
wait_for 20 "ctl-b, resumed, follows" '[ "$(role "$URL_b")" = follower ]'
contains "$T/ctl-b.log" "ctl-b no longer leads"
wait_for 10 "both agents under ctl-a" 'both_capped'

# ---- a planned switchover: pfi controller handover to the site's controllers (the
# follower answers 503, the leader hands over); the standby leads and pushes
n_b=$(grep -c "/ctl-b generation" "$T/a1.log")
# ctl-b is warm once its key is under its new lease (its old one lapsed while stopped)
wait_for 10 "ctl-b warm" 'etcdctl --endpoints="$ETCD_EPS" get /pfi/test/members/ctl-b 2>/dev/null | grep -q "^ctl-b$"'
expect_status 0 "$PFI" controller handover --controller "$URL_b,$URL_a" --token-file "$T/ctok"
contains "$T/out" "handed over: ctl-b takes over"
wait_for 15 "ctl-b leads after the handover and pushes" '[ "$(role "$URL_b")" = leader ] && [ "$(grep -c "/ctl-b generation" "$T/a1.log")" -gt "$n_b" ]'
# no standby warm: refused
stop_daemon "$CPID_a" TERM
expect_error 1 "no standby controller is warm" "$PFI" controller handover --controller "$URL_b" --token-file "$T/ctok"

# ---- ctl-a cut off from etcd but not from its agents (its etcd requests go through
# relays, tests/tools/tcp_relay.py, SIGSTOPped): it fences itself at its keepalive
# deadline and ctl-b takes over; no push of ctl-a is admitted after ctl-b's
i=1; RELAYS=; RPIDS=
for ep in $(echo "$ETCD_EPS" | tr , ' '); do
  echo "${ep##*:}" >"$T/etcd$i.port"
  start_daemon "relay $i" "$T/relay$i.log" "$T/relay$i.port" python3 "$SRC/tests/tools/tcp_relay.py" \
    --port-file "$T/relay$i.port" --to-port-file "$T/etcd$i.port"
  RELAYS="${RELAYS:+$RELAYS, }\"http://127.0.0.1:$DPORT\""; RPIDS="$RPIDS $DPID"; i=$((i + 1))
done
sed "s|\"etcd\": \[[^]]*\]|\"etcd\": [$RELAYS]|" "$T/ctl-a.json" >"$T/ctl-a.relay" && mv "$T/ctl-a.relay" "$T/ctl-a.json"
contains "$T/ctl-a.json" "$RELAYS"
start_ctl a
wait_for 20 "ctl-a (through the relays) warm" 'etcdctl --endpoints="$ETCD_EPS" get /pfi/test/members/ctl-a 2>/dev/null | grep -q "^ctl-a$"'
n_a=$(grep -c "/ctl-a generation" "$T/a1.log")
expect_status 0 "$PFI" controller handover --controller "$URL_b" --token-file "$T/ctok"
wait_for 15 "ctl-a leads and pushes" '[ "$(role "$URL_a")" = leader ] && [ "$(grep -c "/ctl-a generation" "$T/a1.log")" -gt "$n_a" ]'
lacks "$T/ctl-b.log" "ALARM: failover: this controller's configuration"
grants() { grep -c "lease granted: controller [^ ]*/$1 " "$2"; } # NAME LOG
nb1=$(grants ctl-b "$T/a1.log"); nb2=$(grants ctl-b "$T/a2.log")
for p in $RPIDS; do kill -STOP "$p"; done
wait_for 15 "ctl-b takes over from ctl-a cut off from etcd" '[ "$(grants ctl-b "$T/a1.log")" -gt "$nb1" ] && [ "$(grants ctl-b "$T/a2.log")" -gt "$nb2" ]'
contains "$T/ctl-a.log" "ctl-a no longer leads"
for p in $RPIDS; do kill -CONT "$p"; done
wait_for 15 "ctl-a, back in touch with etcd, follows" '[ "$(role "$URL_a")" = follower ]'
for a in 1 2; do # after ctl-b's first push since the cut, none of ctl-a's
  eval "n=\$nb$a"
  awk -v n="$n" '/lease granted: controller [^ ]*\/ctl-b / {b++} b > n && /lease (granted|taken over): controller [^ ]*\/ctl-a / {exit 1}' "$T/a$a.log" ||
    fail "agent $a admitted ctl-a after ctl-b took over from it"; ok
done

# ---- the GPUs stayed capped throughout (no sample at the 700 W baseline)
kill "$SAMPLER" 2>/dev/null; wait "$SAMPLER" 2>/dev/null
awk 'NF == 2 && ($1 >= 700 || $2 >= 700) {bad++} END {exit bad > 0}' "$T/caps" ||
  { grep -c . "$T/caps" >&2; fail "a GPU uncapped during the failovers"; }; ok
[ "$(awk 'NF == 2' "$T/caps" | wc -l)" -ge 20 ] || fail "the sampler took $(wc -l <"$T/caps") samples"; ok

# ---- from the agents' own logs: generations never go backwards; no earlier term after a later one
agents_logs_ok "during the failovers" 1 2
# ---- quorum lost (two of the three etcd members stopped): the leader steps down,
# nobody pushes, the agents' leases (8 s) run out and the GPUs go back to their
# baselines, as without a controller; with quorum back, a leader caps them again
kill -STOP "$ETCD_PID_2" "$ETCD_PID_3"
wait_for 20 "no controller leads without quorum" '[ "$(role "$URL_a")" = follower ] && [ "$(role "$URL_b")" = follower ]'
uncapped() { c=$(acap "$1"); [ -n "$c" ] && awk -v c="$c" 'BEGIN{exit !(c >= 699.5)}'; }
wait_for 20 "the agents' leases run out: caps restored" 'uncapped "$P1" && uncapped "$P2"'
kill -CONT "$ETCD_PID_2" "$ETCD_PID_3"
wait_for 30 "a leader again, the GPUs capped again" 'both_capped'

done_ok
