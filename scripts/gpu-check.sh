#!/bin/sh
# gpu-check.sh — a read-only comparison of pfi's NVML readings with
# nvidia-smi's, on a node with NVIDIA GPUs (docs/agent.md, "A read-only
# check on a real GPU"). For every GPU matched by UUID: the current,
# default, min, max and enforced power limits must equal nvidia-smi's
# within 1 W (a ratio near 1000 is named as a unit bug: mW read as W), and
# pfi's power must lie within 5% of the range of two nvidia-smi readings
# taken just before and just after it. It prints a table of NVML index,
# device minor, PCI bus id, UUID, persistence and MIG mode, then one line
# per finding. Changes nothing: `pfi gpu info` opens NVML read-only and
# nvidia-smi is only queried.
#
# Exit status: 0 all equal; 1 a mismatch (named on stderr); 2 when either
# side cannot be read.
#
# Usage: scripts/gpu-check.sh [BUILD_DIR]   (default: build; or $PFI; $NVIDIA_SMI;
#   $PFI_AGENT_URL [$PFI_AGENT_TOKEN_FILE]: also the running agent's write path)
# A GPU whose device minor differs from its NVML index is noted (not a
# mismatch): Slurm and cgroups name the minor.
# A GPU whose power is governed at module scope (GH200, GB200) is noted
# with its module power: pfi does not cap it.
set -u
BUILD=${1:-build}
PFI=${PFI:-$BUILD/pfi}
SMI=${NVIDIA_SMI:-nvidia-smi}
PY=${PY:-/usr/bin/python3}
T=$(mktemp -d "${TMPDIR:-/tmp}/pfi-gpucheck.XXXXXX")
trap 'rm -rf "$T"' EXIT
# nvidia-smi --help-query-gpu names these fields; nounits: W and plain values
Q=uuid,index,pci.bus_id,power.draw,power.limit,power.default_limit,power.min_limit,power.max_limit,enforced.power.limit,persistence_mode,mig.mode.current
"$SMI" --query-gpu=$Q --format=csv,noheader,nounits >"$T/smi1" 2>"$T/smi.err" ||
  { echo "gpu-check: $SMI failed: $(head -c 300 "$T/smi.err")" >&2; exit 2; }
"$PFI" gpu info --json >"$T/pfi.json" 2>"$T/pfi.err" ||
  { [ -s "$T/pfi.json" ] || { echo "gpu-check: pfi gpu info failed: $(head -c 300 "$T/pfi.err")" >&2; exit 2; }; }
"$SMI" --query-gpu=$Q --format=csv,noheader,nounits >"$T/smi2" 2>>"$T/smi.err" ||
  { echo "gpu-check: $SMI failed: $(head -c 300 "$T/smi.err")" >&2; exit 2; }
# PFI_AGENT_URL=http://HOST:9477 (and PFI_AGENT_TOKEN_FILE): also the running
# agent's write path, from its /v1/node (issue 40: refused = caps cannot be set)
node=""
if [ -n "${PFI_AGENT_URL:-}" ]; then
  node=$T/node.json
  auth=""; [ -z "${PFI_AGENT_TOKEN_FILE:-}" ] || auth="Authorization: Bearer $(cat "$PFI_AGENT_TOKEN_FILE")"
  curl -s -m 10 ${auth:+-H "$auth"} "$PFI_AGENT_URL/v1/node" >"$node" || : >"$node"
fi
exec "$PY" - "$T/smi1" "$T/smi2" "$T/pfi.json" "$node" <<'EOF'
import json, sys

FIELDS = ["uuid", "index", "pci", "power", "current", "default", "min", "max", "enforced",
          "persistence", "mig"]

def num(v):
    try:
        return float(v)
    except ValueError:
        return None  # "[N/A]", "[Not Supported]"

def smi(path):
    rows = {}
    for line in open(path):
        cols = [c.strip() for c in line.split(",")]
        if len(cols) != len(FIELDS):
            continue
        r = dict(zip(FIELDS, cols))
        rows[r["uuid"]] = r
    return rows

s1, s2 = smi(sys.argv[1]), smi(sys.argv[2])
doc = json.load(open(sys.argv[3]))
if not s1:
    print("gpu-check: nvidia-smi listed no GPU", file=sys.stderr)
    sys.exit(2)
print("%-5s %-5s %-16s %-40s %-11s %s" % ("index", "minor", "PCI bus id", "UUID", "persistence", "MIG"))
bad = 0
matched = 0
for g in doc["gpus"]:
    if g.get("state", "ok") != "ok":
        print("%-5s unavailable: %s (%s)" % (g["index"], g["state"], g.get("error", "")))
        bad = 1
        continue
    u = g["uuid"]
    print("%-5s %-5s %-16s %-40s %-11s %s" % (
        g["index"], g.get("minor"), g.get("pci_bus_id"), u,
        {True: "on", False: "off", None: "n/a"}[g.get("persistence")],
        {True: "enabled", False: "disabled", None: "n/a"}[g.get("mig")]))
    a, b = s1.get(u), s2.get(u)
    if not a or not b:
        print("gpu-check: GPU %s (%s): not listed by nvidia-smi" % (g["index"], u), file=sys.stderr)
        bad = 1
        continue
    matched += 1
    for k in ("current", "default", "min", "max", "enforced"):
        p, q = g["limits_w"][k], num(a[k])
        if p is None and q is None:
            continue
        if p is None or q is None:
            print("gpu-check: GPU %s: %s limit: pfi %s, nvidia-smi %s" % (g["index"], k, p, a[k]),
                  file=sys.stderr)
            bad = 1
        elif abs(p - q) > 1.0:
            unit = " (a factor of %.0f: a unit bug, mW read as W?)" % (p / q) if q and 900 < p / q < 1100 \
                else " (a factor of %.4f: a unit bug?)" % (p / q) if q and 0.0009 < p / q < 0.0011 else ""
            print("gpu-check: GPU %s: %s limit: pfi %.1f W, nvidia-smi %.1f W%s" % (g["index"], k, p, q, unit),
                  file=sys.stderr)
            bad = 1
    p, q1, q2 = g["power_w"], num(a["power"]), num(b["power"])
    if p is not None and q1 is not None and q2 is not None:
        lo, hi = min(q1, q2) * 0.95, max(q1, q2) * 1.05
        if not lo <= p <= hi:
            print("gpu-check: GPU %s: power %.1f W outside nvidia-smi's %.1f..%.1f W (+-5%%)"
                  % (g["index"], p, min(q1, q2), max(q1, q2)), file=sys.stderr)
            bad = 1
    if g.get("minor") is not None and str(g["minor"]) != str(g["index"]):
        # not a mismatch, a fact to know: Slurm's File= and cgroups name the
        # minor, NVML's index follows PCI order (docs/slurm.md)
        print("gpu-check: note: GPU %s has device minor %s (/dev/nvidia%s): index and minor differ"
              % (g["index"], g["minor"], g["minor"]), file=sys.stderr)
    if g.get("power_scope") not in (None, "gpu"):
        # GH200: the GPU-scope fields are missing, the module's include the
        # Grace CPU; GB200/GB300: module limits the GPU-scope setter does
        # not touch. pfi refuses every cap there (docs/agent.md)
        mp = g.get("module_power_w")
        print("gpu-check: note: GPU %s: power governed at module scope (%s), module power %s: "
              "pfi does not cap it" % (g["index"], g["power_scope"],
                                       "%.1f W" % mp if mp is not None else "n/a"), file=sys.stderr)
    mig = {"Enabled": True, "Disabled": False}.get(a["mig"])
    if mig is not None and g.get("mig") is not None and mig != g["mig"]:
        print("gpu-check: GPU %s: MIG mode: pfi %s, nvidia-smi %s" % (g["index"], g["mig"], a["mig"]),
              file=sys.stderr)
        bad = 1
if matched < len(s1):
    print("gpu-check: nvidia-smi lists %d GPUs, pfi matched %d" % (len(s1), matched), file=sys.stderr)
    bad = 1
if len(sys.argv) > 4 and sys.argv[4]:
    try:
        node = json.load(open(sys.argv[4]))
        wp = node.get("write_path", "unknown")
        print("gpu-check: the agent's write path: %s%s" % (wp, ": " + node.get("write_path_error", "")
                                                         if wp == "refused" else ""), file=sys.stderr)
        bad = bad or wp == "refused"
    except (OSError, ValueError) as e:
        print("gpu-check: the agent's /v1/node cannot be read: %s" % e, file=sys.stderr)
        bad = 1
print("gpu-check: %d GPUs compared: %s" % (matched, "mismatch (above)" if bad else "every limit within 1 W, power within 5%"),
      file=sys.stderr)
sys.exit(1 if bad else 0)
EOF
