# etcd_lib.sh — a real etcd cluster on loopback for the tests (sourced after
# lib.sh): Debian's etcd-server (3.4), each member with its own data
# directory and ports, never the packaged etcd.service's 127.0.0.1:2379.
#
# etcd cannot listen on port 0 and tell which port it got, and a cluster's
# members must know each other's peer URLs before they start. So the
# kernel picks the ports (free_ports: bound to port 0, then released) and a
# start that loses one of them to another process in between (a member's
# log says "address already in use") is retried with new ones, at most 3
# times.
command -v etcd >/dev/null || fail "etcd is needed: install the Debian package etcd-server (scripts/bootstrap.sh test)"

# free_ports N: N ports the kernel picked, on one line
free_ports() {
  python3 -c 'import socket,sys
ss=[socket.socket() for _ in range(int(sys.argv[1]))]
for s in ss: s.bind(("127.0.0.1",0))
print(" ".join(str(s.getsockname()[1]) for s in ss))' "$1"
}

# etcd_cluster N [EXTRA ARGS...]: start N members m1..mN (extra etcd
# arguments for every member); sets ETCD_EPS (comma-separated client URLs),
# ETCD_EP_i and ETCD_PID_i; waits until a write through every member succeeds
# (etcd_check, with the EC_CA/EC_CERT/EC_KEY of the environment; never
# ETCD_* names: etcd reads every ETCD_* variable as a flag).
# PFI_ETCD_NAME (m) names the members (a second cluster beside the first),
# PFI_ETCD_SCHEME (http) is their clients' scheme (https with --cert-file ...),
# PFI_ETCD_HOST_i (127.0.0.1) member i's address and PFI_ETCD_WRAP_i a command
# it runs under (another network namespace: test_failover_isolated.sh); sets
# ETCD_PEER_i (its peer port) and ETCD_HOST_i
etcd_cluster() {
  ec_n=$1; shift
  for ec_try in 1 2 3; do
    ec_ports=$(free_ports $((2 * ec_n)))
    ec_init=; ETCD_EPS=
    i=1; for p in $ec_ports; do
      [ $i -le "$ec_n" ] || break
      pp=$(echo "$ec_ports" | cut -d' ' -f$((i + ec_n)))
      eval "h=\${PFI_ETCD_HOST_$i:-127.0.0.1}"
      ec_init="${ec_init:+$ec_init,}${PFI_ETCD_NAME:-m}$i=http://$h:$pp"
      eval "ETCD_EP_$i=${PFI_ETCD_SCHEME:-http}://$h:$p ETCD_PEER_$i=$pp ETCD_HOST_$i=$h"
      ETCD_EPS="${ETCD_EPS:+$ETCD_EPS,}${PFI_ETCD_SCHEME:-http}://$h:$p"
      i=$((i + 1))
    done
    i=1; while [ $i -le "$ec_n" ]; do
      eval "ep=\$ETCD_EP_$i pp=\$ETCD_PEER_$i h=\$ETCD_HOST_$i w=\${PFI_ETCD_WRAP_$i:-}"
      en=${PFI_ETCD_NAME:-m}$i
      rm -rf "$T/etcd-$en"
      # (w: a command the member runs under, e.g. "ip netns exec NS": it execs etcd)
      start_daemon "etcd $en" "$T/etcd-$en.log" "" $w etcd --name "$en" --data-dir "$T/etcd-$en" \
        --listen-client-urls "$ep" --advertise-client-urls "$ep" \
        --listen-peer-urls "http://$h:$pp" --initial-advertise-peer-urls "http://$h:$pp" \
        --initial-cluster "$ec_init" --initial-cluster-token "pfi-test-$$-$ec_try" \
        --initial-cluster-state new "$@"
      eval "ETCD_PID_$i=$DPID"
      i=$((i + 1))
    done
    # healthy: a write through each member (a quorum answered)
    ec_end=$(($(date +%s) + 30)); ec_ok=0; ec_lost=0
    while [ "$(date +%s)" -lt "$ec_end" ]; do
      ec_ok=1; i=1
      while [ $i -le "$ec_n" ]; do
        eval "ep=\$ETCD_EP_$i"
        EC_TIMEOUT_S=1 "$TOOLS/etcd_check" "$ep" /pfi-test-health/ put up 1 >/dev/null 2>&1 || ec_ok=0
        i=$((i + 1))
      done
      [ $ec_ok = 1 ] && break
      if grep -qs "address already in use" "$T"/etcd-"${PFI_ETCD_NAME:-m}"*.log; then ec_lost=1; break; fi
      i=1; while [ $i -le "$ec_n" ]; do
        eval "pid=\$ETCD_PID_$i"; alive "$pid" || { show_logs; fail "etcd ${PFI_ETCD_NAME:-m}$i exited at start"; }
        i=$((i + 1))
      done
      sleep 0.1
    done
    [ $ec_ok = 1 ] && return 0
    i=1; while [ $i -le "$ec_n" ]; do
      eval "pid=\$ETCD_PID_$i"; unwatch "$pid"; kill -9 "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
      i=$((i + 1))
    done
    [ $ec_lost = 1 ] || { show_logs; fail "etcd cluster of $ec_n not healthy within 30 s"; }
    rm -f "$T"/etcd-"${PFI_ETCD_NAME:-m}"*.log
  done
  fail "etcd: lost a port to another process 3 times"
}
