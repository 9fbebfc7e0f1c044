#!/bin/sh
# bench_failover.sh — failover on etcd measured (issue 45; docs/controller.md,
# "Failover on etcd"): three etcd members on loopback (Debian's
# etcd-server), then bench_controller (bench_failover.h) with
#   1. BENCH_FO_AGENTS (1,000) farm agents x 8 GPUs, two controllers, and
#      BENCH_FO_KILLS (20) SIGKILLs of the leader during an event, with one
#      busy thread beside it (a loaded 2-core machine): takeover p50 / p99 /
#      max and the agents' leases lapsed (lease_s 15 s, TTL 2 s, period 1 s);
#   2. the steady-state cost: period p99 at BENCH_FO_SCALE (12,500) agents
#      with the etcd store, and the same without it (SQLite alone).
#      BENCH_FO_SCALE=0 skips it.
# Needs PFI_BIN, PFI_AGENT_BIN, PFI_CONTROLLER_BIN (scripts/run-bench.sh)
# and the build's bench and tests directories next to the controller.
set -u
SRC=$(cd "$(dirname "$0")/.." && pwd)
PFI=${PFI_BIN:?}
BUILD=$(dirname "$PFI")
TOOLS=$BUILD/tests
export PFI SRC TOOLS
. "$SRC/tests/cli/lib.sh"
. "$SRC/tests/cli/etcd_lib.sh"
B=$BUILD/bench/bench_controller
[ -x "$B" ] || fail "no $B"
etcd_cluster 3
echo "bench failover: etcd members at $ETCD_EPS"
BENCH_CTL_ETCD=$ETCD_EPS BENCH_CTL_KILLS=${BENCH_FO_KILLS:-20} BENCH_CTL_AGENTS=${BENCH_FO_AGENTS:-1000} \
  BENCH_CTL_DEMO=0 BENCH_CTL_LOAD=1 BENCH_CTL_TRIGGERS=2 BENCH_CTL_PROFILE=0 "$B"
S=${BENCH_FO_SCALE:-12500}
if [ "$S" -gt 0 ]; then
  echo "bench failover: the steady state at $S agents, etcd store"
  BENCH_CTL_ETCD=$ETCD_EPS BENCH_CTL_KILLS=0 BENCH_CTL_AGENTS=$S BENCH_CTL_DEMO=0 \
    BENCH_CTL_TRIGGERS=0 BENCH_CTL_PROFILE=0 BENCH_CTL_PERIODS=${BENCH_FO_PERIODS:-100} "$B"
  echo "bench failover: the steady state at $S agents, SQLite alone"
  BENCH_CTL_AGENTS=$S BENCH_CTL_DEMO=0 BENCH_CTL_TRIGGERS=0 BENCH_CTL_PROFILE=0 BENCH_CTL_PERIODS=${BENCH_FO_PERIODS:-100} "$B"
fi
