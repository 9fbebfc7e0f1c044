#!/bin/sh
# test_inject.sh — a job's user chooses what its environment says (issue 14
# item 3, docs/security.md "Job ids"):
#  * the agent does not take a job id from a process's environment unless
#    --job-env names the variable (the NVML test double's processes);
#  * ids that are not [A-Za-z0-9._-]{1,63} (a forged-series id, markup, a
#    path) are dropped by the agent (environment, job files) and by the
#    controller (whatever an agent sends): /metrics of both stays valid
#    Prometheus text without the forged series;
#  * label values are escaped (a controller name with a quote);
#  * the controller keeps one id under two tiers as two jobs, never merged;
#  * the status page and every answer carry a Content-Security-Policy.
# Waits poll with a wall-clock deadline and fail with the daemon's log.
. "$SRC/tests/cli/lib.sh"
: "${PFI_AGENT:?}" "${FAKE_NVML:?}" "${TOOLS:?}"
CTL=${PFI_CONTROLLER_BIN:-$(dirname "$PFI_AGENT")/pfi-controller}
export PFI_TIME_SCALE=10 PFI_EPOCH=$(date +%s)
kill_daemons_on_exit
new_token "$T/tok" "$T/ctok"

# start_agent NAME OPTIONS...: APID, AURL
start_agent() {
  name=$1; shift
  start_daemon "agent $name" "$T/$name.log" "$T/$name.port" "$PFI_AGENT" --listen 127.0.0.1:0 --port-file "$T/$name.port" \
    --token-file "$T/tok" --state-file "$T/$name.state" --interval 1 --log "$T/$name.log" "$@"
  APID=$DPID; AURL=http://127.0.0.1:$DPORT
}
fetch_has() { curl -s "$1" >"$T/fetched" && grep -qF -- "$2" "$T/fetched"; }
# check_exposition FILE: every line is a HELP/TYPE comment (the daemons write no
# other) or one sample of the text format; no series twice
check_exposition() {
  bad=$(grep -Ev '^# (HELP|TYPE) [a-zA-Z_:][a-zA-Z0-9_:]* .*$' "$1" |
    grep -Ev '^[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\[\\"n])*",?)*\})? [-+0-9.a-zA-Z]+$' | head -3)
  [ -z "$bad" ] || fail "$1 is not Prometheus text: $bad"
  dup=$(grep -v '^#' "$1" | sed 's/ [^ ]*$//' | sort | uniq -d | head -3)
  [ -z "$dup" ] || fail "$1 lists a series twice: $dup"
  ok
}
# an id that, unescaped, ends its label set and forges a cap series
FORGED='1"} 1
pfi_gpu_power_cap_watts{gpu="0",uuid="forged",hostname="x"} 9999
#'
IMG='<img src=x onerror=document.title=1>'

# ---- agent: a process's environment names no job unless --job-env ----
SLURM_JOB_ID=4242 sleep 300 &
SPID=$!; PIDS="$PIDS $SPID"
mkdir -p "$T/jobs"
echo '{"job_id": "sync", "gpus": [1]}' >"$T/jobs/sync.json" # seen in the same refresh as the processes
export PFI_NVML_LIBRARY=$FAKE_NVML FAKE_NVML_GPUS=2 FAKE_NVML_STATE=$T/nvml-state FAKE_NVML_PROCS="0:$SPID"
start_agent a1 --backend nvml --jobs-dir "$T/jobs"
wait_for 30 "job sync in agent a1's node view" 'fetch_has "$AURL/v1/node" "\"job_id\":\"sync\""'
curl -s "$AURL/v1/node" >"$T/node"
lacks "$T/node" '4242'
contains "$T/node" '"index":0,'
stop_daemon $APID
start_agent a2 --backend nvml --jobs-dir "$T/jobs" --job-env SLURM_JOB_ID
wait_for 30 "job 4242 (from --job-env) in agent a2's node view" 'fetch_has "$AURL/v1/node" "\"job_id\":\"4242\",\"gpus\":[0],\"source\":\"process\""'
stop_daemon $APID
stop_daemon $SPID

# ---- agent: forged ids from the environment (even with --job-env) and from a job file ----
env SLURM_JOB_ID="$FORGED" sleep 300 &
F1=$!; PIDS="$PIDS $F1"
env SLURM_JOB_ID="$IMG" sleep 300 &
F2=$!; PIDS="$PIDS $F2"
echo '{"job_id": "..", "gpus": [2]}' >"$T/jobs/bad.json"
echo '{"job_id": "sync", "gpus": [3]}' >"$T/jobs/sync.json"
export FAKE_NVML_GPUS=4 FAKE_NVML_STATE=$T/nvml-state4 FAKE_NVML_PROCS="0:$F1,1:$F2"
start_agent a3 --backend nvml --jobs-dir "$T/jobs" --job-env SLURM_JOB_ID
wait_for 30 "job sync in agent a3's node view" 'fetch_has "$AURL/v1/node" "\"job_id\":\"sync\""'
curl -s "$AURL/v1/node" >"$T/node"
[ "$(grep -o '"job_id":"[^"]*"' "$T/node" | sort -u)" = '"job_id":"sync"' ] || fail "a forged job id was taken: $(cat "$T/node")"; ok
contains "$T/a3.log" "GPU 0: process $F1: its job id is not"
contains "$T/a3.log" "GPU 1: process $F2: its job id is not"
contains "$T/a3.log" "bad.json: job_id is not"
lacks "$T/a3.log" "$IMG" # nor written to the log
# a controller name with a quote (the caps API takes printable text) goes into a label escaped
CODE=$(curl -s -o "$T/body" -w '%{http_code}' -X PUT -H "Authorization: Bearer $(cat "$T/tok")" \
  --data-binary '{"lease_s":60,"controller":"x\"} 1 # ","generation":1,"gpus":[{"index":3,"cap_w":400}]}' "$AURL/v1/caps")
[ "$CODE" = 200 ] || fail "PUT: HTTP $CODE $(cat "$T/body")"; ok
curl -s "$AURL/metrics" >"$T/am"
contains "$T/am" 'pfi_lease_active{controller="x\"} 1 # "} 1'
contains "$T/am" 'pfi_job_gpus{hpc_job="sync",'
check_exposition "$T/am"
lacks "$T/am" 'uuid="forged"'
lacks "$T/am" '<img'
curl -sI "$AURL/metrics" >"$T/ah"
contains "$T/ah" "Content-Security-Policy: default-src 'none'"
contains "$T/ah" "X-Content-Type-Options: nosniff"
stop_daemon $APID
unset PFI_NVML_LIBRARY FAKE_NVML_GPUS FAKE_NVML_STATE FAKE_NVML_PROCS

# ---- controller: ids from a (fake) agent, one id under two tiers on two agents ----
mkdir -p "$T/j0" "$T/j3"
echo '{"job_id": "77", "gpus": [0, 1], "tier": 0}' >"$T/j0/77.json"
echo '{"job_id": "77", "gpus": [0, 1], "tier": 3}' >"$T/j3/77.json"
start_agent s0 --backend sim:gpus=2 --jobs-dir "$T/j0"
U0=$AURL
start_agent s3 --backend sim:gpus=2 --jobs-dir "$T/j3"
U3=$AURL
# the fake agent: http_fixture serves this node view at /file (the agent URL ends in "/file?p=")
cat >"$T/evil.json" <<'EOF'
{"hostname": "evil", "backend": "sim", "lease": null, "generation_max": 0,
 "gpus": [{"index": 0, "uuid": "GPU-e0", "name": "x", "cap_min_w": 200, "cap_max_w": 700, "cap_w": 700, "power_w": 300}],
 "jobs": [{"job_id": "1\"} 1\npfi_ctl_job_power_watts{hpc_job=\"forged\"} 9999\n#", "gpus": [0], "source": "process", "power_w": 300},
          {"job_id": "<img src=x onerror=document.title=1>", "gpus": [0], "source": "process", "power_w": 300},
          {"job_id": "..", "gpus": [0], "source": "process", "power_w": 300},
          {"job_id": "fine-1", "gpus": [0], "source": "process", "power_w": 300}]}
EOF
start_daemon "fake agent" "$T/fx.log" "$T/fx.port" "$TOOLS/http_fixture" "$T/fx.port" "$T/evil.json"
cat >"$T/ctl.json" <<EOF
{"listen": "127.0.0.1:0", "token_file": "$T/ctok", "db": "$T/ctl.db", "control_period_s": 5,
 "agents": [{"name": "t0", "url": "$U0", "token_file": "$T/tok"}, {"name": "t3", "url": "$U3", "token_file": "$T/tok"},
            {"name": "evil", "url": "http://127.0.0.1:$(cat "$T/fx.port")/file?p=", "token_file": "$T/tok"}]}
EOF
start_daemon controller "$T/ctl.log" "$T/c.port" "$CTL" --config "$T/ctl.json" --port-file "$T/c.port"
URL=http://127.0.0.1:$DPORT
two_77() { curl -s "$URL/v1/status" >"$T/st" && grep -qF '"job_id":"77","tier":0,"gpus":2' "$T/st" &&
  grep -qF '"job_id":"77","tier":3,"gpus":2' "$T/st" && grep -qF '"job_id":"fine-1"' "$T/st"; }
wait_for 30 "both jobs 77 and fine-1 in the controller's status" two_77
[ "$(grep -o '"job_id":"[^"]*"' "$T/st" | sort | tr '\n' ' ')" = '"job_id":"77" "job_id":"77" "job_id":"fine-1" ' ] ||
  fail "jobs: $(grep -o '"job_id":"[^"]*"' "$T/st" | tr '\n' ' ')"; ok
contains "$T/ctl.log" "job 77: agent t3 reports it under tier 3, another agent under tier 0: kept as two jobs"
contains "$T/ctl.log" "agent evil reports a job id that is not"
[ "$(grep -c 'agent evil reports a job id' "$T/ctl.log")" = 1 ] || fail "invalid ids logged more than once"; ok
curl -s "$URL/metrics" >"$T/cm"
check_exposition "$T/cm"
contains "$T/cm" 'pfi_ctl_job_power_watts{hpc_job="77",tier="0"}'
contains "$T/cm" 'pfi_ctl_job_power_watts{hpc_job="77",tier="3"}'
lacks "$T/cm" 'forged'
# the page: served with a policy that runs only its own script, which builds the DOM with textContent
curl -sI "$URL/" >"$T/h"
contains "$T/h" "Content-Security-Policy: default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self';"
contains "$T/h" "text/html"
curl -sI "$URL/v1/status" >"$T/h"
contains "$T/h" "Content-Security-Policy: default-src 'none'; frame-ancestors 'none'"
curl -s -o "$T/page.js" -w '%{http_code} %{content_type}\n' "$URL/page.js" >"$T/code"
contains "$T/code" "200 text/javascript"
contains "$T/page.js" "textContent"
lacks "$T/page.js" "innerHTML"
curl -s "$URL/" >"$T/page.html"
lacks "$T/page.html" "<style"
lacks "$T/page.html" "style="
[ "$(grep -c '<script' "$T/page.html")" = 1 ] && contains "$T/page.html" '<script src="page.js"'
done_ok
