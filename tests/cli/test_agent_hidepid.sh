#!/bin/sh
# test_agent_hidepid.sh — /proc mounted with hidepid= (issue 40 d): other
# users' /proc/PID are hidden from a process without CAP_SYS_PTRACE, which
# the agent drops unless --job-env needs it, so its mapping of GPU processes
# to jobs through their cgroups fails. It used to fail silently; now the
# agent says so once at start. Run as root in a private mount namespace
# (unshare -m) with its own /proc; skipped otherwise.
. "$SRC/tests/cli/lib.sh"
: "${PFI_AGENT:?}"
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (a private mount namespace with its own /proc)"; exit 77; }
run_agent() { # NAME HIDEPID [options]: the agent in a namespace whose /proc has hidepid=HIDEPID
  n=$1 h=$2; shift 2
  # the new /proc must not reach the parent namespace: every mount made
  # private first (in a chroot / is no mount point, so unshare's own
  # --propagation private fails there; /proc alone then)
  start_daemon "$n" "$T/$n.log" "$T/$n.port" unshare -m --propagation unchanged sh -c \
    '{ mount --make-rprivate / 2>/dev/null || mount --make-rprivate /proc; } &&
     mount -t proc -o hidepid=$0 proc /proc && exec "$@"' "$h" "$PFI_AGENT" --backend sim:gpus=1,load=0 \
    --listen 127.0.0.1:0 --port-file "$T/$n.port" --state-file "$T/$n.state" --log "$T/$n.log" "$@"
  stop_daemon "$DPID" TERM
}
run_agent hidden 2
contains "$T/hidden.log" "warning: /proc is mounted with hidepid="
contains "$T/hidden.log" "GPU processes are not mapped to jobs through their cgroups"
run_agent visible 0
lacks "$T/visible.log" "hidepid"
# --job-env keeps CAP_SYS_PTRACE: it can read them, nothing to say
run_agent ptrace 2 --job-env SLURM_JOB_ID
lacks "$T/ptrace.log" "hidepid"
done_ok
