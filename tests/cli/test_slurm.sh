#!/bin/sh
# test_slurm.sh — the Slurm integration against a real single-node Slurm
# (slurmctld, slurmd and munge from Debian's packages) with a private
# SLURM_CONF, state directories, munge socket and ports — never the
# machine's /etc/slurm — four fake GPU devices, the SPANK plugin, pfi-agent
# on simulated GPUs and pfi-controller: jobs submitted with different
# --power-flex tiers, a 30% event, caps checked per job, tiers honoured,
# the job environment (PFI_FLEX, PFI_STEPLOG), a bad tier refused, and
# everything restored after the jobs end, the offer's forecast read from the
# real squeue (time limits, a pending job's start). Every daemon it starts is
# stopped. Plain build only (label "plain"): the plugin is loaded into
# Slurm's uninstrumented daemons (docs/testing.md). Needs root.
. "$SRC/tests/cli/lib.sh"
: "${PFI_AGENT:?}" "${PFI_SPANK:?}"
CTL=${PFI_CONTROLLER_BIN:-$(dirname "$PFI_AGENT")/pfi-controller}
for b in slurmctld slurmd munged sbatch scontrol; do command -v $b >/dev/null || fail "$b is not installed (scripts/bootstrap.sh test)"; done
[ "$(id -u)" -eq 0 ] || fail "the Slurm test needs root"
[ -s "$PFI_SPANK" ] || fail "the SPANK plugin was not built ($PFI_SPANK)"

H=$(hostname)
# every Slurm client call is bounded (a dead slurmctld makes them wait)
S() { timeout 20 "$@"; }
cleanup() {
  [ -n "${SLURM_CONF:-}" ] && timeout 5 scancel --quiet --user=root 2>/dev/null
  for p in $PIDS; do kill -TERM "$p" 2>/dev/null; done
  mp=$(cat "$T/munge/pid" 2>/dev/null); [ -n "$mp" ] && kill -TERM "$mp" 2>/dev/null
  end=$(( $(date +%s) + 5 ))
  for p in $PIDS; do while alive "$p" && [ "$(date +%s)" -lt "$end" ]; do sleep 0.05; done; kill -9 "$p" 2>/dev/null; done
  [ -n "$mp" ] && kill -9 "$mp" 2>/dev/null
  rm -rf "$T"
}
trap cleanup EXIT
chmod 755 "$T"
mkdir -p "$T/munge" "$T/state" "$T/spool" "$T/dev" "$T/run/jobs" "$T/log"
chown munge: "$T/munge"
chmod 711 "$T/munge"
for i in 0 1 2 3; do mknod "$T/dev/nvidia$i" c 195 $i; done
mknod "$T/dev/nvidia-cap3" c 240 3 # a MIG capability file beside GPU 3 (MultipleFiles=)

# ---- munge on a private socket ----
start_daemon munged "$T/munge/out" "" runuser -u munge -- munged -F --socket="$T/munge/sock" --pid-file="$T/munge/pid" \
  --log-file="$T/munge/log" --seed-file="$T/munge/seed"
wait_for 30 "munged's socket" '[ -S "$T/munge/sock" ]'

# ---- Slurm with private ports and directories ----
# Ports: Slurm cannot listen on port 0, so they are chosen at random below
# the kernel's ephemeral range (32768-60999, where any outgoing connection
# may hold them), and the whole start is retried with new ports when a
# daemon reports "Address already in use" or exits.
MEM=$(awk '/MemTotal/{print int($2/1024/2)}' /proc/meminfo)
slurm_conf() { # BASE: slurmctld on BASE, slurmd on BASE+1, srun on BASE+10..BASE+60
  cat >"$T/slurm.conf" <<EOF
ClusterName=pfitest
SlurmctldHost=$H(127.0.0.1)
SlurmctldPort=$1
SlurmdPort=$(($1 + 1))
SrunPortRange=$(($1 + 10))-$(($1 + 60))
MessageTimeout=5
AuthType=auth/munge
AuthInfo=socket=$T/munge/sock
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$T/state
SlurmdSpoolDir=$T/spool
SlurmctldPidFile=$T/slurmctld.pid
SlurmdPidFile=$T/slurmd.pid
SlurmctldLogFile=$T/log/slurmctld.log
SlurmdLogFile=$T/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=100
MailProg=/bin/true
GresTypes=gpu
PlugStackConfig=$T/plugstack.conf
PrologFlags=Alloc
ReturnToService=2
SchedulerParameters=defer=0
NodeName=$H NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=$MEM Gres=gpu:4 State=UNKNOWN
PartitionName=debug Nodes=$H Default=YES State=UP MaxTime=INFINITE
EOF
}
# Slurm's GPU order differs from the device minors (and so from NVML's,
# whose index is the minor on the simulated node). The forms of AutoDetect=off
# a site writes (issue 40, docs/slurm.md): a node-specific AutoDetect=off over
# a global one, lines starting with Name= (which Slurm takes before those
# starting with NodeName=, whatever the file's order), MultipleFiles= (one
# GPU, named by its first file; slurmd 22.05 refuses one with a single file:
# "fatal: MultipleFiles does not contain multiple files. Use File instead")
# and File='s synonym Files=. Slurm's order is then nvidia3, nvidia1
# (the Name= lines), nvidia2, nvidia0 (the NodeName= line); line order with
# File= alone, what pfi read before, would have given 2, 0 and no more.
# (Debian's slurmd 22.05 has no NVML plugin, so the global AutoDetect is off
# too: the node-specific line is what is tested.)
cat >"$T/gres.conf" <<EOF
AutoDetect=off
NodeName=$H AutoDetect=off Name=gpu File=$T/dev/nvidia[2,0]
Name=gpu MultipleFiles=$T/dev/nvidia3,$T/dev/nvidia-cap3
Name=gpu Files=$T/dev/nvidia1
EOF
MINOR_OF_IDX="3 1 2 0"
minor_of() { echo $MINOR_OF_IDX | cut -d' ' -f$(($1 + 1)); }
printf 'optional %s rundir=%s/run\n' "$PFI_SPANK" "$T" >"$T/plugstack.conf"
export SLURM_CONF=$T/slurm.conf
SLOGS="$T/log/slurmctld.log $T/log/slurmd.log"
# slurm_try: start slurmctld and slurmd on new ports; 0 once the node is
# idle, 1 when a port was taken (or a daemon exited; they are stopped), and
# a failure with both logs after 60 s. SLURM_TEST_PORTS="B1 B2 ..." gives the
# bases to try first (to check the retry against a port held on purpose).
SLURM_TEST_PORTS=${SLURM_TEST_PORTS:-}
slurm_try() {
  base=$(( 10000 + $(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % 22000 ))
  if [ -n "$SLURM_TEST_PORTS" ]; then
    base=${SLURM_TEST_PORTS%% *}; SLURM_TEST_PORTS=${SLURM_TEST_PORTS#"$base"}; SLURM_TEST_PORTS=${SLURM_TEST_PORTS# }
  fi
  slurm_conf $base
  rm -rf "$T/state"/* "$T/spool"/*
  start_daemon slurmctld "$T/log/slurmctld.log" "" slurmctld -D -i -f "$SLURM_CONF"; CTLD=$DPID
  start_daemon slurmd "$T/log/slurmd.log" "" slurmd -D -f "$SLURM_CONF"; SLURMD=$DPID
  end=$(( $(date +%s) + 60 ))
  while :; do
    # shellcheck disable=SC2086
    if grep -qs "Address already in use" $SLOGS || ! alive $CTLD || ! alive $SLURMD; then
      echo "Slurm on ports $base.. did not start (port taken or a daemon exited):" >&2
      # shellcheck disable=SC2086
      tail -n 5 $SLOGS >&2
      stop_daemon $CTLD TERM; stop_daemon $SLURMD TERM
      for f in $SLOGS; do mv "$f" "$f.try$base"; done
      return 1
    fi
    timeout 5 sinfo -h -o %T 2>/dev/null | grep -q idle && return 0
    # shellcheck disable=SC2086
    [ "$(date +%s)" -lt "$end" ] || { tail -n 40 $SLOGS >&2; fail "the Slurm node never became idle"; }
    sleep 0.1
  done
}
tries=0
until slurm_try; do tries=$((tries + 1)); [ $tries -lt 3 ] || fail "Slurm did not start in 3 tries"; done
ok
# the plugin's option is registered
S sbatch --help 2>&1 | grep -q -- "--power-flex" || fail "sbatch --help lacks --power-flex"; ok
if S sbatch --power-flex=7 --wrap true >"$T/out" 2>"$T/err"; then fail "sbatch accepted --power-flex=7"; fi
ok
contains "$T/err" "expected a tier 0..3"

# ---- pfi: an agent on 4 simulated GPUs (two job slots), a controller ----
new_token "$T/atok" "$T/ctok"
start_daemon agent "$T/agent.log" "$T/a.port" "$PFI_AGENT" \
  --backend "sim:gpus=4,job=s0:moe-ft-qwen30ba3b-x8@0-1,job=s1:moe-pt-gptoss20b-x8-ep1-nocompile@2-3,idle,load=0,state=$T/hw.json" \
  --listen 127.0.0.1:0 --port-file "$T/a.port" --token-file "$T/atok" --state-file "$T/a.state" --interval 0.5 \
  --jobs-dir "$T/run/jobs" --log "$T/agent.log"
AP=$DPORT
cat >"$T/ctl.json" <<EOF
{"listen": "127.0.0.1:0", "token_file": "$T/ctok", "db": "$T/ctl.db", "control_period_s": 1, "baseline_window_s": 3,
 "lease_s": 10, "offer": {"interval_s": 1, "squeue": "squeue", "squeue_interval_s": 10, "horizon_h": 2}, "agents": [{"name": "$H", "url": "http://127.0.0.1:$AP", "token_file": "$T/atok"}]}
EOF
start_daemon controller "$T/ctl.log" "$T/c.port" "$CTL" --config "$T/ctl.json" --port-file "$T/c.port"
URL=http://127.0.0.1:$DPORT
acap() { curl -s -m 5 "http://127.0.0.1:$AP/metrics" | awk -F'[ {}]' -v g="$1" '$1=="pfi_gpu_power_cap_watts" && index($0, "gpu=\"" g "\""){print $NF}'; }
ctl_has() { curl -s -m 5 "$URL/v1/status" | grep -q "$1"; }

# ---- two jobs, Flex 0 and Flex 3 ----
A=$(S sbatch --parsable --gres=gpu:2 --power-flex=0 -o "$T/a.out" --wrap "env > $T/envA; sleep 120")
B=$(S sbatch --parsable --gres=gpu:2 --power-flex=3 --time=30 -o "$T/b.out" --wrap "env > $T/envB; sleep 120")
# a job that waits an hour (the offer's forecast counts it from then)
C=$(S sbatch --parsable --gres=gpu:1 --time=60 --begin=now+3600 -o /dev/null --wrap true)
[ -n "$A" ] && [ -n "$B" ] && [ -n "$C" ] || fail "sbatch failed"; ok
wait_for 60 "the SPANK plugin's job files for $A and $B" '[ -s "$T/run/jobs/$A.json" ] && [ -s "$T/run/jobs/$B.json" ]'
contains "$T/run/jobs/$A.json" '"tier": 0'
contains "$T/run/jobs/$B.json" '"tier": 3'
contains "$T/run/jobs/$B.json" '"uid": 0'
# the step log: made by the prolog under an unguessable name, owned by the
# job's user (root here), mode 0600, in a root-only steplogs directory
SLB=$(sed -n 's/.*"steplog": "\([^"]*\)".*/\1/p' "$T/run/jobs/$B.json")
case "$SLB" in "$T/run/steplogs/$B-"????????????????????????????????.jsonl) ok ;; *) fail "step log name '$SLB' is not JOBID-32hex.jsonl under steplogs" ;; esac
[ -f "$SLB" ] && [ ! -L "$SLB" ] || fail "the prolog did not create the step log $SLB"; ok
[ "$(stat -c %a:%u "$SLB")" = "600:0" ] || fail "step log mode/owner $(stat -c %a:%u "$SLB"), expected 600:0"; ok
[ "$(stat -c %a:%u "$T/run/steplogs")" = "755:0" ] || fail "steplogs directory is $(stat -c %a:%u "$T/run/steplogs"), expected 755:0"; ok
wait_for 60 "jobs $A and $B to run" '[ -s "$T/envA" ] && [ -s "$T/envB" ]'
contains "$T/envB" "PFI_FLEX=3"
contains "$T/envB" "PFI_STEPLOG=$SLB"
contains "$T/envA" "PFI_FLEX=0"
# the agent maps the GPUs Slurm gave each job, with its tier
wait_for 30 "the agent to map job $B" 'curl -s -m 5 "http://127.0.0.1:$AP/v1/node" | grep -q "\"job_id\":\"$B\""'
curl -s -m 5 "http://127.0.0.1:$AP/v1/node" >"$T/node"
contains "$T/node" '"tier":3'
contains "$T/node" '"source":"jobfile"'
# the controller sees both jobs, then measures baselines (3 s = 3 periods)
wait_for 30 "the controller to see jobs $A and $B" 'ctl_has "\"job_id\":\"$A\"" && ctl_has "\"job_id\":\"$B\""'
wait_counter 30 "$URL" pfi_ctl_cycles_total 4
IB=$(S scontrol -d show job "$B" | grep -o 'IDX:[0-9]' | head -1 | cut -d: -f2)
[ -n "$IB" ] || fail "no GPU index for job $B"; ok
# the job file names the GPUs by device minor, and the agent maps them so:
# Slurm's GPU index $IB is minor $(minor_of $IB), the agent's GPU of that minor
GB=$(minor_of "$IB")
contains "$T/run/jobs/$B.json" "\"minors\": [$GB, $(minor_of $((IB + 1)))]"
curl -s -m 5 "http://127.0.0.1:$AP/v1/node" | /usr/bin/python3 -c '
import json, sys
n = json.load(sys.stdin); b = sys.argv[1]; want = sorted(int(x) for x in sys.argv[2:])
got = sorted(g["index"] for g in n["gpus"] if g["job_id"] == b)
assert got == want, (got, want)' "$B" "$GB" "$(minor_of $((IB + 1)))" || fail "job $B mapped to the wrong GPUs"
ok
echo "job $B: Slurm GPU index $IB.. -> minors $GB, $(minor_of $((IB + 1))) -> the agent's GPUs $GB, $(minor_of $((IB + 1)))"
# pfi slurm-map, the plugin's parser for an operator, agrees with the real Slurm
"$PFI" slurm-map --gres-conf "$T/gres.conf" --node "$H" --driver-dir "$T/none" --job-gpus "$IB-$((IB + 1))" --format csv >"$T/map" 2>"$T/map.err" ||
  { cat "$T/map.err" >&2; fail "pfi slurm-map failed on the test's gres.conf"; }
printf 'slurm_index,minor,bus_id\n%s,%s,\n%s,%s,\n' "$IB" "$GB" "$((IB + 1))" "$(minor_of $((IB + 1)))" >"$T/map.want"
cmp -s "$T/map" "$T/map.want" || { diff "$T/map.want" "$T/map" >&2; fail "pfi slurm-map disagrees with Slurm's IDX"; }; ok

# ---- the offer's forecast reads the real squeue (issue 44) ----
# B (Flex 3, --time=30) carries the shed: its limit bounds the offer; A
# (no limit: squeue prints its end as NONE) persists; C starts in an hour
[ -n "${PFI_SQUEUE_DUMP:-}" ] && SLURM_TIME_FORMAT=%s S squeue -h -a -t RUNNING,PENDING -o '%A|%T|%S|%e|%l|%D|%b' >"$PFI_SQUEUE_DUMP"
offer_ok() {
  curl -s -m 5 "$URL/v1/offer" >"$T/offer.json" && /usr/bin/python3 - "$T/offer.json" "$A" "$B" <<'PY' 2>"$T/offer.why"
import json, sys
o = json.load(open(sys.argv[1])); a, b = sys.argv[2], sys.argv[3]
f = o["forecast"]
assert f["source"] == "squeue" and f["squeue_error"] is None, f
assert {j["id"] for j in o["jobs"]} == {a, b}, o["jobs"]
assert 1500 <= o["sustain_s"] <= 1800, o["sustain_s"]      # B's 30 min, started moments ago
p = f["points"]
# hour 1: B ended at its limit; C (begin: an hour after its submission, a
# moment before the offer) has started, and B's other GPU is refilled (jobs
# not yet submitted keep today's 4 GPUs busy); hour 2: C ended at its limit
# too: A, Flex 0, and 2 refilled GPUs
assert (p[0]["jobs"], p[0]["pending_jobs"], p[0]["refill_gpus"]) == (2, 1, 1), p
assert (p[1]["jobs"], p[1]["pending_jobs"], p[1]["refill_gpus"]) == (1, 0, 2), p
PY
}
wait_for 60 "the offer's forecast from squeue" 'offer_ok || { [ "$(date +%s)" -lt "$wf_end" ] || cat "$T/offer.why" "$T/offer.json" >&2; false; }'
S scancel "$C"

# ---- a 30% event ----
START=$(date -u -d "@$(( $(date +%s) + 1 ))" +%Y-%m-%dT%H:%M:%SZ)
CODE=$(curl -s -m 10 -o "$T/body" -w '%{http_code}' -X POST -H "Authorization: Bearer $(cat "$T/ctok")" \
  --data-binary "{\"id\":\"slurm30\",\"start\":\"$START\",\"duration_s\":12,\"reduction_pct\":30}" "$URL/v1/events")
[ "$CODE" = 201 ] || { cat "$T/body" >&2; fail "event: HTTP $CODE"; }; ok
wait_for 30 "event slurm30 to start" 'curl -s -m 5 "$URL/v1/events/slurm30" | grep -q "\"status\":\"active\""'
wait_for 30 "the Flex 3 job's GPU $GB capped" 'num "$(acap "$GB")" "<" 700'
cb=$(acap "$GB"); other=$(minor_of $(( IB == 0 ? 2 : 0 )))
ca=$(acap "$other")
[ "$ca" = "700" ] || fail "the Flex 0 job's GPU $other is capped ($ca W)"; ok
echo "event: Flex 3 job $B at $cb W per GPU, Flex 0 job $A at $ca W"
ctl_has "\"job_id\":\"$A\",\"tier\":0" || fail "controller lacks job A's tier from Slurm"; ok

# ---- the jobs end: the epilog removes the job files, caps come back ----
S scancel "$A" "$B"
wait_for 60 "the epilog to remove the job files" '[ ! -e "$T/run/jobs/$A.json" ] && [ ! -e "$T/run/jobs/$B.json" ]'
[ ! -e "$SLB" ] || fail "the epilog left the step log $SLB"; ok
wait_for 30 "GPU $GB restored after the job ended" '[ "$(acap "$GB")" = "700" ]'
ok
contains "$T/agent.log" "ended: baseline restored"
wait_for 60 "event slurm30 to end" 'curl -s -m 5 "$URL/v1/events/slurm30" | grep -q "\"status\":\"done\""'
for g in 0 1 2 3; do wait_for 30 "GPU $g at 700 W after everything ended" '[ "$(acap $g)" = "700" ]'; ok; done
# the fake devices and private directories go with $T; daemons are stopped by the trap
done_ok
