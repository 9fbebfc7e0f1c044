#!/bin/sh
# test_agent.sh — pfi-agent end to end on simulated GPUs and on the NVML test
# double: metrics and node view, job mapping (processes, job files,
# dcgm-exporter mapping files), step-log throughput and predicted PFI, the
# caps API with its token, every kind of bad request (4xx, JSON error,
# nothing changed), 10,000 malformed requests in a row, lease expiry
# restoring within a second, two controllers (the higher generation wins,
# both logged), kill -9 during a lease and restart (live lease honoured,
# expired one restored), SIGTERM restoring, --keep-caps-on-exit.
. "$SRC/tests/cli/lib.sh"
: "${PFI_AGENT:?}"
command -v curl >/dev/null || fail "curl is needed (scripts/bootstrap.sh test)"

head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$T/token"
chmod 600 "$T/token"
TOKEN=$(cat "$T/token")
HW=$T/hw.json           # the simulated GPUs' caps ("hardware", kept across agents)
STATE=$T/agent-state.json
SIM="sim:name=t,gpus=8,job=17:moe-ft-qwen30ba3b-x8@0-7,steplogs=$T,noise=0.002,load=0,state=$HW"
PID=

start_agent() { # extra options...
  start_daemon agent "$T/agent.log" "$T/port" "$PFI_AGENT" --log-level debug --backend "$SIM" --listen 127.0.0.1:0 --port-file "$T/port" \
    --token-file "$T/token" --state-file "$STATE" --interval 0.2 --log "$T/agent.log" "$@"
  PID=$DPID; URL=http://127.0.0.1:$DPORT
  case "$*" in *--tls-cert*) ;; *) rounds 3;; esac # a few samples (plain HTTP)
}
stop_agent() { stop_daemon $PID "${1:-TERM}"; PID=; }
# rounds K: wait until the agent has taken K more sampling rounds
rounds() { wait_counter 30 "$URL" pfi_agent_samples_total "$1"; }

# req METHOD PATH [BODY [AUTH]] -> $CODE, body in $T/body
req() {
  m=$1 p=$2 b=${3-} a=${4-Bearer $TOKEN}
  if [ -n "$b" ]; then
    CODE=$(curl -s -o "$T/body" -w '%{http_code}' -X "$m" -H "Authorization: $a" -H 'Content-Type: application/json' --data-binary "$b" "$URL$p")
  else
    CODE=$(curl -s -o "$T/body" -w '%{http_code}' -X "$m" -H "Authorization: $a" "$URL$p")
  fi
}
expect_code() { [ "$CODE" = "$1" ] || { cat "$T/body" >&2; fail "HTTP $CODE, expected $1 ($2)"; }; ok; }
# the cap in the agent's metrics (after a whole sampling round) and in the simulated hardware (at once)
cap_of() { rounds 2 >&2; curl -s -m 5 "$URL/metrics" | awk -v g="$1" -F'[ {}]' '$1=="pfi_gpu_power_cap_watts" && index($0, "gpu=\"" g "\""){print $NF}'; }
hw_cap() { tr -d ' \n' <"$HW" | sed 's/.*"caps_w":\[//; s/\].*//' | cut -d, -f$(($1 + 1)); }

# ---- start-up checks ----
chmod 644 "$T/token"
expect_status 1 "$PFI_AGENT" --backend "$SIM" --token-file "$T/token" --state-file "$STATE" --listen 127.0.0.1:0
contains "$T/err" "chmod 600"
chmod 600 "$T/token"
expect_error 2 "unknown option" "$PFI_AGENT" --bogus
expect_status 1 "$PFI_AGENT" --backend 'sim:gpus=99' --state-file "$STATE"
contains "$T/err" "gpus"

start_agent
# ---- reading ----
curl -s "$URL/metrics" >"$T/m"
n=$(grep -c '^pfi_gpu_power_watts{' "$T/m"); [ "$n" -eq 8 ] || fail "$n power lines"; ok
lacks "$T/m" 'DCGM_FI_' # dcgm-exporter's names only with --export-dcgm (test_prometheus)
contains "$T/m" 'pfi_job_gpus{hpc_job="17"'
contains "$T/m" 'pfi_gpu_dram_active_ratio{'
contains "$T/m" '# TYPE pfi_gpu_power_cap_watts gauge'
[ "$(cap_of 3)" = "700" ] || fail "cap of GPU 3 is $(cap_of 3)"; ok
req GET /v1/node
expect_code 200 "node"
contains "$T/body" '"job_id":"17"'
contains "$T/body" '"cap_max_w":700'
[ "$(grep -o '"uuid"' "$T/body" | wc -l)" -eq 8 ] || fail "node view lacks GPUs"; ok
# a step takes about 2.5 s
wait_for 30 "throughput of job 17" 'curl -s -m 5 "$URL/metrics" | grep -qF "pfi_job_tokens_per_second{hpc_job=\"17\""'

# ---- pfi record of the agent's /metrics ingests: pfi_gpu_* names read in DCGM's units ----
mkdir -p "$T/rec"
expect_status 0 "$PFI" record --url "$URL/metrics" --interval 0.3 --count 8 -o "$T/rec/tel.prom"
t0=$(awk '/^# pfi-scrape-time/ {printf "%.3f\n", $3 / 1000; exit}' "$T/rec/tel.prom")
awk -v t0="$t0" 'BEGIN { for (i = -5; i < 60; i++) printf "{\"t_s\": %.3f, \"tokens_per_s\": %d}\n", t0 + i * 0.05, 1000 + i }' >"$T/rec/steps.jsonl"
cat >"$T/rec/run.json" <<JSON
{"group": "rec", "gpu_model": "H200", "gpus": 8, "cap_w": 700, "interval_s": 0.3,
 "telemetry": [{"path": "tel.prom", "format": "prometheus"}], "steplog": "steps.jsonl"}
JSON
expect_status 0 "$PFI" ingest --sustain 1 --fb-threshold-gib 1 "$T/rec"
p=$(csv_field "$T/out" group rec power_w)
# the mean over scrapes of the 8 GPUs' summed pfi_gpu_power_watts
want=$(awk '/^# pfi-scrape-time/ {n++} /^pfi_gpu_power_watts\{/ {s += $NF} END {print s / n}' "$T/rec/tel.prom")
awk -v p="$p" -v w="$want" 'BEGIN { d = p - w; if (d < 0) d = -d; exit !(w > 1000 && d <= 0.05 * w) }' || fail "recorded power $p W, the scrapes' mean $want W"; ok
sm=$(csv_field "$T/out" group rec DCGM_FI_DEV_SM_CLOCK)
awk -v v="$sm" 'BEGIN { exit !(v > 300 && v < 3000) }' || fail "SM clock $sm, expected MHz"; ok
fb=$(csv_field "$T/out" group rec DCGM_FI_DEV_FB_USED)
awk -v v="$fb" 'BEGIN { exit !(v > 1000 && v < 200000) }' || fail "framebuffer $fb, expected MiB"; ok

# ---- bad requests: 4xx, a JSON error, nothing changed ----
B='{"lease_s":30,"controller":"c","generation":1,"jobs":[{"job_id":"17","cap_w":400}]}'
req PUT /v1/caps "$B" ""; expect_code 401 "no token"
req PUT /v1/caps "$B" "Bearer wrong-token-wrong-token-123"; expect_code 401 "wrong token"
contains "$T/body" '"error"'
req PUT /v1/caps '{"lease_s":30,' ; expect_code 400 "malformed"
contains "$T/body" '"error":"request body'
req PUT /v1/caps '{"lease_s":30,"controller":"c","generation":1,"colour":"red"}'; expect_code 400 "unknown field"
contains "$T/body" 'colour: unknown field'
req PUT /v1/caps '{"lease_s":30,"controller":"c","generation":1,"gpus":[{"index":0,"cap_w":800}]}'; expect_code 422 "out of range"
contains "$T/body" 'outside the device'
req PUT /v1/caps '{"lease_s":30,"controller":"c","generation":1,"gpus":[{"uuid":"GPU-nope","cap_w":400}]}'; expect_code 422 "unknown uuid"
req PUT /v1/caps '{"lease_s":30,"controller":"c","generation":1,"jobs":[{"job_id":"99","cap_w":400}]}'; expect_code 422 "unknown job"
req PUT /v1/caps '{"lease_s":99999,"controller":"c","generation":1}'; expect_code 400 "lease too long"
head -c 100000 /dev/zero | tr '\0' ' ' >"$T/big"
CODE=$(curl -s -o "$T/body" -w '%{http_code}' -X PUT -H "Authorization: Bearer $TOKEN" --data-binary @"$T/big" "$URL/v1/caps")
expect_code 413 "oversized"
req POST /v1/caps "$B"; expect_code 405 "POST"
req GET /v1/nothing; expect_code 404 "unknown path"
for g in 0 5 7; do [ "$(cap_of $g)" = "700" ] || fail "a rejected request changed GPU $g"; ok; done
# 10,000 malformed requests in a row
"$TOOLS/http_hammer" "$URL" 10000 "$TOKEN" >"$T/hammer"
contains "$T/hammer" "4xx=10000 other=0"
req GET /healthz; expect_code 200 "alive after the hammer"
[ "$(cap_of 0)" = "700" ] || fail "the hammer changed a cap"; ok
[ "$(hw_cap 0)" = "700.0" ] || [ "$(hw_cap 0)" = "700" ] || fail "hardware cap $(hw_cap 0)"; ok

# ---- a lease: caps set, expiry restores within a second ----
req PUT /v1/caps '{"lease_s":2,"controller":"ctl-a","generation":1,"jobs":[{"job_id":"17","cap_w":400}]}'
expect_code 200 "valid"
contains "$T/body" '"baseline_w":700'
EXP=$(sed 's/.*"lease_expires_at":\([0-9.e+]*\).*/\1/' "$T/body")
[ "$(cap_of 0)" = "400" ] && [ "$(cap_of 7)" = "400" ] || fail "caps not set"; ok
contains "$T/agent.log" "cap 700 -> 400 W (controller ctl-a, generation 1)"
# polled directly (20 ms) to measure the delay; bounded by the wall clock
while [ "$(hw_cap 0)" = "400.0" ] || [ "$(hw_cap 0)" = "400" ]; do
  sleep 0.02
  check_daemons "the lease to expire"
  awk -v e="$EXP" -v b="$(date +%s.%N)" 'BEGIN{exit !(b - e < 5)}' || fail "lease never expired"
done
late=$(awk -v e="$EXP" -v b="$(date +%s.%N)" 'BEGIN{printf "%.3f", b - e}')
# restored after the lease's end, within one second of it
awk -v d="$late" 'BEGIN{exit !(d <= 1.0 && d >= -0.05)}' || fail "restored $late s after the lease ended"; ok
echo "lease restored $late s after it ended"
contains "$T/agent.log" "expired"
[ "$(cap_of 4)" = "700" ] || fail "GPU 4 not restored"; ok

# ---- two controllers: the higher generation wins, both logged ----
req PUT /v1/caps '{"lease_s":30,"controller":"ctl-a","generation":5,"gpus":[{"index":0,"cap_w":500}]}'; expect_code 200 "a@5"
req PUT /v1/caps '{"lease_s":30,"controller":"ctl-b","generation":4,"gpus":[{"index":0,"cap_w":300}]}'; expect_code 409 "b@4 stale"
req PUT /v1/caps '{"lease_s":30,"controller":"ctl-b","generation":5,"gpus":[{"index":0,"cap_w":300}]}'; expect_code 409 "b@5 busy"
[ "$(cap_of 0)" = "500" ] || fail "a lost write changed the cap"; ok
req PUT /v1/caps '{"lease_s":30,"controller":"ctl-b","generation":6,"gpus":[{"index":0,"cap_w":300}]}'; expect_code 200 "b@6"
req PUT /v1/caps '{"lease_s":30,"controller":"ctl-a","generation":5,"gpus":[{"index":0,"cap_w":550}]}'; expect_code 409 "a@5 now stale"
[ "$(cap_of 0)" = "300" ] || fail "cap is $(cap_of 0), expected ctl-b's 300"; ok
contains "$T/agent.log" "rejected caps from controller ctl-b generation 4"
contains "$T/agent.log" "lease taken over: controller ctl-b generation 6 replaces ctl-a generation 5"
# concurrent writers: the state stays consistent (one of them holds the lease)
CPIDS=
for g in 10 11 12 13 14 15 16 17; do
  curl -s -o /dev/null -X PUT -H "Authorization: Bearer $TOKEN" --data-binary \
    "{\"lease_s\":30,\"controller\":\"w$g\",\"generation\":$g,\"gpus\":[{\"index\":1,\"cap_w\":$((g * 20 + 100))}]}" "$URL/v1/caps" &
  CPIDS="$CPIDS $!"
done
for p in $CPIDS; do wait "$p"; done
req GET /v1/node
contains "$T/body" '"generation_max":17'
[ "$(cap_of 1)" = "440" ] || fail "after concurrent writes GPU 1 is $(cap_of 1), expected generation 17's 440"; ok
grep -q '"controller": "w17"' "$STATE" || fail "state file lacks the winner"; ok

# ---- kill -9 during a live lease, restart: honoured ----
stop_agent KILL
[ "$(hw_cap 1)" = "440.0" ] || [ "$(hw_cap 1)" = "440" ] || fail "hardware lost its cap ($(hw_cap 1))"; ok
start_agent
contains "$T/agent.log" "still live"
[ "$(cap_of 1)" = "440" ] || fail "live lease not honoured after kill -9"; ok
# ---- kill -9 with a lease that then expires: restored at start ----
req PUT /v1/caps '{"lease_s":1,"controller":"w17","generation":17,"gpus":[{"index":2,"cap_w":350}]}'; expect_code 200 "short lease"
EXP=$(sed 's/.*"lease_expires_at":\([0-9.e+]*\).*/\1/' "$T/body")
stop_agent KILL
# the lease ends while no agent runs (its end on the wall clock, from the reply)
wait_for 10 "the 1 s lease to end" 'num "$(date +%s.%N)" ">" "$EXP"'
start_agent
contains "$T/agent.log" "has expired"
[ "$(cap_of 2)" = "700" ] && [ "$(cap_of 1)" = "700" ] || fail "expired lease not restored at start"; ok

# ---- SIGTERM restores; --keep-caps-on-exit keeps ----
req PUT /v1/caps '{"lease_s":60,"controller":"w17","generation":18,"gpus":[{"index":3,"cap_w":450}]}'; expect_code 200 "lease"
stop_agent
[ "$(hw_cap 3)" = "700.0" ] || [ "$(hw_cap 3)" = "700" ] || fail "SIGTERM left GPU 3 at $(hw_cap 3)"; ok
contains "$T/agent.log" "baseline restored: agent stopping"
start_agent --keep-caps-on-exit
req PUT /v1/caps '{"lease_s":60,"controller":"w17","generation":19,"gpus":[{"index":3,"cap_w":450}]}'; expect_code 200 "lease"
stop_agent
[ "$(hw_cap 3)" = "450.0" ] || [ "$(hw_cap 3)" = "450" ] || fail "--keep-caps-on-exit did not keep the cap"; ok
start_agent
[ "$(cap_of 3)" = "450" ] || fail "the kept lease was not honoured"; ok
req PUT /v1/caps '{"lease_s":5,"controller":"w17","generation":20,"gpus":[]}'; expect_code 200 "empty: all to baseline"
[ "$(cap_of 3)" = "700" ] || fail "an empty PUT did not restore baselines"; ok
stop_agent

# ---- job files, dcgm-exporter mapping files, predicted PFI ----
mkdir -p "$T/jobs" "$T/map"
printf '{"job_id": "a1", "gpus": [0, 1, 2, 3]}\n' >"$T/jobs/a1.json"
printf '{"job_id": "b2", "gpus": ["GPU-5151a000-ccaf-4000-8000-000000000006"]}\n' >"$T/jobs/b2.json"
expect_status 0 "$PFI" synth --summary --minutes 3 -o "$T/sweep.csv"
expect_status 0 "$PFI" fit --train-where split=headline --model "$T/model.json" -o "$T/fit.csv" "$T/sweep.csv"
start_agent --jobs-dir "$T/jobs" --job-mapping-dir "$T/map" --model "$T/model.json"
# the job mapping refreshes every 5 s
wait_for 30 "job files and mapping files" '[ "$(cat "$T/map/2" 2>/dev/null)" = a1 ] && [ "$(cat "$T/map/6" 2>/dev/null)" = b2 ] && curl -s -m 5 "$URL/v1/node" | grep -q "\"job_id\":\"a1\""'
req GET /v1/node
contains "$T/body" '"job_id":"a1"'
contains "$T/body" '"source":"jobfile"'
[ "$(cat "$T/map/2")" = "a1" ] || fail "mapping file 2: $(cat "$T/map/2")"; ok
[ "$(cat "$T/map/6")" = "b2" ] || fail "mapping file 6: $(cat "$T/map/6")"; ok
[ "$(cat "$T/map/5")" = "17" ] || fail "mapping file 5: $(cat "$T/map/5")"; ok
wait_for 30 "a predicted PFI for job 17" 'curl -s -m 5 "$URL/metrics" >"$T/m"; grep -q "^pfi_job_pfi_predicted{hpc_job=\"17\"" "$T/m"'
p=$(awk -F'[ ]' '/^pfi_job_pfi_predicted\{hpc_job="17"/{print $NF}' "$T/m")
[ -n "$p" ] || { grep pfi_job "$T/m" >&2; fail "no predicted PFI for job 17"; }; ok
awk -v p="$p" 'BEGIN{exit !(p > 1 && p < 4)}' || fail "predicted PFI $p"; ok
req PUT /v1/caps '{"lease_s":30,"controller":"w17","generation":21,"jobs":[{"job_id":"a1","cap_w":500}]}'; expect_code 200 "job a1"
[ "$(cap_of 3)" = "500" ] && [ "$(cap_of 4)" = "700" ] || fail "job caps went to the wrong GPUs"; ok
stop_agent

# ---- HTTPS ----
start_agent --tls-cert "$SRC/tests/data/tls/cert.pem" --tls-key "$SRC/tests/data/tls/key.pem"
P=$(cat "$T/port")
CODE=$(curl -s -o "$T/body" -w '%{http_code}' --cacert "$SRC/tests/data/tls/cert.pem" "https://127.0.0.1:$P/healthz")
expect_code 200 "https"
CODE=$(curl -s -o "$T/body" -w '%{http_code}' --cacert "$SRC/tests/data/tls/cert.pem" -X PUT -H "Authorization: Bearer $TOKEN" \
  --data-binary '{"lease_s":5,"controller":"tls","generation":30,"gpus":[{"index":0,"cap_w":600}]}' "https://127.0.0.1:$P/v1/caps")
expect_code 200 "https PUT"
if curl -s -o /dev/null "http://127.0.0.1:$P/healthz"; then fail "plain HTTP answered on the TLS port"; fi
ok
stop_agent
expect_status 1 "$PFI_AGENT" --backend "$SIM" --state-file "$STATE" --listen 127.0.0.1:0 --tls-cert "$SRC/tests/data/tls/cert.pem"
contains "$T/err" "--tls-key"

# ---- the NVML code path (test double): a real process's SLURM_JOB_ID ----
SLURM_JOB_ID=4242 PFI_STEPLOG=$T/nv.jsonl sleep 60 &
SPID=$!; PIDS="$PIDS $SPID"
export PFI_NVML_LIBRARY=$FAKE_NVML FAKE_NVML_GPUS=2 FAKE_NVML_STATE=$T/nvml-state FAKE_NVML_PROCS="0:$SPID,1:$SPID"
start_daemon "nvml agent" "$T/nv.log" "$T/port" "$PFI_AGENT" --backend nvml --job-env SLURM_JOB_ID --listen 127.0.0.1:0 --port-file "$T/port" \
  --token-file "$T/token" --state-file "$T/nv-state.json" --interval 0.2 --log "$T/nv.log"
PID=$DPID; URL=http://127.0.0.1:$DPORT
wait_for 30 "the NVML agent to map job 4242" 'curl -s -m 5 "$URL/v1/node" | grep -q "\"job_id\":\"4242\""'
req GET /v1/node
contains "$T/body" '"job_id":"4242"'
contains "$T/body" '"source":"process"'
contains "$T/body" '"backend":"nvml"'
req PUT /v1/caps '{"lease_s":30,"controller":"c","generation":1,"jobs":[{"job_id":"4242","cap_w":400}]}'; expect_code 200 "nvml job cap"
[ "$(head -1 "$T/nvml-state")" = "400000" ] || fail "NVML limit not set in mW: $(head -1 "$T/nvml-state")"; ok
stop_agent
[ "$(head -1 "$T/nvml-state")" = "700000" ] || fail "NVML limit not restored on SIGTERM"; ok
kill $SPID 2>/dev/null
FAKE_NVML_NO_PERMISSION=1 start_daemon "nvml agent (no permission)" "$T/nv2.log" "$T/port2" "$PFI_AGENT" --backend nvml \
  --listen 127.0.0.1:0 --port-file "$T/port2" --token-file "$T/token" --state-file "$T/nv-state.json" --interval 0.2 --log "$T/nv2.log"
PID=$DPID; URL=http://127.0.0.1:$DPORT
req PUT /v1/caps '{"lease_s":30,"controller":"c","generation":2,"gpus":[{"index":0,"cap_w":400}]}'
expect_code 503 "no permission"
contains "$T/body" 'Insufficient Permissions'
stop_agent
done_ok
