#!/bin/sh
# test_gpu_check.sh — scripts/gpu-check.sh, the read-only comparison with
# nvidia-smi, on the NVML test double and a stand-in nvidia-smi that
# prints what `nvidia-smi --query-gpu=... --format=csv,noheader,nounits`
# prints (nvidia-smi --help-query-gpu: W without units, "Enabled" /
# "Disabled", "[N/A]" for a field the GPU lacks). Checked: agreeing values
# pass with the table of index, minor, PCI bus id, UUID, persistence, MIG;
# limits a factor of 1000 off are named a unit bug; a power outside the
# readings' range (+-5%) and a GPU nvidia-smi lists but pfi does not are
# mismatches (exit 1); a failing nvidia-smi is exit 2. An index that is
# not the minor is noted, and a GPU governed at module scope; with PFI_AGENT_URL, the agent's write path is
# shown, and a refused one is a finding (exit 1).
. "$SRC/tests/cli/lib.sh"
: "${PFI:?}" "${FAKE_NVML:?}"
export PFI_NVML_LIBRARY=$FAKE_NVML FAKE_NVML_GPUS=2 FAKE_NVML_STATE=$T/nvml FAKE_NVML_MINORS=1,0
mkdir -p "$T/bin"
# the stand-in prints $T/smi.csv (one line per GPU), as nvidia-smi would
printf '#!/bin/sh\ncase "$*" in *--query-gpu=*--format=csv,noheader,nounits*) cat "%s/smi.csv" ;; *) exit 9 ;; esac\n' "$T" >"$T/bin/nvidia-smi"
chmod +x "$T/bin/nvidia-smi"
export NVIDIA_SMI="$T/bin/nvidia-smi"
U0=GPU-fa4e0000-0000-4000-8000-000000000000
U1=GPU-fa4e0000-0000-4000-8000-000000000001
smi() { # LIMIT POWER [extra line]
  printf '%s, 0, 00000000:18:00.0, %s, %s, 700.00, 200.00, 700.00, %s, Enabled, [N/A]\n' "$U0" "$2" "$1" "$1" >"$T/smi.csv"
  printf '%s, 1, 00000000:28:00.0, %s, %s, 700.00, 200.00, 700.00, %s, Enabled, [N/A]\n' "$U1" "$2" "$1" "$1" >>"$T/smi.csv"
  [ -z "${3:-}" ] || echo "$3" >>"$T/smi.csv"
}
B=$(dirname "$PFI")
smi 700.00 610.00
expect_status 0 sh "$SRC/scripts/gpu-check.sh" "$B"
contains "$T/out" "index minor PCI bus id"
grep -q "^0     1     00000000:18:00.0 $U0 on" "$T/out" || { cat "$T/out" >&2; fail "the table's first row"; }; ok
contains "$T/err" "2 GPUs compared: every limit within 1 W, power within 5%"
# index and minor differ (FAKE_NVML_MINORS=1,0): noted, not a mismatch
contains "$T/err" "note: GPU 0 has device minor 1 (/dev/nvidia1): index and minor differ"
lacks "$T/err" "module scope"
# a GH200-like GPU (FAKE_NVML_MODULE): noted with its module power, not a mismatch
FAKE_NVML_MODULE=1 expect_status 0 sh "$SRC/scripts/gpu-check.sh" "$B"
grep -q "note: GPU 1: power governed at module scope (module), module power [0-9.]* W: pfi does not cap it" "$T/err" \
  || { cat "$T/err" >&2; fail "no module-scope note"; }; ok
# the running agent's write path, from its /v1/node (a file:// URL stands in for it)
mkdir -p "$T/agent/v1"
echo '{"write_path":"ok","gpus":[]}' >"$T/agent/v1/node"
PFI_AGENT_URL=file://$T/agent expect_status 0 sh "$SRC/scripts/gpu-check.sh" "$B"
contains "$T/err" "the agent's write path: ok"
echo '{"write_path":"refused","write_path_error":"GPU 0: NVML: Insufficient Permissions","gpus":[]}' >"$T/agent/v1/node"
PFI_AGENT_URL=file://$T/agent expect_status 1 sh "$SRC/scripts/gpu-check.sh" "$B"
contains "$T/err" "the agent's write path: refused: GPU 0: NVML: Insufficient Permissions"
# limits in mW where W were meant
smi 700000 610.00
expect_status 1 sh "$SRC/scripts/gpu-check.sh" "$B"
contains "$T/err" "current limit: pfi 700.0 W, nvidia-smi 700000.0 W (a factor of 0.0010: a unit bug?)"
# a power reading outside the range
smi 700.00 300.00
expect_status 1 sh "$SRC/scripts/gpu-check.sh" "$B"
contains "$T/err" "outside nvidia-smi's 300.0..300.0 W"
# a GPU nvidia-smi lists that pfi does not know
smi 700.00 610.00 "GPU-00000000-0000-0000-0000-000000000009, 2, 00000000:38:00.0, 610, 700, 700, 200, 700, 700, Disabled, [N/A]"
expect_status 1 sh "$SRC/scripts/gpu-check.sh" "$B"
contains "$T/err" "nvidia-smi lists 3 GPUs, pfi matched 2"
# nvidia-smi failing
printf '#!/bin/sh\necho "NVIDIA-SMI has failed" >&2\nexit 9\n' >"$T/bin/nvidia-smi"
expect_status 2 sh "$SRC/scripts/gpu-check.sh" "$B"
contains "$T/err" "NVIDIA-SMI has failed"
done_ok
