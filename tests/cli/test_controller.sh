#!/bin/sh
# test_controller.sh — pfi-controller with two agents on simulated GPUs, on
# a shared clock 20x faster: configuration errors; the events API (token,
# validation, updates, past events, cancel); a 30% event (target + 2% within
# two periods after the ramp, tiers honoured: a Flex 0 job keeps its cap), a 20% event;
# a job that starts and one that ends mid-event; an agent killed mid-event
# (its jobs as fixed load, the others cut further) and brought back; a
# controller restart mid-event (caps not lifted, the event resumed from
# SQLite); the end (caps handed back); the report (JSON + PNG); OpenADR 3
# (webhook, DELETE); a schedule file; dry run; metrics.
. "$SRC/tests/cli/lib.sh"
: "${PFI_AGENT:?}"
CTL=${PFI_CONTROLLER_BIN:-$(dirname "$PFI_AGENT")/pfi-controller}
export PFI_TIME_SCALE=20 PFI_EPOCH=$(date +%s)
new_token "$T/atok" "$T/ctok"
CTOK=$(cat "$T/ctok")
mkdir -p "$T/jobs2"

start_agent() { # N BACKEND [extra]
  n=$1; b=$2; shift 2
  start_daemon "agent $n" "$T/a$n.log" "$T/a$n.port" "$PFI_AGENT" --backend "$b" --listen "127.0.0.1:${APORT:-0}" \
    --port-file "$T/a$n.port" --token-file "$T/atok" --state-file "$T/a$n.state" --interval 1 --log "$T/a$n.log" "$@"
  eval "AP$n=$DPID"
}
B1="sim:name=n1,gpus=8,job=j1:moe-ft-qwen30ba3b-x8@0-3,job=j2:dense-pt-llama70b-x8-compile@4-7,load=0,steplogs=$T,state=$T/hw1.json"
B2="sim:name=n2,gpus=8,job=j3:moe-pt-gptoss20b-x8-ep1-nocompile@0-3,job=late:dense-ft-llama70b-x8-compile@4-7,load=0,idle,steplogs=$T,state=$T/hw2.json"
start_agent 1 "$B1"
start_agent 2 "$B2" --jobs-dir "$T/jobs2"
P1=$(cat "$T/a1.port"); P2=$(cat "$T/a2.port")
# simulated nodes' GPUs have UUIDs of their own (sim name=), so both agents'
# series join apart in Prometheus
u1=$(curl -s -m 5 "http://127.0.0.1:$P1/v1/node" | sed 's/.*"uuid":"\([^"]*\)".*/\1/' | head -c 23)
u2=$(curl -s -m 5 "http://127.0.0.1:$P2/v1/node" | sed 's/.*"uuid":"\([^"]*\)".*/\1/' | head -c 23)
[ -n "$u1" ] && [ "$u1" != "$u2" ] || fail "both simulated nodes' GPUs have UUIDs $u1..."; ok
# j3 runs from a job file too (idle sims start on demand)
printf '{"job_id": "j3", "gpus": [0, 1, 2, 3]}\n' >"$T/jobs2/j3.json"

cfg() { # FILE extra-json
  cat >"$1" <<EOF
{"listen": "127.0.0.1:0", "token_file": "$T/ctok", "db": "$T/ctl.db", "control_period_s": 5, "baseline_window_s": 30,
 "lease_s": 120, "tiers": {"j2": 0, "j1": 3},
 "agents": [{"name": "n1", "url": "http://127.0.0.1:$P1", "token_file": "$T/atok"},
            {"name": "n2", "url": "http://127.0.0.1:$P2", "token_file": "$T/atok"}]$2}
EOF
}
# ---- configuration errors ----
cfg "$T/c.json" ', "colour": 1'
expect_error 2 "colour: unknown key" "$CTL" --config "$T/c.json"
cfg "$T/c.json" ', "strategy": "magic"'
expect_error 2 "strategy" "$CTL" --config "$T/c.json"
printf '{"agents": []}' >"$T/c.json"
expect_error 2 "agents" "$CTL" --config "$T/c.json"
expect_error 2 "--config FILE is required" "$CTL"

# ---- start ----
NOW() { awk -v e="$PFI_EPOCH" -v w="$(date +%s.%N)" 'BEGIN{printf "%.3f", e + (w - e) * 20}'; }
ISO() { date -u -d "@$(printf '%.0f' "$1")" +%Y-%m-%dT%H:%M:%SZ; }
cat >"$T/sched.json" <<EOF
[{"id": "planned-1", "start": "$(ISO $(awk -v n="$(NOW)" 'BEGIN{printf "%.0f", n + 100000}'))", "duration_s": 600, "level": 2}]
EOF
cfg "$T/ctl.json" ", \"schedule\": \"$T/sched.json\", \"non_gpu_offset_kw\": 5"
start_ctl() { # [extra options]
  start_daemon controller "$T/ctl.log" "$T/c.port" "$CTL" --config "$T/ctl.json" --port-file "$T/c.port" "$@"
  CP=$DPID; URL=http://127.0.0.1:$DPORT
}
start_ctl
req() { # METHOD PATH [BODY [TOKEN]]
  CODE=$(curl -s -o "$T/body" -w '%{http_code}' -X "$1" -H "Authorization: Bearer ${4-$CTOK}" ${3:+--data-binary "$3"} "$URL$2")
}
expect_code() { [ "$CODE" = "$1" ] || { cat "$T/body" >&2; fail "HTTP $CODE, expected $1 ($2)"; }; ok; }
status_num() { curl -s -m 5 "$URL/v1/status" | sed -n "s/.*\"$1\":\([-0-9.e+]*\).*/\1/p"; }
acap() { curl -s -m 5 "http://127.0.0.1:$1/metrics" | awk -F'[ {}]' -v g="$2" '$1=="pfi_gpu_power_cap_watts" && index($0, "gpu=\"" g "\""){print $NF}'; }
# positive signals that time has passed: the controller's control periods
# (pfi_ctl_cycles_total) and the agents' sampling rounds (pfi_agent_samples_total)
periods() { wait_counter 30 "$URL" pfi_ctl_cycles_total "$1"; }
rounds() { wait_counter 30 "http://127.0.0.1:$1" pfi_agent_samples_total "$2"; }
# measured power within target + 2% (sets $B and $M)
at_target() { B=$(status_num budget_w); M=$(status_num measured_w); [ -n "$B" ] && num "$M" "<=" "$(awk -v b="$B" 'BEGIN{print b * 1.02}')"; }
ev_is() { curl -s -m 5 "$URL/v1/events/$1" | grep -q "\"status\":\"$2\""; }
periods 7 # baselines: 30 clock s = 6 periods of 5 s
req GET /v1/events; expect_code 200 "events"
contains "$T/body" '"id":"planned-1"'
contains "$T/body" '"source":"schedule"'

# ---- the events API: token, validation ----
# 120 clock s ahead (6 s of wall time at 20x): the checks below need the
# event still scheduled; 20 clock s (1 s) ran out under ASan on a loaded
# machine in a fresh root ('body lacks "status":"scheduled"')
S=$(ISO $(awk -v n="$(NOW)" 'BEGIN{printf "%.0f", n + 120}'))
EV="{\"id\":\"ev30\",\"start\":\"$S\",\"duration_s\":400,\"reduction_pct\":20}"
req POST /v1/events "$EV" nope; expect_code 401 "no token"
req POST /v1/events '{"start":"soon"}'; expect_code 400 "bad start"
contains "$T/body" 'start: expected an RFC 3339'
req POST /v1/events '{"start":"2020-01-01T00:00:00Z","duration_s":60,"level":1}'; expect_code 422 "past event"
req DELETE /v1/events/nope; expect_code 404 "unknown event"
req POST /v1/events "$EV"; expect_code 201 "event"
req POST /v1/events "$EV"; expect_code 200 "update while scheduled"
req GET /v1/events/ev30; expect_code 200 "one event"
contains "$T/body" '"status":"scheduled"'

# ---- the event: at target, tiers honoured ----
wait_for 30 "event ev30 to start" 'ev_is ev30 active'
k0=$(metric "$URL" pfi_ctl_cycles_total)
wait_for 30 "measured power within target + 2% (ev30)" at_target
k=$(( $(metric "$URL" pfi_ctl_cycles_total) - k0 ))
# counted in control periods, not seconds: two periods plus the agents' sampling
[ "$k" -le 6 ] || fail "target + 2% reached only $k periods after the start"; ok
echo "event at target after $k periods: measured $M W, target $B W"
# the log says which bound was met: the target plus the 2% tolerance, named
# (a bare "3814 W <= 3785 W" read as a contradiction, issue 30)
wait_for 30 "the log's at-target line for ev30" 'grep -q "event ev30: at target after" "$T/ctl.log"'
sed -n 's/.*event ev30: at target after [0-9.]* s (\([0-9]*\) W <= \([0-9]*\) W, the target \([0-9]*\) W + 2% tolerance)$/\1 \2 \3/p' "$T/ctl.log" >"$T/at"
[ -s "$T/at" ] || { grep "at target" "$T/ctl.log" >&2; fail "the at-target line does not name the target and tolerance"; }; ok
read -r am ab at <"$T/at"
awk -v m="$am" -v b="$ab" -v t="$at" 'BEGIN{exit !(m <= b && b - t * 1.02 <= 1 && t * 1.02 - b <= 1)}' ||
  fail "at target: $am W <= $ab W, target $at W + 2%"
ok
wait_for 30 "job j1 capped" 'num "$(acap $P1 0)" "<" 700'
[ "$(acap $P1 5)" = "700" ] || fail "Flex 0 job j2 was capped ($(acap $P1 5) W)"; ok
contains "$T/a1.log" "controller pfi-controller@"
# what the status page shows of it (/v1/status, keys added for the page)
curl -s -m 5 "$URL/v1/status" >"$T/st"
contains "$T/st" '"governing_event":"ev30"'
contains "$T/st" '"sets_target":true'
contains "$T/st" '"tolerance_pct":2'
grep -Eq '"met":(true|false),"met_basis":"now"' "$T/st" || fail "no met / not met for ev30 in /v1/status"; ok
grep -Eq '"job_id":"j1","tier":3,.*"loss_pct":-?[0-9.]+,"allowed_loss_pct":50' "$T/st" || fail "no loss for j1 in /v1/status"; ok
contains "$T/st" '"last_ok_age_s":'

# ---- a job starts mid-event, and ends ----
printf '{"job_id": "late", "gpus": [4, 5, 6, 7], "steplog": "%s/late.jsonl"}\n' "$T" >"$T/jobs2/late.json"
wait_for 30 "the controller to see the late job" 'curl -s -m 5 "$URL/v1/status" | grep -q "\"job_id\":\"late\""'
contains "$T/a2.log" "simulated job late"
wait_for 30 "the late job capped" 'num "$(acap $P2 5)" "<" 700'
wait_for 30 "measured power within target + 2% with the late job" at_target
rm "$T/jobs2/late.json"
wait_for 30 "the late job to end" '! curl -s -m 5 "$URL/v1/status" | grep -q "\"job_id\":\"late\""'
contains "$T/ctl.log" "job late is gone"
wait_for 30 "the ended job's GPUs back at 700 W" '[ "$(acap $P2 5)" = "700" ]'

# ---- an agent dies mid-event: the others are cut further; it comes back ----
before=$(acap $P1 0)
stop_daemon $AP2 KILL
wait_for 30 "the controller to find n2 unreachable" 'grep -q "agent n2 .* unreachable" "$T/ctl.log"'
# past n2's lease (120 clock s) on the controller's own clock: its jobs count as uncapped
lease_end=$(awk -v n="$(status_num now)" 'BEGIN{printf "%.0f", n + 120 + 5}')
wait_for 30 "the controller's clock past n2's lease" 'num "$(status_num now)" ">=" "$lease_end"'
wait_for 30 "j1 cut further with n2 gone (from $before W)" 'num "$(acap $P1 0)" "<" "$before"'
echo "agent n2 gone: j1 cap $before -> $(acap $P1 0) W"
APORT=$P2 start_agent 2 "$B2" --jobs-dir "$T/jobs2"
wait_for 30 "n2 back" 'grep -q "agent n2 .* is back" "$T/ctl.log"'
wait_for 30 "n2 re-integrated (j3 capped)" 'num "$(acap $P2 0)" "<" 700'

# ---- the controller restarts mid-event: caps not lifted, the event resumes ----
# The rule: no cap is lifted while the controller is down. Which GPUs are
# capped is the allocator's choice (after n2's return it may leave j1
# uncut), so the check takes every GPU of both nodes that is capped at the
# stop, whichever job it belongs to, and needs at least one.
allcaps() { for p in $P1 $P2; do for g in 0 1 2 3 4 5 6 7; do echo "$p $g $(acap $p $g)"; done; done; }
stop_daemon $CP TERM
contains "$T/ctl.log" "caps stay under the agents' leases"
allcaps | awk '$3 < 700' >"$T/capped_at_stop"
[ -s "$T/capped_at_stop" ] || { allcaps >&2; fail "no GPU capped when the controller stopped mid-event"; }; ok
# negative check: two of each node's sampling rounds (a few clock seconds,
# well inside the lease) with no controller; every cap must hold. The
# lease is 120 clock s (6 s of wall time at 20x): the controller renews it
# when under half is left, so at the stop at least 60 clock s (3 s wall)
# remain; with 30 s (under a second of wall time left at worst) a slow machine
# (ASan under load) let a lease end during the check
rounds $P1 2; rounds $P2 2
while read -r p g was; do
  now=$(acap "$p" "$g")
  num "$now" "<=" "$was" || fail "cap lifted while the controller was down (port $p GPU $g: was $was, now $now W)"; ok
done <"$T/capped_at_stop"
echo "controller down: $(wc -l <"$T/capped_at_stop") capped GPUs held"
start_ctl
contains "$T/ctl.log" "resuming event ev30"
periods 2
allcaps | awk '$3 < 700' | grep -q . || { allcaps >&2; fail "every cap lifted after the restart"; }; ok

# ---- the end: caps handed back ----
wait_for 60 "event ev30 to end" 'ev_is ev30 done'
for g in 0 3 5; do wait_for 30 "n1 GPU $g restored" '[ "$(acap $P1 $g)" = "700" ]'; done
wait_for 30 "n2 GPU 0 restored" '[ "$(acap $P2 0)" = "700" ]'
contains "$T/ctl.log" "caps handed back to the agents"

# ---- the report ----
req GET /v1/events/ev30/report; expect_code 200 "report"
cp "$T/body" "$T/report.json"
# disturbances (a job starting uncapped, an agent lost past its lease with a
# Flex 0 job holding its power) put some periods over target: reported, not hidden
contains "$T/report.json" '"met": false'
# the status page's verdict of an ended event is the report's
curl -s -m 5 "$URL/v1/status" | tr '{' '\n' | grep '"id":"ev30"' >"$T/st"
contains "$T/st" '"met":false,"met_basis":"steady window"'
w=$(sed -n 's/.*"steady_within_target_pct": \([0-9.]*\).*/\1/p' "$T/report.json")
awk -v w="$w" 'BEGIN{exit !(w >= 60 && w < 100)}' || fail "steady periods within target: $w%"; ok
echo "ev30 (with a job start, an agent loss, a controller restart): $w% of steady periods within target"
grep -Eq '"requested_reduction_pct": (19\.99|20)' "$T/report.json" || fail "requested reduction not 20%"; ok
grep -q '"time_to_target_s": [0-9]' "$T/report.json" || fail "no time to target"; ok
grep -q '"energy_shed_kwh": [0-9]' "$T/report.json" || fail "no energy shed"; ok
contains "$T/report.json" '"job_id": "j2"'
contains "$T/report.json" '"sla_ok": true'
# a job below its SLA only where the floors could not fit the budget (while
# n2 is lost its jobs' power is assumed, and j1 + j2 alone must carry the
# cut): the budget is hard, jobs go below their floors Flex 3 first, Flex 0
# (j2) last (docs/allocation.md), and the controller says so
if grep -q '"sla_ok": false' "$T/report.json"; then
  contains "$T/ctl.log" "cannot be met within the jobs' SLA floors"
fi
curl -s -o "$T/r.png" "$URL/v1/events/ev30/report.png"
[ "$(od -An -tx1 -N4 "$T/r.png" | tr -d ' \n')" = "89504e47" ] || fail "report.png is not a PNG"; ok
[ "$(wc -c <"$T/r.png")" -gt 10000 ] || fail "report.png too small"; ok

# ---- a clean event: met ----
S=$(ISO $(awk -v n="$(NOW)" 'BEGIN{printf "%.0f", n + 5}'))
req POST /v1/events "{\"id\":\"clean\",\"start\":\"$S\",\"duration_s\":200,\"reduction_pct\":20}"; expect_code 201 "clean event"
wait_for 60 "the clean event to end" 'ev_is clean done'
req GET /v1/events/clean/report
contains "$T/body" '"met": true'
contains "$T/body" '"steady_within_target_pct": 100'

# ---- OpenADR 3 ----
OS=$(ISO $(awk -v n="$(NOW)" 'BEGIN{printf "%.0f", n + 50000}'))
ADR="{\"objectType\":\"EVENT\",\"operation\":\"POST\",\"object\":{\"id\":\"adr-1\",\"intervalPeriod\":{\"start\":\"$OS\",\"duration\":\"PT1H\"},\"intervals\":[{\"id\":0,\"payloads\":[{\"type\":\"IMPORT_CAPACITY_LIMIT\",\"values\":[20]}]}]}}"
req POST /openadr3/events "$ADR" nope; expect_code 401 "openadr token"
req POST /openadr3/events "$ADR"; expect_code 200 "openadr"
contains "$T/body" '"target_kw":15'
contains "$T/body" '"source":"openadr"'
req POST /openadr3/events '{"objectType":"EVENT","operation":"DELETE","object":{"id":"adr-1"}}'; expect_code 200 "openadr delete"
req GET /v1/events/adr-1; contains "$T/body" '"status":"cancelled"'
req POST /openadr3/events '{"objectType":"EVENT","operation":"POST","object":{"id":"x","intervals":[]}}'; expect_code 400 "bad openadr"

# ---- metrics ----
curl -s "$URL/metrics" >"$T/m"
contains "$T/m" "pfi_ctl_agents_up 2"
contains "$T/m" "# TYPE pfi_ctl_job_allocation_watts gauge"
contains "$T/m" 'pfi_ctl_job_power_watts{hpc_job="j1",tier='
stop_daemon $CP TERM

# ---- dry run: computed and reported, no cap pushed ----
rm -f "$T/ctl.db"*
cfg "$T/ctl.json" ''
start_ctl --dry-run
periods 7 # baselines
S=$(ISO $(awk -v n="$(NOW)" 'BEGIN{printf "%.0f", n + 5}'))
req POST /v1/events "{\"id\":\"dry\",\"start\":\"$S\",\"duration_s\":100,\"reduction_pct\":30}"; expect_code 201 "dry event"
wait_for 30 "the dry event to start" 'ev_is dry active'
wait_for 30 "a dry-run allocation" 'curl -s -m 5 "$URL/v1/status" | grep -q "\"alloc_cap_w\":[0-9]"'
# negative check: two more periods and two of n1's sampling rounds after the
# allocation was computed; no cap may have been pushed
periods 2; rounds $P1 2
[ "$(acap $P1 0)" = "700" ] || fail "dry run pushed caps"; ok
req GET /v1/events/dry/report; contains "$T/body" '"dry_run": true'
stop_daemon $CP TERM
done_ok
