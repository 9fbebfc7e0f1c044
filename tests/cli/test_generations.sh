#!/bin/sh
# test_generations.sh — lease generations under a hostile token holder
# (issue 14 item 6): two agents on simulated GPUs and a controller, mid-event.
# A PUT with generation 2^53 to one agent is refused (400) and pushes to both
# agents keep working, caps applied; the largest step an agent admits (2^20)
# moves the controller's generation for that agent only; a controller
# restart continues each agent's own count (nothing bad resurrected from
# SQLite); an agent whose state is reset by an operator answers the
# controller's too-high generation with 400: an alarm (log line and
# pfi_ctl_generation_rejects_total), then that agent's count restarts; an
# agent left at 2^53 (before the bound) raises the alarm until the documented
# reset.
. "$SRC/tests/cli/lib.sh"
: "${PFI_AGENT:?}"
CTL=${PFI_CONTROLLER_BIN:-$(dirname "$PFI_AGENT")/pfi-controller}
export PFI_TIME_SCALE=20 PFI_EPOCH=$(date +%s)
new_token "$T/atok" "$T/ctok"
ATOK=$(cat "$T/atok")
kill_daemons_on_exit

start_agent() { # N BACKEND
  start_daemon "agent $1" "$T/a$1.log" "$T/a$1.port" "$PFI_AGENT" --backend "$2" --listen "127.0.0.1:${APORT:-0}" \
    --port-file "$T/a$1.port" --token-file "$T/atok" --state-file "$T/a$1.state" --interval 1 --log "$T/a$1.log"
  eval "AP$1=$DPID"
}
B1="sim:gpus=4,job=j1:moe-ft-qwen30ba3b-x8@0-3,load=0,steplogs=$T,state=$T/hw1.json"
B2="sim:gpus=4,job=j3:moe-pt-gptoss20b-x8-ep1-nocompile@0-3,load=0,steplogs=$T,state=$T/hw2.json"
start_agent 1 "$B1"
start_agent 2 "$B2"
P1=$(cat "$T/a1.port"); P2=$(cat "$T/a2.port")
cat >"$T/ctl.json" <<EOF
{"listen": "127.0.0.1:0", "token_file": "$T/ctok", "db": "$T/ctl.db", "control_period_s": 5, "baseline_window_s": 20,
 "lease_s": 30, "tiers": {"j1": 3, "j3": 3},
 "agents": [{"name": "n1", "url": "http://127.0.0.1:$P1", "token_file": "$T/atok"},
            {"name": "n2", "url": "http://127.0.0.1:$P2", "token_file": "$T/atok"}]}
EOF
start_ctl() {
  start_daemon controller "$T/ctl.log" "$T/c.port" "$CTL" --config "$T/ctl.json" --port-file "$T/c.port"
  CP=$DPID; URL=http://127.0.0.1:$DPORT
}
start_ctl

acap() { curl -s "http://127.0.0.1:$1/metrics" | awk -F'[ {}]' -v g="$2" '$1=="pfi_gpu_power_cap_watts" && index($0, "gpu=\"" g "\""){print $NF}'; }
capped() { c=$(acap "$1" 0); [ -n "$c" ] && awk -v c="$c" 'BEGIN{exit !(c < 700)}'; }
both_capped() { capped "$P1" && capped "$P2"; }
pushes_at_least() { [ "$(metric "$URL" pfi_ctl_pushes_total)" -ge "$1" ] 2>/dev/null; }
gen_max() { curl -s "http://127.0.0.1:$1/v1/node" | sed -n 's/.*"generation_max":\([0-9]*\).*/\1/p'; }
ctl_gen() { curl -s "$URL/v1/status" | tr '{' '\n' | sed -n "s/.*\"name\":\"$1\".*\"generation\":\([0-9]*\).*/\1/p"; }
put_caps() { # PORT BODY: the agent's answer in $T/put, its code in $CODE
  CODE=$(curl -s -o "$T/put" -w '%{http_code}' -X PUT -H "Authorization: Bearer $ATOK" --data-binary "$2" "http://127.0.0.1:$1/v1/caps")
}
no_new_push_errors() { [ "$(metric "$URL" pfi_ctl_push_errors_total)" = "${1:-0}" ] || { show_logs; fail "push errors: $(metric "$URL" pfi_ctl_push_errors_total)"; }; ok; }

# ---- an event that lasts the whole test: both agents capped ----
NOW=$(awk -v e="$PFI_EPOCH" -v w="$(date +%s.%N)" 'BEGIN{printf "%.0f", e + (w - e) * 20 + 30}')
S=$(date -u -d "@$NOW" +%Y-%m-%dT%H:%M:%SZ)
CODE=$(curl -s -o "$T/body" -w '%{http_code}' -X POST -H "Authorization: Bearer $(cat "$T/ctok")" \
  --data-binary "{\"id\":\"long\",\"start\":\"$S\",\"duration_s\":36000,\"reduction_pct\":30}" "$URL/v1/events")
[ "$CODE" = 201 ] || { cat "$T/body" >&2; fail "event: HTTP $CODE"; }; ok
wait_for 30 "caps on both agents" both_capped

# ---- generation 2^53 to one agent: refused; both agents stay under the controller ----
put_caps "$P1" '{"lease_s":30,"controller":"intruder","generation":9007199254740992,"gpus":[]}'
[ "$CODE" = 400 ] || { cat "$T/put" >&2; fail "generation 2^53: HTTP $CODE, expected 400"; }; ok
contains "$T/put" "generation: 9007199254740992 is more than 1048576 above generation_max"
[ "$(gen_max "$P1")" -lt 1000 ] || fail "generation_max moved to $(gen_max "$P1")"; ok
p0=$(metric "$URL" pfi_ctl_pushes_total)
wait_for 30 "three more periods of pushes" 'pushes_at_least $((p0 + 6))'
no_new_push_errors 0
both_capped || { show_logs; fail "caps lost after a refused generation"; }; ok

# ---- the largest step an agent admits moves that agent's generation only ----
G=$(($(gen_max "$P1") + 1048576))
put_caps "$P1" "{\"lease_s\":30,\"controller\":\"intruder\",\"generation\":$G,\"gpus\":[]}"
[ "$CODE" = 200 ] || { cat "$T/put" >&2; fail "generation max+2^20: HTTP $CODE, expected 200"; }; ok
contains "$T/a1.log" "lease granted: controller intruder generation $G"
wait_for 30 "the controller taking n1 back" 'grep -q "replaces intruder generation $G" "$T/a1.log"'
contains "$T/ctl.log" "agent n1: generation"
wait_for 30 "n1 capped again by the controller" 'capped "$P1"'
[ "$(ctl_gen n1)" -gt "$G" ] || fail "controller's generation for n1: $(ctl_gen n1), expected above $G"; ok
[ "$(ctl_gen n2)" -lt 1000 ] || fail "n2's generation moved with n1's: $(ctl_gen n2)"; ok
capped "$P2" || fail "n2 lost its caps"; ok
lacks "$T/a2.log" "rejected caps"
lacks "$T/ctl.log" "agent n2: PUT /v1/caps failed"

# ---- a controller restart continues each agent's own count ----
g1=$(ctl_gen n1); g2=$(ctl_gen n2)
stop_daemon "$CP" TERM
start_ctl
wait_for 30 "pushes after the restart" 'pushes_at_least 6'
no_new_push_errors 0
[ "$(ctl_gen n1)" = $((g1 + 1)) ] || fail "n1 after restart: $(ctl_gen n1), expected $((g1 + 1))"; ok
[ "$(ctl_gen n2)" = $((g2 + 1)) ] || fail "n2 after restart: $(ctl_gen n2), expected $((g2 + 1))"; ok
both_capped || { show_logs; fail "caps lost after the restart"; }; ok

# ---- an operator resets agent n1's state: the controller alarms, then continues ----
stop_daemon "$AP1" TERM   # SIGTERM: baselines restored, the state file keeps no GPU
contains "$T/a1.state" '"gpus": []'
rm "$T/a1.state"
APORT=$P1 start_agent 1 "$B1"
rejects_seen() { [ "$(metric "$URL" pfi_ctl_generation_rejects_total)" -ge 1 ] 2>/dev/null; }
wait_for 30 "the alarm counter" rejects_seen
contains "$T/ctl.log" "ALARM: agent n1 rejected our generation"
wait_for 30 "n1 capped after its reset" 'capped "$P1"'
[ "$(ctl_gen n1)" -lt 1000 ] || fail "n1's generation not restarted: $(ctl_gen n1)"; ok
capped "$P2" || fail "n2 lost its caps"; ok

# ---- an agent raised to 2^53 before the bound existed: an alarm until an operator resets it ----
stop_daemon "$AP1" TERM
printf '{"format_version": 1, "generation_max": 9007199254740992, "lease": null, "gpus": []}\n' >"$T/a1.state"
r0=$(metric "$URL" pfi_ctl_generation_rejects_total)
APORT=$P1 start_agent 1 "$B1"
rejects_more() { [ "$(metric "$URL" pfi_ctl_generation_rejects_total)" -gt "$r0" ] 2>/dev/null; }
wait_for 30 "an alarm for the unreachable generation" rejects_more
contains "$T/ctl.log" "ALARM: agent n1 needs generation 9007199254740993"
capped "$P2" || fail "n2 lost its caps while n1 was out of reach"; ok
stop_daemon "$AP1" TERM
rm "$T/a1.state"
APORT=$P1 start_agent 1 "$B1"
wait_for 30 "n1 capped after the operator's reset" 'capped "$P1"'
done_ok
