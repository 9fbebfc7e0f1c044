#!/bin/sh
# run-bench.sh BUILD_DIR — run every benchmark in BUILD_DIR/bench, one after
# another (they time themselves on one core, except the controller's), and
# print their figures.
set -eu
dir=$1
export PFI_BIN="$(cd "$dir" && pwd)/pfi"
export PFI_AGENT_BIN="$(cd "$dir" && pwd)/pfi-agent"
export PFI_CONTROLLER_BIN="$(cd "$dir" && pwd)/pfi-controller"
export FAKE_NVML="$(cd "$dir" && pwd)/tests/libfake_nvml.so"
export PFI_DATA_DIR="${PFI_DATA_DIR:-$(cd "$(dirname "$0")/.." && pwd)/data}"
for b in "$dir"/bench/bench_*; do
  [ -x "$b" ] || continue
  echo "== $(basename "$b")"
  case "$b" in
    # the controller benchmark runs a farm of up to 12,500 fake agents
    # (BENCH_CTL_AGENTS, about 4 minutes) and the
    # controller as two processes, the OpenADR one a controller, 4 agents and
    # a fixture VTN (the VTN page one too), the report one a controller, 4 agents and 8 clients:
    # pinning them to one core would measure their contention
    *bench_controller|*bench_openadr|*bench_report_contention|*bench_vtn_page) "$b" ;;
    *) taskset -c 0 "$b" 2>/dev/null || "$b" ;;
  esac
done
# the benchmarks written in sh (a controller and an agent, timed by polling)
for b in "$(dirname "$0")"/../bench/bench_*.sh; do
  echo "== $(basename "$b")"
  sh "$b"
done
