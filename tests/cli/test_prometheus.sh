#!/bin/sh
# test_prometheus.sh — a real Prometheus (Debian's, scripts/bootstrap.sh
# test) on 127.0.0.1 scrapes two pfi-agents on simulated GPUs (HTTPS with
# the read token, as contrib/prometheus/prometheus.yml documents) and a
# pfi-controller answering a grid event, with contrib/prometheus's rules
# loaded; PromQL answers are checked:
#   - sum by (hpc_job)(pfi_job_power_watts) is the jobs' power from the
#     agents' /v1/node (job ja runs on both agents, jb on one);
#   - nothing is counted twice: one pfi_gpu_power_watts series per GPU, no
#     DCGM_FI_* series from the agent without --export-dcgm, dcgm-exporter's
#     names (and the contrib join to hpc_job) from the one with it;
#   - both daemons' /metrics pass `promtool check metrics` with no finding,
#     both export pfi_build_info, the controller its per-event and per-job
#     baseline and loss series;
#   - every rule of contrib/prometheus/pfi-rules.yml evaluates (health ok)
#     and every PromQL expression of contrib/grafana/pfi.json (Grafana
#     variables as .*) is accepted and, during the event, has data;
#   - the controller killed (SIGKILL) during the event: PfiControllerDown and
#     PfiEventUnanswered fire on /api/v1/alerts (the rules loaded with every
#     `for` shortened to 2 s; nothing else changed), neither before.
# Prometheus runs at most 300 s and is killed at exit with the daemons
# (its pid is the one start_daemon watches: no wrapper to outlive).
. "$SRC/tests/cli/lib.sh"
: "${PFI_AGENT:?}"
CTL=${PFI_CONTROLLER_BIN:-$(dirname "$PFI_AGENT")/pfi-controller}
for t in prometheus promtool openssl curl; do
  command -v $t >/dev/null || fail "$t is needed (scripts/bootstrap.sh test)"
done
PY=/usr/bin/python3
PQ="$SRC/tests/tools/prom_query.py"
export PFI_TIME_SCALE=20 PFI_EPOCH=$(date +%s)
NOW() { awk -v e="$PFI_EPOCH" -v w="$(date +%s.%N)" 'BEGIN{printf "%.3f", e + (w - e) * 20}'; }
ISO() { date -u -d "@$(printf '%.0f' "$1")" +%Y-%m-%dT%H:%M:%SZ; }

# ---- a CA and the agents' server certificate for 127.0.0.1 ----
P=$T/pki; mkdir -p "$P"
ossl() { openssl "$@" >>"$P/openssl.log" 2>&1 || { cat "$P/openssl.log" >&2; fail "openssl $1 failed"; }; }
ossl req -x509 -newkey rsa:2048 -nodes -keyout "$P/ca.key" -out "$P/ca.pem" -days 2 -subj "/CN=pfi test CA"
ossl req -newkey rsa:2048 -nodes -keyout "$P/agent.key" -out "$P/agent.csr" -subj "/CN=127.0.0.1"
printf 'subjectAltName=IP:127.0.0.1\n' >"$P/san.ext"
ossl x509 -req -in "$P/agent.csr" -CA "$P/ca.pem" -CAkey "$P/ca.key" -CAcreateserial -out "$P/agent.pem" -days 2 -extfile "$P/san.ext"
new_token "$T/atok" "$T/rtok" "$T/ctok"

# ---- two agents (4 + 2 simulated GPUs; job ja on both, jb on the first), a controller ----
mkdir -p "$T/s1" "$T/s2"
B1="sim:gpus=4,job=ja:moe-ft-qwen30ba3b-x8@0-1,job=jb:dense-pt-llama70b-x8-compile@2-3,load=0,steplogs=$T/s1,state=$T/hw1.json"
B2="sim:gpus=2,job=ja:moe-ft-qwen30ba3b-x8@0-1,load=0,steplogs=$T/s2,state=$T/hw2.json"
start_agent() { # N BACKEND [extra]
  n=$1 b=$2; shift 2
  start_daemon "agent $n" "$T/a$n.log" "$T/a$n.port" "$PFI_AGENT" --backend "$b" --listen 127.0.0.1:0 \
    --port-file "$T/a$n.port" --token-file "$T/atok" --read-token-file "$T/rtok" --tls-cert "$P/agent.pem" \
    --tls-key "$P/agent.key" --state-file "$T/a$n.state" --interval 4 --log "$T/a$n.log" "$@"
}
start_agent 1 "$B1"; A1=$DPORT
start_agent 2 "$B2" --export-dcgm; A2=$DPORT
aget() { curl -s -m 5 --cacert "$P/ca.pem" -H "Authorization: Bearer $(cat "$T/rtok")" "https://127.0.0.1:$1$2"; }
# profiles at job start off: a profile steps the jobs' power while this test
# compares series Prometheus sampled at different moments (the recording
# rule's join against an instant query: 823 W against 661 W mid-profile)
cat >"$T/ctl.json" <<EOF
{"listen": "127.0.0.1:0", "token_file": "$T/ctok", "db": "$T/ctl.db", "control_period_s": 5, "lease_s": 30,
 "profile": false, "tiers": {"jb": 1},
 "agents": [{"name": "n1", "url": "https://127.0.0.1:$A1", "token_file": "$T/atok", "read_token_file": "$T/rtok", "ca_file": "$P/ca.pem"},
            {"name": "n2", "url": "https://127.0.0.1:$A2", "token_file": "$T/atok", "read_token_file": "$T/rtok", "ca_file": "$P/ca.pem"}]}
EOF
start_daemon controller "$T/ctl.log" "$T/c.port" "$CTL" --config "$T/ctl.json" --port-file "$T/c.port"
C=$DPORT; CPID=$DPID; CURL=http://127.0.0.1:$C
wait_for 60 "both agents up at the controller" 'curl -s -m 5 "$CURL/metrics" | grep -qx "pfi_ctl_agents_up 2"'
wait_for 60 "jobs ja and jb on agent 1" 'aget $A1 /v1/node | grep -q "\"job_id\":\"jb\""'

# ---- Prometheus on a free port, scraping every second, the contrib rules
# loaded with each alert's `for` at 2 s (so an alert fires within the test) ----
PP=$($PY "$PQ" free-port) || fail "no free port"
sed 's/^\( *for:\) .*/\1 2s/' "$SRC/contrib/prometheus/pfi-rules.yml" >"$T/pfi-rules.yml"
[ "$(grep -c '^ *for: 2s$' "$T/pfi-rules.yml")" = "$(grep -c '^ *for: ' "$SRC/contrib/prometheus/pfi-rules.yml")" ] ||
  fail "the rules' for: not all shortened"; ok
cat >"$T/prometheus.yml" <<EOF
global: {scrape_interval: 1s, evaluation_interval: 1s, scrape_timeout: 900ms}
rule_files: ["$T/pfi-rules.yml"]
scrape_configs:
  - job_name: pfi-agent
    scheme: https
    tls_config: {ca_file: "$P/ca.pem"}
    authorization: {type: Bearer, credentials_file: "$T/rtok"}
    static_configs: [{targets: ["127.0.0.1:$A1", "127.0.0.1:$A2"]}]
  - job_name: pfi-controller
    static_configs: [{targets: ["127.0.0.1:$C"]}]
EOF
expect_status 0 promtool check config "$T/prometheus.yml"
start_daemon prometheus "$T/prom.log" "" prometheus --config.file="$T/prometheus.yml" \
  --storage.tsdb.path="$T/tsdb" --web.listen-address="127.0.0.1:$PP" --log.level=warn
# bounded: stopped after 300 s whatever happens (and killed at exit with the daemons)
PROM=$DPID
(sleep 300 & echo $! >"$T/timer.pid"; wait; kill "$PROM" 2>/dev/null) >/dev/null 2>&1 &
PIDS="$PIDS $!"
kill_daemons_on_exit 'kill $(cat "$T/timer.pid" 2>/dev/null) 2>/dev/null'
PURL=http://127.0.0.1:$PP
wait_for 60 "Prometheus ready on port $PP" 'curl -s -m 2 -o /dev/null -w "%{http_code}" "$PURL/-/ready" | grep -q 200'
# q EXPR: the series lines of an instant query in $T/q (fails on a refused query); qval: the first value
q() { $PY "$PQ" "$PURL" query "$1" >"$T/q" 2>"$T/qerr" || { cat "$T/qerr" >&2; show_logs; fail "query refused: $1"; }; }
qval() { q "$1"; awk '{print $NF; exit}' "$T/q"; }
wait_for 60 "Prometheus scraping all three targets" '[ "$(qval "count(up == 1)")" = 3 ]'
wait_for 60 "both jobs' power in Prometheus" 'q "sum by (hpc_job) (pfi_job_power_watts)"; [ "$(wc -l <"$T/q")" -eq 2 ]'

# ---- per-job power: Prometheus against the agents' /v1/node (caps do not move before the event) ----
node_jobs() { # the sum of power_w per job over both agents' /v1/node
  for a in $A1 $A2; do aget $a /v1/node; echo; done | $PY -c '
import json, sys
s = {}
for line in sys.stdin:
    if line.strip():
        for j in json.loads(line)["jobs"]:
            s[j["job_id"]] = s.get(j["job_id"], 0) + j["power_w"]
for k in sorted(s): print(k, s[k])'
}
# jobs_match: Prometheus's per-job sum and /v1/node (read a moment apart; the
# simulated draw moves a little from step to step) within 2% for ja and jb
jobs_match() {
  q 'sum by (hpc_job) (pfi_job_power_watts)'
  node_jobs >"$T/node"
  grep -q '^{hpc_job="ja"} ' "$T/q" && grep -q '^{hpc_job="jb"} ' "$T/q" || return 1
  for j in ja jb; do
    p=$(awk -v j="$j" 'index($0, "hpc_job=\"" j "\"") {print $NF}' "$T/q"); n=$(awk -v j="$j" '$1 == j {print $2}' "$T/node")
    awk -v p="$p" -v n="$n" 'BEGIN{d=p-n; if(d<0)d=-d; exit !(n > 0 && d <= 0.02 * n)}' || return 1
  done
}
wait_for 30 "sum by (hpc_job)(pfi_job_power_watts) equal to the jobs' power in /v1/node" jobs_match; ok
for j in ja jb; do
  echo "job $j: sum by (hpc_job) in Prometheus $(awk -v j="$j" 'index($0, "hpc_job=\"" j "\"") {print $NF}' "$T/q") W, /v1/node $(awk -v j="$j" '$1 == j {print $2}' "$T/node") W"
done
# per GPU and per job agree (one scrape)
q 'sum by (hpc_job) (pfi_job_power_watts) - sum by (hpc_job) (pfi_gpu_power_watts)'
[ "$(wc -l <"$T/q")" -eq 2 ] || fail "GPU vs job power: $(cat "$T/q")"; ok
awk '{d=$NF; if(d<0)d=-d; if(d>0.5) exit 1}' "$T/q" || fail "GPU and job power differ: $(cat "$T/q")"; ok

# ---- nothing counted twice ----
[ "$(qval 'count(pfi_gpu_power_watts)')" = 6 ] || fail "pfi_gpu_power_watts series: $(cat "$T/q")"; ok
q 'count by (instance, uuid) (pfi_gpu_power_watts) > 1'; [ ! -s "$T/q" ] || fail "a GPU listed twice: $(cat "$T/q")"; ok
q "count({__name__=~\"DCGM_FI_.*\", instance=\"127.0.0.1:$A1\"})"; [ ! -s "$T/q" ] || fail "DCGM names without --export-dcgm: $(cat "$T/q")"; ok
[ "$(qval "count(DCGM_FI_DEV_POWER_USAGE{instance=\"127.0.0.1:$A2\"})")" = 2 ] || fail "--export-dcgm: $(cat "$T/q")"; ok
q "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\", instance=\"127.0.0.1:$A2\"}"
grep -q 'UUID="GPU-' "$T/q" && grep -q 'hostname="' "$T/q" && grep -q 'modelName="' "$T/q" && grep -q 'hpc_job="ja"' "$T/q" ||
  fail "dcgm-exporter's labels: $(cat "$T/q")"; ok
# the contrib join: DCGM power per hpc_job (only ja runs on the --export-dcgm agent)
wait_for 30 "the recording rule joining DCGM series to hpc_job" 'q "hpc_job:dcgm_fi_dev_power_usage:sum"; [ -s "$T/q" ]'
[ "$(wc -l <"$T/q")" -eq 1 ] && grep -q 'hpc_job="ja"' "$T/q" || fail "join: $(cat "$T/q")"; ok
d=$(awk '{print $NF}' "$T/q"); g=$(qval "sum(pfi_gpu_power_watts{instance=\"127.0.0.1:$A2\"})")
awk -v d="$d" -v g="$g" 'BEGIN{x=d-g; if(x<0)x=-x; exit !(g > 0 && x <= 0.03 * g)}' || fail "joined DCGM power $d W, pfi's $g W"; ok
[ "$(qval 'count(pfi_build_info)')" = 3 ] || fail "pfi_build_info: $(cat "$T/q")"; ok
q 'pfi_build_info{job="pfi-controller"}'; contains "$T/q" 'program="pfi-controller"'

# ---- a grid event: per-event, per-job baseline and loss series ----
EV="{\"id\": \"ev-1\", \"start\": \"$(ISO "$(NOW)")\", \"duration_s\": 3600, \"level\": 2}"
code=$(curl -s -o "$T/body" -w '%{http_code}' -X POST -H "Authorization: Bearer $(cat "$T/ctok")" --data-binary "$EV" "$CURL/v1/events")
[ "$code" = 201 ] || fail "POST event: HTTP $code $(cat "$T/body")"; ok
wait_for 60 "event ev-1's target in Prometheus" 'q "pfi_ctl_event_target_watts{event_id=\"ev-1\"}"; [ -s "$T/q" ]'
wait_for 60 "baselines, loss and the met verdict in Prometheus" \
  'q "pfi_ctl_job_baseline_watts"; [ "$(wc -l <"$T/q")" -eq 2 ] && q "pfi_ctl_job_throughput_loss_ratio" && [ -s "$T/q" ] && q "pfi_ctl_event_met" && [ -s "$T/q" ]'
q 'pfi_ctl_job_allowed_loss_ratio'; contains "$T/q" 'hpc_job="jb"'; contains "$T/q" 'tier="1"'
wait_for 60 "a lease on both agents" '[ "$(qval "sum(pfi_lease_active)")" = 2 ]'

# ---- promtool check metrics: nothing to say about either daemon's default output ----
aget $A1 /metrics >"$T/a1.prom"
contains "$T/a1.prom" 'pfi_gpu_power_watts{gpu="0",uuid="GPU-'
promtool check metrics <"$T/a1.prom" >"$T/lint" 2>&1 || { cat "$T/lint" >&2; fail "promtool check metrics: agent"; }
[ ! -s "$T/lint" ] || { cat "$T/lint" >&2; fail "promtool has findings on the agent's /metrics"; }; ok
curl -s -m 5 "$CURL/metrics" >"$T/c.prom"
contains "$T/c.prom" 'pfi_ctl_event_target_watts{event_id="ev-1"}'
contains "$T/c.prom" 'pfi_ctl_job_baseline_watts{hpc_job="ja",tier="'
promtool check metrics <"$T/c.prom" >"$T/lint" 2>&1 || { cat "$T/lint" >&2; fail "promtool check metrics: controller"; }
[ ! -s "$T/lint" ] || { cat "$T/lint" >&2; fail "promtool has findings on the controller's /metrics"; }; ok
# (the --export-dcgm agent's DCGM names keep dcgm-exporter's UUID/Hostname labels, which promtool flags)
aget $A2 /metrics | promtool check metrics >"$T/lint" 2>&1
contains "$T/lint" 'DCGM_FI_DEV_POWER_USAGE'

# ---- every rule evaluates; every dashboard expression is accepted ----
$PY "$PQ" "$PURL" rules >"$T/out" 2>"$T/err" || { cat "$T/err" >&2; fail "a contrib rule does not evaluate"; }; ok
contains "$T/out" "24 rules"
$PY "$PQ" "$PURL" dashboard "$SRC/contrib/grafana/pfi.json" >"$T/out" 2>"$T/err" || { cat "$T/err" >&2; fail "dashboard expressions refused"; }; ok
cat "$T/out"
# during the event every panel has data: a renamed series would leave one empty
contains "$T/out" ' exprs, 0 empty'

# ---- the controller killed during the event: its series stop, the alerts fire ----
alerts() { $PY "$PQ" "$PURL" alerts >"$T/alerts" 2>"$T/aerr" || { cat "$T/aerr" >&2; fail "GET /api/v1/alerts"; }; }
firing() { alerts; grep -q "^$1 firing {.*instance=\"127.0.0.1:$C\"" "$T/alerts"; }
[ "$(qval 'pfi_ctl_event_active')" = 1 ] || fail "no event active before the kill: $(cat "$T/q")"; ok
alerts; lacks "$T/alerts" "PfiControllerDown"
lacks "$T/alerts" "PfiEventUnanswered"
stop_daemon "$CPID" KILL
wait_for 60 "PfiControllerDown firing for the killed controller" 'firing PfiControllerDown'
wait_for 60 "PfiEventUnanswered firing for the killed controller" 'firing PfiEventUnanswered'
cat "$T/alerts"
# the controller's own series are gone (stale): what fires is the hold, not a leftover sample
q 'pfi_ctl_event_active'; [ ! -s "$T/q" ] || fail "pfi_ctl_event_active still there: $(cat "$T/q")"; ok
[ "$(qval "up{job=\"pfi-controller\"}")" = 0 ] || fail "up of the killed controller: $(cat "$T/q")"; ok
done_ok
