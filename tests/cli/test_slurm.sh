#!/bin/sh
# test_slurm.sh — the Slurm integration against a real single-node Slurm
# (slurmctld, slurmd and munge from Debian's packages) with a private
# SLURM_CONF, state directories, munge socket and ports — never the
# machine's /etc/slurm — four fake GPU devices, the SPANK plugin, pfi-agent
# on simulated GPUs and pfi-controller: jobs submitted with different
# --power-flex tiers, a 30% event, caps checked per job, tiers honoured,
# the job environment (PFI_FLEX, PFI_STEPLOG), a bad tier refused, and
# everything restored after the jobs end. Every daemon it starts is
# stopped. Plain build only (label "plain"): the plugin is loaded into
# Slurm's uninstrumented daemons (docs/testing.md). Needs root.
. "$SRC/tests/cli/lib.sh"
: "${PFI_AGENT:?}" "${PFI_SPANK:?}"
CTL=${PFI_CONTROLLER:-$(dirname "$PFI_AGENT")/pfi-controller}
for b in slurmctld slurmd munged sbatch scontrol; do command -v $b >/dev/null || fail "$b is not installed (scripts/bootstrap.sh test)"; done
[ "$(id -u)" -eq 0 ] || fail "the Slurm test needs root"
[ -s "$PFI_SPANK" ] || fail "the SPANK plugin was not built ($PFI_SPANK)"

H=$(hostname)
DAEMONS=
cleanup() {
  for p in $DAEMONS; do kill -TERM "$p" 2>/dev/null; done
  sleep 0.5
  for p in $DAEMONS; do kill -9 "$p" 2>/dev/null; done
  rm -rf "$T"
}
trap cleanup EXIT
chmod 755 "$T"
mkdir -p "$T/munge" "$T/state" "$T/spool" "$T/dev" "$T/run/jobs" "$T/log"
chown munge: "$T/munge"
chmod 711 "$T/munge"
for i in 0 1 2 3; do mknod "$T/dev/nvidia$i" c 195 $i; done

# ---- munge on a private socket ----
runuser -u munge -- munged -F --socket="$T/munge/sock" --pid-file="$T/munge/pid" --log-file="$T/munge/log" \
  --seed-file="$T/munge/seed" >"$T/munge/out" 2>&1 &
DAEMONS="$DAEMONS $!"
i=0; while [ ! -S "$T/munge/sock" ]; do i=$((i+1)); [ $i -lt 200 ] || fail "munged did not start"; sleep 0.05; done

# ---- Slurm with private ports and directories ----
base=$((20000 + $$ % 20000))
MEM=$(awk '/MemTotal/{print int($2/1024/2)}' /proc/meminfo)
cat >"$T/slurm.conf" <<EOF
ClusterName=pfitest
SlurmctldHost=$H(127.0.0.1)
SlurmctldPort=$base
SlurmdPort=$((base + 1))
SrunPortRange=$((base + 10))-$((base + 60))
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
printf 'AutoDetect=off\nNodeName=%s Name=gpu File=%s/dev/nvidia[0-3]\n' "$H" "$T" >"$T/gres.conf"
printf 'optional %s rundir=%s/run\n' "$PFI_SPANK" "$T" >"$T/plugstack.conf"
export SLURM_CONF=$T/slurm.conf
slurmctld -D -i -f "$SLURM_CONF" >"$T/log/ctld.out" 2>&1 &
DAEMONS="$DAEMONS $!"
slurmd -D -f "$SLURM_CONF" >"$T/log/d.out" 2>&1 &
DAEMONS="$DAEMONS $!"
i=0; until sinfo -h -o %T 2>/dev/null | grep -q idle; do
  i=$((i+1)); [ $i -lt 400 ] || { tail -20 "$T/log/slurmctld.log" "$T/log/slurmd.log" >&2; fail "the Slurm node never became idle"; }; sleep 0.05
done
ok
# the plugin's option is registered
sbatch --help 2>&1 | grep -q -- "--power-flex" || fail "sbatch --help lacks --power-flex"; ok
if sbatch --power-flex=7 --wrap true >"$T/out" 2>"$T/err"; then fail "sbatch accepted --power-flex=7"; fi
ok
contains "$T/err" "expected a tier 0..3"

# ---- pfi: an agent on 4 simulated GPUs (two job slots), a controller ----
new_token "$T/atok" "$T/ctok"
"$PFI_AGENT" --backend "sim:gpus=4,job=s0:moe-ft-qwen30ba3b-x8@0-1,job=s1:moe-pt-gptoss20b-x8-ep1-nocompile@2-3,idle,load=0,state=$T/hw.json" \
  --listen 127.0.0.1:0 --port-file "$T/a.port" --token-file "$T/atok" --state-file "$T/a.state" --interval 0.5 \
  --jobs-dir "$T/run/jobs" --log "$T/agent.log" &
DAEMONS="$DAEMONS $!"
i=0; while [ ! -s "$T/a.port" ]; do i=$((i+1)); [ $i -lt 200 ] || fail "agent did not start"; sleep 0.05; done
AP=$(cat "$T/a.port")
cat >"$T/ctl.json" <<EOF
{"listen": "127.0.0.1:0", "token_file": "$T/ctok", "db": "$T/ctl.db", "control_period_s": 1, "baseline_window_s": 3,
 "lease_s": 10, "agents": [{"name": "$H", "url": "http://127.0.0.1:$AP", "token_file": "$T/atok"}]}
EOF
"$CTL" --config "$T/ctl.json" --port-file "$T/c.port" 2>"$T/ctl.log" &
DAEMONS="$DAEMONS $!"
i=0; while [ ! -s "$T/c.port" ]; do i=$((i+1)); [ $i -lt 200 ] || fail "controller did not start"; sleep 0.05; done
URL=http://127.0.0.1:$(cat "$T/c.port")
acap() { curl -s "http://127.0.0.1:$AP/metrics" | awk -F'[ {}]' -v g="$1" '$1=="pfi_gpu_power_cap_watts" && index($0, "gpu=\"" g "\""){print $NF}'; }

# ---- two jobs, Flex 0 and Flex 3 ----
A=$(sbatch --parsable --gres=gpu:2 --power-flex=0 -o "$T/a.out" --wrap "env > $T/envA; sleep 120")
B=$(sbatch --parsable --gres=gpu:2 --power-flex=3 -o "$T/b.out" --wrap "env > $T/envB; sleep 120")
[ -n "$A" ] && [ -n "$B" ] || fail "sbatch failed"; ok
i=0; until [ -s "$T/run/jobs/$A.json" ] && [ -s "$T/run/jobs/$B.json" ]; do
  i=$((i+1)); [ $i -lt 400 ] || { squeue >&2; tail -20 "$T/log/slurmd.log" >&2; fail "job files never appeared"; }; sleep 0.05
done
contains "$T/run/jobs/$A.json" '"tier": 0'
contains "$T/run/jobs/$B.json" '"tier": 3'
contains "$T/run/jobs/$B.json" "\"steplog\": \"$T/run/steplogs/$B.jsonl\""
i=0; until [ -s "$T/envB" ]; do i=$((i+1)); [ $i -lt 200 ] || fail "job B never ran"; sleep 0.05; done
contains "$T/envB" "PFI_FLEX=3"
contains "$T/envB" "PFI_STEPLOG=$T/run/steplogs/$B.jsonl"
contains "$T/envA" "PFI_FLEX=0"
# the agent maps the GPUs Slurm gave each job, with its tier
i=0; until curl -s "http://127.0.0.1:$AP/v1/node" | grep -q "\"job_id\":\"$B\""; do i=$((i+1)); [ $i -lt 200 ] || fail "agent never saw job $B"; sleep 0.05; done
sleep 4 # jobs start, the controller measures baselines
curl -s "http://127.0.0.1:$AP/v1/node" >"$T/node"
contains "$T/node" '"tier":3'
contains "$T/node" '"source":"jobfile"'
GB=$(scontrol -d show job "$B" | grep -o 'IDX:[0-9]' | head -1 | cut -d: -f2)
[ -n "$GB" ] || fail "no GPU index for job $B"; ok

# ---- a 30% event ----
S=$(date -u -d "@$(( $(date +%s) + 1 ))" +%Y-%m-%dT%H:%M:%SZ)
CODE=$(curl -s -o "$T/body" -w '%{http_code}' -X POST -H "Authorization: Bearer $(cat "$T/ctok")" \
  --data-binary "{\"id\":\"slurm30\",\"start\":\"$S\",\"duration_s\":12,\"reduction_pct\":30}" "$URL/v1/events")
[ "$CODE" = 201 ] || { cat "$T/body" >&2; fail "event: HTTP $CODE"; }; ok
sleep 5
cb=$(acap "$GB"); other=$(( GB == 0 ? 2 : 0 ))
ca=$(acap "$other")
awk -v c="$cb" 'BEGIN{exit !(c < 700)}' || fail "the Flex 3 job's GPU $GB is not capped ($cb W)"; ok
[ "$ca" = "700" ] || fail "the Flex 0 job's GPU $other is capped ($ca W)"; ok
echo "event: Flex 3 job $B at $cb W per GPU, Flex 0 job $A at $ca W"
curl -s "$URL/v1/status" | grep -q "\"job_id\":\"$A\",\"tier\":0" || fail "controller lacks job A's tier from Slurm"; ok

# ---- the jobs end: the epilog removes the job files, caps come back ----
scancel "$A" "$B"
i=0; while [ -e "$T/run/jobs/$A.json" ] || [ -e "$T/run/jobs/$B.json" ]; do i=$((i+1)); [ $i -lt 400 ] || fail "job files not removed"; sleep 0.05; done
i=0; until [ "$(acap "$GB")" = "700" ]; do i=$((i+1)); [ $i -lt 300 ] || fail "GPU $GB not restored after the job ended"; sleep 0.05; done
ok
contains "$T/agent.log" "ended: baseline restored"
i=0; until curl -s "$URL/v1/events/slurm30" | grep -q '"status":"done"'; do i=$((i+1)); [ $i -lt 600 ] || fail "event did not end"; sleep 0.05; done
for g in 0 1 2 3; do [ "$(acap $g)" = "700" ] || fail "GPU $g at $(acap $g) W after everything ended"; ok; done
# the fake devices and private directories go with $T; daemons are stopped by the trap
done_ok
