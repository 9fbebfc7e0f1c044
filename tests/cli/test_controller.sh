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
CTL=${PFI_CONTROLLER:-$(dirname "$PFI_AGENT")/pfi-controller}
export PFI_TIME_SCALE=20 PFI_EPOCH=$(date +%s)
new_token "$T/atok" "$T/ctok"
CTOK=$(cat "$T/ctok")
kill_daemons_on_exit
mkdir -p "$T/jobs2"

start_agent() { # N BACKEND [extra]
  n=$1; b=$2; shift 2
  rm -f "$T/a$n.port"
  "$PFI_AGENT" --backend "$b" --listen "127.0.0.1:${APORT:-0}" --port-file "$T/a$n.port" --token-file "$T/atok" \
    --state-file "$T/a$n.state" --interval 1 --log "$T/a$n.log" "$@" &
  eval "AP$n=$!"; PIDS="$PIDS $!"
  i=0; while [ ! -s "$T/a$n.port" ]; do i=$((i+1)); [ $i -lt 200 ] || fail "agent $n did not start"; sleep 0.05; done
}
B1="sim:gpus=8,job=j1:moe-ft-qwen30ba3b-x8@0-3,job=j2:dense-pt-llama70b-x8-compile@4-7,load=0,steplogs=$T,state=$T/hw1.json"
B2="sim:gpus=8,job=j3:moe-pt-gptoss20b-x8-ep1-nocompile@0-3,job=late:dense-ft-llama70b-x8-compile@4-7,load=0,idle,steplogs=$T,state=$T/hw2.json"
start_agent 1 "$B1"
start_agent 2 "$B2" --jobs-dir "$T/jobs2"
P1=$(cat "$T/a1.port"); P2=$(cat "$T/a2.port")
# j3 runs from a job file too (idle sims start on demand)
printf '{"job_id": "j3", "gpus": [0, 1, 2, 3]}\n' >"$T/jobs2/j3.json"

cfg() { # FILE extra-json
  cat >"$1" <<EOF
{"listen": "127.0.0.1:0", "token_file": "$T/ctok", "db": "$T/ctl.db", "control_period_s": 5, "baseline_window_s": 30,
 "lease_s": 30, "tiers": {"j2": 0, "j1": 3},
 "agents": [{"name": "n1", "url": "http://127.0.0.1:$P1", "token_file": "$T/atok"},
            {"name": "n2", "url": "http://127.0.0.1:$P2", "token_file": "$T/atok"}]$2}
EOF
}
# ---- configuration errors ----
cfg "$T/c.json" ', "colour": 1'
expect_error 1 "colour: unknown key" "$CTL" --config "$T/c.json"
cfg "$T/c.json" ', "strategy": "magic"'
expect_error 1 "strategy" "$CTL" --config "$T/c.json"
printf '{"agents": []}' >"$T/c.json"
expect_error 1 "agents" "$CTL" --config "$T/c.json"
expect_error 2 "--config FILE is required" "$CTL"

# ---- start ----
NOW() { awk -v e="$PFI_EPOCH" -v w="$(date +%s.%N)" 'BEGIN{printf "%.3f", e + (w - e) * 20}'; }
ISO() { date -u -d "@$(printf '%.0f' "$1")" +%Y-%m-%dT%H:%M:%SZ; }
cat >"$T/sched.json" <<EOF
[{"id": "planned-1", "start": "$(ISO $(awk -v n="$(NOW)" 'BEGIN{printf "%.0f", n + 100000}'))", "duration_s": 600, "level": 2}]
EOF
cfg "$T/ctl.json" ", \"schedule\": \"$T/sched.json\", \"non_gpu_offset_kw\": 5"
start_ctl() {
  rm -f "$T/c.port"
  "$CTL" --config "$T/ctl.json" --port-file "$T/c.port" 2>>"$T/ctl.log" &
  CP=$!; PIDS="$PIDS $CP"
  i=0; while [ ! -s "$T/c.port" ]; do i=$((i+1)); [ $i -lt 200 ] || { cat "$T/ctl.log" >&2; fail "controller did not start"; }; sleep 0.05; done
  URL=http://127.0.0.1:$(cat "$T/c.port")
}
start_ctl
req() { # METHOD PATH [BODY [TOKEN]]
  CODE=$(curl -s -o "$T/body" -w '%{http_code}' -X "$1" -H "Authorization: Bearer ${4-$CTOK}" ${3:+--data-binary "$3"} "$URL$2")
}
expect_code() { [ "$CODE" = "$1" ] || { cat "$T/body" >&2; fail "HTTP $CODE, expected $1 ($2)"; }; ok; }
status_num() { curl -s "$URL/v1/status" | sed -n "s/.*\"$1\":\([-0-9.e+]*\).*/\1/p"; }
acap() { curl -s "http://127.0.0.1:$1/metrics" | awk -F'[ {}]' -v g="$2" '$1=="pfi_gpu_power_cap_watts" && index($0, "gpu=\"" g "\""){print $NF}'; }
sleep 3 # baselines (30 clock s = 1.5 s)
req GET /v1/events; expect_code 200 "events"
contains "$T/body" '"id":"planned-1"'
contains "$T/body" '"source":"schedule"'

# ---- the events API: token, validation ----
S=$(ISO $(awk -v n="$(NOW)" 'BEGIN{printf "%.0f", n + 20}'))
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
i=0; until curl -s "$URL/v1/events/ev30" | grep -q '"status":"active"'; do i=$((i+1)); [ $i -lt 200 ] || fail "event never started"; sleep 0.05; done
sleep 1.2 # two periods (0.5 s) plus the agents' response
B=$(status_num budget_w); M=$(status_num measured_w)
awk -v b="$B" -v m="$M" 'BEGIN{exit !(m <= b * 1.02)}' || fail "measured $M W over target $B W + 2% two periods in"; ok
echo "event at target: measured $M W, target $B W"
[ "$(acap $P1 5)" = "700" ] || fail "Flex 0 job j2 was capped ($(acap $P1 5) W)"; ok
c1=$(acap $P1 0); awk -v c="$c1" 'BEGIN{exit !(c < 700)}' || fail "job j1 not capped"; ok
contains "$T/a1.log" "controller pfi-controller@"

# ---- a job starts mid-event, and ends ----
printf '{"job_id": "late", "gpus": [4, 5, 6, 7], "steplog": "%s/late.jsonl"}\n' "$T" >"$T/jobs2/late.json"
i=0; until curl -s "$URL/v1/status" | grep -q '"job_id":"late"'; do i=$((i+1)); [ $i -lt 300 ] || fail "late job never seen"; sleep 0.05; done
contains "$T/a2.log" "simulated job late"
sleep 1.5
cl=$(acap $P2 5); awk -v c="$cl" 'BEGIN{exit !(c < 700)}' || fail "the late job was not capped ($cl)"; ok
B=$(status_num budget_w); M=$(status_num measured_w)
awk -v b="$B" -v m="$M" 'BEGIN{exit !(m <= b * 1.02)}' || fail "with the late job: $M W over $B W"; ok
rm "$T/jobs2/late.json"
i=0; while curl -s "$URL/v1/status" | grep -q '"job_id":"late"'; do i=$((i+1)); [ $i -lt 300 ] || fail "late job never ended"; sleep 0.05; done
contains "$T/ctl.log" "job late is gone"
sleep 0.8
[ "$(acap $P2 5)" = "700" ] || fail "the ended job's GPUs keep a cap ($(acap $P2 5))"; ok

# ---- an agent dies mid-event: the others are cut further; it comes back ----
before=$(acap $P1 0)
kill -9 $AP2; wait $AP2 2>/dev/null
i=0; until grep -q "agent n2 .* unreachable" "$T/ctl.log"; do i=$((i+1)); [ $i -lt 200 ] || fail "no unreachable"; sleep 0.05; done
sleep 2.5 # past the lease (30 clock s = 1.5 s): its jobs count as uncapped
after=$(acap $P1 0)
awk -v a="$after" -v b="$before" 'BEGIN{exit !(a < b)}' || fail "j1 not cut further with n2 gone ($before -> $after W)"; ok
echo "agent n2 gone: j1 cap $before -> $after W"
APORT=$P2 start_agent 2 "$B2" --jobs-dir "$T/jobs2"
i=0; until grep -q "agent n2 .* is back" "$T/ctl.log"; do i=$((i+1)); [ $i -lt 200 ] || fail "n2 not back"; sleep 0.05; done
sleep 1.5
c3=$(acap $P2 0); awk -v c="$c3" 'BEGIN{exit !(c < 700)}' || fail "n2 not re-integrated (j3 cap $c3)"; ok

# ---- the controller restarts mid-event: caps not lifted, the event resumes ----
capped=$(acap $P1 0)
kill -TERM $CP; wait $CP
contains "$T/ctl.log" "caps stay under the agents' leases"
sleep 0.3
c_down=$(acap $P1 0)
awk -v c="$c_down" 'BEGIN{exit !(c < 700)}' || fail "caps lifted while the controller was down (was $capped, now $c_down)"; ok
start_ctl
contains "$T/ctl.log" "resuming event ev30"
sleep 1
[ "$(acap $P1 0)" != "700" ] || fail "caps lifted after the restart"; ok

# ---- the end: caps handed back ----
i=0; until curl -s "$URL/v1/events/ev30" | grep -q '"status":"done"'; do i=$((i+1)); [ $i -lt 600 ] || fail "event never ended"; sleep 0.05; done
sleep 0.6
for g in 0 3 5; do [ "$(acap $P1 $g)" = "700" ] || fail "n1 GPU $g not restored"; ok; done
[ "$(acap $P2 0)" = "700" ] || fail "n2 GPU 0 not restored"; ok
contains "$T/ctl.log" "caps handed back to the agents"

# ---- the report ----
req GET /v1/events/ev30/report; expect_code 200 "report"
cp "$T/body" "$T/report.json"
# disturbances (a job starting uncapped, an agent lost past its lease with a
# Flex 0 job holding its power) put some periods over target: reported, not hidden
contains "$T/report.json" '"met": false'
w=$(sed -n 's/.*"steady_within_target_pct": \([0-9.]*\).*/\1/p' "$T/report.json")
awk -v w="$w" 'BEGIN{exit !(w >= 60 && w < 100)}' || fail "steady periods within target: $w%"; ok
echo "ev30 (with a job start, an agent loss, a controller restart): $w% of steady periods within target"
grep -Eq '"requested_reduction_pct": (19\.99|20)' "$T/report.json" || fail "requested reduction not 20%"; ok
grep -q '"time_to_target_s": [0-9]' "$T/report.json" || fail "no time to target"; ok
grep -q '"energy_shed_kwh": [0-9]' "$T/report.json" || fail "no energy shed"; ok
contains "$T/report.json" '"job_id": "j2"'
contains "$T/report.json" '"sla_ok": true'
lacks "$T/report.json" '"sla_ok": false'
curl -s -o "$T/r.png" "$URL/v1/events/ev30/report.png"
[ "$(od -An -tx1 -N4 "$T/r.png" | tr -d ' \n')" = "89504e47" ] || fail "report.png is not a PNG"; ok
[ "$(wc -c <"$T/r.png")" -gt 10000 ] || fail "report.png too small"; ok

# ---- a clean event: met ----
S=$(ISO $(awk -v n="$(NOW)" 'BEGIN{printf "%.0f", n + 5}'))
req POST /v1/events "{\"id\":\"clean\",\"start\":\"$S\",\"duration_s\":200,\"reduction_pct\":20}"; expect_code 201 "clean event"
i=0; until curl -s "$URL/v1/events/clean" | grep -q '"status":"done"'; do i=$((i+1)); [ $i -lt 600 ] || fail "clean event never ended"; sleep 0.05; done
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
contains "$T/m" 'pfi_ctl_job_power_watts{job="j1",tier='
kill -TERM $CP; wait $CP

# ---- dry run: computed and reported, no cap pushed ----
rm -f "$T/ctl.db"*
cfg "$T/ctl.json" ''
rm -f "$T/c.port"
"$CTL" --config "$T/ctl.json" --port-file "$T/c.port" --dry-run 2>>"$T/ctl.log" &
CP=$!; PIDS="$PIDS $CP"
i=0; while [ ! -s "$T/c.port" ]; do i=$((i+1)); [ $i -lt 200 ] || fail "dry-run controller did not start"; sleep 0.05; done
URL=http://127.0.0.1:$(cat "$T/c.port")
sleep 2
S=$(ISO $(awk -v n="$(NOW)" 'BEGIN{printf "%.0f", n + 5}'))
req POST /v1/events "{\"id\":\"dry\",\"start\":\"$S\",\"duration_s\":100,\"reduction_pct\":30}"; expect_code 201 "dry event"
i=0; until curl -s "$URL/v1/events/dry" | grep -q '"status":"active"'; do i=$((i+1)); [ $i -lt 200 ] || fail "dry event never started"; sleep 0.05; done
sleep 1
[ "$(acap $P1 0)" = "700" ] || fail "dry run pushed caps"; ok
grep -q '"alloc_cap_w":[0-9]' <<EOF || fail "dry run computed no allocation"
$(curl -s "$URL/v1/status")
EOF
ok
req GET /v1/events/dry/report; contains "$T/body" '"dry_run": true'
kill -TERM $CP; wait $CP
done_ok
