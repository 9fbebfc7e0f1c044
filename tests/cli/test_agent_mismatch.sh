#!/bin/sh
# test_agent_mismatch.sh — the cross-check of a job file against the
# processes on its GPU (issue 40 d). A process sits in a Slurm job cgroup
# (cgroup v1 layout /slurm/uid_0/job_B, made in a writable v1 hierarchy
# of this machine) and the NVML double lists it on GPU 0. A job file that
# gives GPU 0 to job 101 is a mismatch: an error naming both jobs, the GPU
# capped by no job (pfi_gpu_job_mismatch 1, /v1/node job_mismatch, job 101
# has no GPU to cap); a job file for job B agrees: the GPU is job B's and
# capping works. Needs root and a writable cgroup v1 hierarchy; skipped
# otherwise (cgroup v2 has its own unit test in tests/io/test_job_id.c).
. "$SRC/tests/cli/lib.sh"
: "${PFI_AGENT:?}" "${FAKE_NVML:?}"
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (a cgroup of Slurm's layout)"; exit 77; }
# job B's id: unique to this run (two suites on one machine share the cgroup tree)
B=$((200000 + $$ % 100000))
CG=""
for h in freezer pids cpuacct; do
  d=$(awk -v h="$h" '$9 == "cgroup" && $NF ~ "(^|,)" h "(,|$)" && $6 ~ /^rw/ {print $5; exit}' /proc/self/mountinfo)
  [ -n "$d" ] && mkdir -p "$d/slurm/uid_0/job_$B" 2>/dev/null && { CG=$d; break; }
done
[ -n "$CG" ] || { echo "SKIP: no writable cgroup v1 hierarchy to make /slurm/uid_0/job_$B in"; exit 77; }
JOBCG=$CG/slurm/uid_0/job_$B
sleep 600 &
SPID=$!
cleanup() {
  kill "$SPID" 2>/dev/null; wait "$SPID" 2>/dev/null
  rmdir "$JOBCG" 2>/dev/null
  rmdir "$CG/slurm/uid_0" "$CG/slurm" 2>/dev/null # unless another run still uses them
}
kill_daemons_on_exit cleanup
echo "$SPID" >"$JOBCG/cgroup.procs" || fail "cannot move a process into $JOBCG"
grep -q ":/slurm/uid_0/job_$B$" "/proc/$SPID/cgroup" || { cat "/proc/$SPID/cgroup" >&2; fail "the process is not in job $B's cgroup"; }; ok
new_token "$T/token"
mkdir -p "$T/jobs"
export PFI_NVML_LIBRARY=$FAKE_NVML FAKE_NVML_GPUS=2 FAKE_NVML_STATE=$T/nvml FAKE_NVML_PROCS="0:$SPID"
start_daemon agent "$T/agent.log" "$T/port" "$PFI_AGENT" --backend nvml --listen 127.0.0.1:0 --port-file "$T/port" \
  --token-file "$T/token" --state-file "$T/state.json" --jobs-dir "$T/jobs" --interval 0.1 --log "$T/agent.log"
URL=http://127.0.0.1:$DPORT
mm() { curl -s -m 5 "$URL/metrics" | awk '/^pfi_gpu_job_mismatch\{gpu="0",/ {print $NF}'; }
put_job() {
  CODE=$(curl -s -m 10 -o "$T/body" -w '%{http_code}' -X PUT -H "Authorization: Bearer $(cat "$T/token")" \
    -H 'Content-Type: application/json' --data-binary \
    "{\"lease_s\":30,\"controller\":\"c\",\"generation\":$2,\"jobs\":[{\"job_id\":\"$1\",\"cap_w\":400}]}" "$URL/v1/caps")
}
# the job file says 101; the process says job B
printf '{"job_id": "101", "gpus": [0], "tier": 3}\n' >"$T/jobs/101.json"
wait_for 30 "the mismatch found" '[ "$(mm)" = 1 ]'
contains "$T/agent.log" "error: GPU 0 GPU-fa4e0000-0000-4000-8000-000000000000: its job file names job 101, but a process on it is in job $B's cgroup"
curl -s -m 5 "$URL/v1/node" | grep -q "\"job_mismatch\":\"job file: job 101; a process of job $B\"" || fail "/v1/node has no job_mismatch"; ok
put_job 101 1
[ "$(sed -n 1p "$T/nvml")" != 400000 ] || fail "job 101's cap reached GPU 0 despite the mismatch"; ok
# the right job file: they agree, the GPU is job B's
rm -f "$T/jobs/101.json"
printf '{"job_id": "%s", "gpus": [0], "tier": 3}\n' "$B" >"$T/jobs/$B.json"
wait_for 30 "the mismatch gone" '[ "$(mm)" = 0 ]'
contains "$T/agent.log" "its job file and its processes agree again"
wait_for 30 "job $B mapped to GPU 0" 'curl -s -m 5 "$URL/v1/node" | grep -q "\"job_id\":\"$B\",\"gpus\":\[0\]"'
put_job "$B" 2
[ "$CODE" = 200 ] || { cat "$T/body" >&2; fail "PUT job $B: HTTP $CODE"; }; ok
[ "$(sed -n 1p "$T/nvml")" = 400000 ] || fail "job $B's GPU 0 not capped: $(sed -n 1p "$T/nvml")"; ok
done_ok
