#!/bin/sh
# nvml-smoke.sh — the read-only check of pfi's NVML backend on a real GPU
# (docs/agent.md, "A read-only check on a real GPU"). Prints everything
# `pfi gpu info` reads — devices, UUIDs, names, power (average and the
# instant field), limits (current, default, min, max, enforced), clocks,
# processes — as text and as JSON, then runs pfi-agent on the NVML backend
# for a few seconds with no token (so PUT /v1/caps is refused: nothing can
# ask it to set a cap) and prints its view and its metrics. Changes nothing:
# `pfi gpu info` opens NVML read-only (no setter is even looked up); the
# agent without a lease or a state file to restore writes nothing.
#
# Exit status: 0 when every value is there; 1 when one is missing (named on
# stderr: the instant field is allowed to be missing only where the driver
# predates it, and says so); 2 when pfi cannot read the GPUs at all.
#
# Usage: scripts/nvml-smoke.sh [BUILD_DIR]   (default: build; or $PFI and $PFI_AGENT)
set -u
BUILD=${1:-build}
PFI=${PFI:-$BUILD/pfi}
PFI_AGENT=${PFI_AGENT:-$BUILD/pfi-agent}
PY=${PY:-/usr/bin/python3}
AGENT_S=${AGENT_S:-5}
T=$(mktemp -d "${TMPDIR:-/tmp}/pfi-smoke.XXXXXX")
AGENT_PID=
trap '[ -z "$AGENT_PID" ] || kill "$AGENT_PID" 2>/dev/null; rm -rf "$T"' EXIT

echo "== nvidia-smi (for comparison, if present)"
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=index,uuid,name,driver_version,power.draw,power.limit,enforced.power.limit,power.default_limit,power.min_limit,power.max_limit,clocks.sm,clocks.mem --format=csv
else
  echo "nvidia-smi: not installed"
fi

echo "== pfi gpu info"
"$PFI" gpu info || { echo "nvml-smoke: pfi gpu info failed: no GPU readable" >&2; exit 2; }
echo "== pfi gpu info --json"
"$PFI" gpu info --json >"$T/info.json" || exit 2
cat "$T/info.json"

# every value there (the instant field: only where the driver has it)
missing=0
"$PY" - "$T/info.json" <<'EOF' || missing=1
import json, sys
d = json.load(open(sys.argv[1]))
bad = 0
if not d["gpus"]:
    print("nvml-smoke: no GPU listed", file=sys.stderr)
    bad = 1
for g in d["gpus"]:
    need = {"uuid": g["uuid"], "name": g["name"], "power_w": g["power_w"],
            "sm_clock_mhz": g["sm_clock_mhz"], "mem_clock_mhz": g["mem_clock_mhz"],
            "processes": g["processes"]}
    need.update({"limits_w." + k: v for k, v in g["limits_w"].items()})
    for k, v in need.items():
        if v is None or v == "":
            print("nvml-smoke: GPU %d: %s missing" % (g["index"], k), file=sys.stderr)
            bad = 1
    if g["power_instant_w"] is None:
        print("nvml-smoke: GPU %d: power_instant_w missing (NVML_FI_DEV_POWER_INSTANT, field 186: "
              "older drivers lack it)" % g["index"], file=sys.stderr)
        bad = 1
    if g["out_of_band_limit"]:
        print("nvml-smoke: GPU %d: enforced limit %s W below the current %s W: set out of band"
              % (g["index"], g["limits_w"]["enforced"], g["limits_w"]["current"]), file=sys.stderr)
sys.exit(bad)
EOF

echo "== pfi-agent --backend nvml, ${AGENT_S} s, no token (caps read-only)"
"$PFI_AGENT" --backend nvml --listen 127.0.0.1:0 --port-file "$T/port" \
  --state-file "$T/agent-state.json" --read-only --interval 1 --log "$T/agent.log" &
AGENT_PID=$!
i=0
while [ ! -s "$T/port" ] && [ $i -lt 100 ] && kill -0 "$AGENT_PID" 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
if [ -s "$T/port" ]; then
  sleep "$AGENT_S"
  URL=http://127.0.0.1:$(cat "$T/port")
  echo "-- GET /v1/node"; curl -s -m 5 "$URL/v1/node"; echo
  echo "-- GET /metrics (pfi_gpu_*)"; curl -s -m 5 "$URL/metrics" | grep '^pfi_gpu_'
  kill "$AGENT_PID"; wait "$AGENT_PID"; AGENT_PID=
else
  echo "nvml-smoke: the agent did not start" >&2
  missing=1
fi
echo "-- agent log"; cat "$T/agent.log"
if grep -q 'cap.*set\|restored' "$T/agent.log"; then
  echo "nvml-smoke: the agent log mentions a cap change: check it" >&2
  missing=1
fi
[ "$missing" -eq 0 ] && echo "nvml-smoke: every value read; nothing changed" >&2
exit "$missing"
