#!/bin/sh
# test_agent_shared.sh — a GPU two jobs claim (issue 40 d): gres/shard and
# gres/mps run the same Slurm prolog for each job, so two job files name
# one GPU. Before, the last file read won: a Flex-3 job's cap throttled its
# Flex-0 co-tenant, and the first job's end restored a GPU the other still
# used. Now the GPU is treated as MIG is: it belongs to no job, a cap pfi
# held on it is put back at once, a PUT's job or GPU entry skips it
# ("shared"), /v1/node names both claimants and /v1/control gives it no
# ceiling (the controller counts it as load it cannot shed). When one
# claimant is left the GPU is that job's again, and capping works. Jobs
# whose GPUs could not be mapped (the plugin's gpu_error, or a GPU not on
# the node) are counted in pfi_agent_jobs_unmapped; a CPU-only job is not.
. "$SRC/tests/cli/lib.sh"
: "${PFI_AGENT:?}"
new_token "$T/token"
TOKEN=$(cat "$T/token")
HW=$T/hw.json
mkdir -p "$T/jobs"
start_daemon agent "$T/agent.log" "$T/port" "$PFI_AGENT" --backend "sim:name=t,gpus=2,load=0,state=$HW" \
  --listen 127.0.0.1:0 --port-file "$T/port" --token-file "$T/token" --state-file "$T/state.json" \
  --jobs-dir "$T/jobs" --interval 0.1 --log "$T/agent.log"
URL=http://127.0.0.1:$DPORT
put() { # BODY -> $CODE, body in $T/body
  CODE=$(curl -s -m 10 -o "$T/body" -w '%{http_code}' -X PUT -H "Authorization: Bearer $TOKEN" \
    -H 'Content-Type: application/json' --data-binary "$1" "$URL/v1/caps")
}
node_has() { curl -s -m 5 "$URL/v1/node" | grep -q "$1"; }
job() { printf '{"job_id": "%s", "gpus": [%s], "tier": %s}\n' "$1" "$2" "$3" >"$T/jobs/$1.json.tmp" && mv "$T/jobs/$1.json.tmp" "$T/jobs/$1.json"; }

# job 101 (Flex 3) alone on GPU 0: capped through the job
job 101 0 3
wait_for 30 "job 101 mapped" 'node_has "\"job_id\":\"101\""'
put '{"lease_s":60,"controller":"c","generation":1,"jobs":[{"job_id":"101","cap_w":400}]}'
[ "$CODE" = 200 ] || { cat "$T/body" >&2; fail "PUT job 101: HTTP $CODE"; }; ok
[ "$(hw_cap 0)" = 400 ] || fail "job 101's GPU 0 at $(hw_cap 0) W, expected 400"; ok

# job 102 (Flex 0) shares GPU 0 (a shard): the cap is put back at once, nobody owns the GPU
job 102 0 0
wait_for 30 "GPU 0 put back when it became shared" '[ "$(hw_cap 0)" = 700 ]'
contains "$T/agent.log" "GPU 0 GPU-"
contains "$T/agent.log" "shared (gres/shard, gres/mps or overlapping job files), so never capped, as MIG"
contains "$T/agent.log" "(shared: baseline restored)"
curl -s -m 5 "$URL/v1/node" >"$T/node"
contains "$T/node" '"shared":true'
grep -q '"claimed_by":"10[12],10[12]"' "$T/node" || { cat "$T/node" >&2; fail "/v1/node does not name both claimants"; }; ok
lacks "$T/node" '"job_id":"101","gpus":[0]'
# /v1/control: GPU 0 has no ceiling (not sheddable); GPU 1 has one
curl -s -m 5 "$URL/v1/control" >"$T/control"
grep -q '"gpus":\[\[[0-9.e+]*,[0-9.e+]*,[0-9.e+]*,null,"shared"\],\[[0-9.e+]*,[0-9.e+]*,[0-9.e+]*,[0-9.e+]*\]\]' "$T/control" ||
  { cat "$T/control" >&2; fail "/v1/control: the shared GPU has a ceiling"; }; ok
# a PUT naming the GPU skips it, as MIG
put '{"lease_s":60,"controller":"c","generation":2,"gpus":[{"index":0,"cap_w":350}]}'
[ "$CODE" = 200 ] || { cat "$T/body" >&2; fail "PUT GPU 0: HTTP $CODE"; }; ok
contains "$T/body" '"state":"shared"'
[ "$(hw_cap 0)" = 700 ] || fail "a shared GPU was capped to $(hw_cap 0) W"; ok
# job 101's entry: the job has no GPU any more (422: unknown job), nothing set
put '{"lease_s":60,"controller":"c","generation":3,"jobs":[{"job_id":"101","cap_w":350}]}'
[ "$(hw_cap 0)" = 700 ] || fail "job 101's entry capped the shared GPU to $(hw_cap 0) W"; ok

# job 101 ends (its epilog removes its file): no restore for the GPU job 102 still uses; 102 owns it
rm -f "$T/jobs/101.json"
wait_for 30 "GPU 0 no longer shared" 'grep -q "no longer shared (102)" "$T/agent.log"'
wait_for 30 "job 102 mapped to GPU 0" 'curl -s -m 5 "$URL/v1/node" | grep -q "\"job_id\":\"102\",\"gpus\":\[0\]"'
put '{"lease_s":60,"controller":"c","generation":4,"jobs":[{"job_id":"102","cap_w":500}]}'
[ "$CODE" = 200 ] || { cat "$T/body" >&2; fail "PUT job 102: HTTP $CODE"; }; ok
[ "$(hw_cap 0)" = 500 ] || fail "GPU 0 at $(hw_cap 0) W once job 102 has it alone, expected 500"; ok
# job 102 ends: its cap is restored
rm -f "$T/jobs/102.json"
wait_for 30 "GPU 0 restored when job 102 ended" '[ "$(hw_cap 0)" = 700 ]'
contains "$T/agent.log" "(job 102 ended: baseline restored)"

# jobs whose GPUs are not mapped: the Slurm plugin's gpu_error, and a job
# file naming no GPU of this node; a CPU-only job (no GPUs) is not counted
unmapped() { curl -s -m 5 "$URL/metrics" | awk '$1 == "pfi_agent_jobs_unmapped" {print $2}'; }
[ "$(unmapped)" = 0 ] || fail "pfi_agent_jobs_unmapped is $(unmapped) with no job"; ok
printf '{"job_id": "201", "gpus": [], "tier": 1, "gpu_error": "gres.conf:2: field \u0027Foo\u0027: not a gpu key pfi knows"}\n' >"$T/jobs/201.json"
printf '{"job_id": "202", "gpus": [7], "tier": 1}\n' >"$T/jobs/202.json"
printf '{"job_id": "203", "gpus": [], "tier": 1}\n' >"$T/jobs/203.json"
wait_for 30 "two jobs counted unmapped" '[ "$(unmapped)" = 2 ]'
contains "$T/agent.log" "job 201: the Slurm plugin could not map its GPUs: gres.conf:2: field 'Foo': not a gpu key pfi knows"
rm -f "$T/jobs/201.json" "$T/jobs/202.json"
wait_for 30 "no job unmapped once they ended" '[ "$(unmapped)" = 0 ]'
done_ok
