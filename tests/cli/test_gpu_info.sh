#!/bin/sh
# test_gpu_info.sh — `pfi gpu info` on the NVML test double (issue 17 item
# 7): devices, UUIDs, names, power (average and the instant field), limits
# (current, default, min, max, enforced; an enforced limit set out of band
# shown as such), clocks and processes, as text and --json; an old driver's
# library (no field values, enforced or default limit) reads "n/a" / null
# and exits 0; no library is one line and exit 1; usage errors exit 2. The
# double logs every setter call (FAKE_NVML_SETTER_LOG): none, ever (the
# agent: only its start-up probe, one no-op write per GPU). Then
# pfi-agent on the double exports the enforced limit and
# pfi_gpu_out_of_band_limit, and logs the out-of-band limit once when it
# appears and once when it goes.
. "$SRC/tests/cli/lib.sh"
: "${PFI_AGENT:?}" "${FAKE_NVML:?}" "${FAKE_NVML_OLD:?}"
PY=/usr/bin/python3
command -v curl >/dev/null || fail "curl is needed (scripts/bootstrap.sh test)"
printf '700000\n700000\n' >"$T/nvml-state"
printf '0\n450000\n' >"$T/enforced" # GPU 1: a 450 W limit from elsewhere
export PFI_NVML_LIBRARY=$FAKE_NVML FAKE_NVML_GPUS=2 FAKE_NVML_STATE=$T/nvml-state \
  FAKE_NVML_ENFORCED=$T/enforced FAKE_NVML_PROCS="0:4242,0:4243" FAKE_NVML_SETTER_LOG=$T/setters \
  FAKE_NVML_PROCS_V2_CALLS=$T/v2calls
no_setter() { [ ! -e "$T/setters" ] || { cat "$T/setters" >&2; fail "a setter was called ($1)"; }; ok; }

# ---- text ----
expect_status 0 "$PFI" gpu info
contains "$T/out" "backend nvml, 2 GPUs, opened read-only"
contains "$T/out" "GPU 0  GPU-fa4e0000-0000-4000-8000-000000000000  NVIDIA H100 80GB HBM3 (test double)"
contains "$T/out" "GPU 1  GPU-fa4e0000-0000-4000-8000-000000000001"
contains "$T/out" "current 700 W  default 700 W  min 200 W  max 700 W  enforced 700 W"
contains "$T/out" "current 700 W  default 700 W  min 200 W  max 700 W  enforced 450 W"
[ "$(grep -c 'out of band' "$T/out")" -eq 1 ] || fail "GPU 1 alone is out of band"; ok
contains "$T/out" "the enforced limit 450 W is below the current 700 W"
contains "$T/out" "clocks         SM 1980 MHz  memory 2619 MHz"
contains "$T/out" "processes      pid 4242 (60000 MiB), pid 4243 (60000 MiB)"
contains "$T/out" "processes      none"
# the process list came from _v2, the symbol pfi calls first (the double has both)
[ -s "$T/v2calls" ] || fail "the process list was not read through nvmlDeviceGetComputeRunningProcesses_v2"; ok
grep -Eq '^  power +[0-9.]+ W \(average\)  [0-9.]+ W \(instant\)$' "$T/out" || fail "power line"; ok
lacks "$T/out" "n/a"
no_setter "pfi gpu info"

# ---- JSON: every value there, the instant field apart from the average ----
expect_status 0 "$PFI" gpu info --json
"$PY" - "$T/out" <<'EOF' || fail "--json"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["backend"] == "nvml" and d["read_only"] is True, d
g0, g1 = d["gpus"]
assert g0["uuid"] == "GPU-fa4e0000-0000-4000-8000-000000000000", g0
for g in (g0, g1):
    for k in ("power_w", "power_instant_w", "sm_clock_mhz", "mem_clock_mhz"):
        assert isinstance(g[k], float) and g[k] > 0, (k, g)
    assert g["power_instant_w"] != g["power_w"], g
    assert g["not_available"] == "", g
assert g0["limits_w"] == {"current": 700, "default": 700, "min": 200, "max": 700, "enforced": 700}, g0
assert g1["limits_w"]["enforced"] == 450 and g1["out_of_band_limit"] is True, g1
assert g0["out_of_band_limit"] is False
assert g0["processes"] == [{"pid": 4242, "used_mib": 60000}, {"pid": 4243, "used_mib": 60000}], g0
assert g1["processes"] == []
EOF
ok
no_setter "pfi gpu info --json"

# ---- an old driver: what it lacks is n/a, never an error ----
PFI_NVML_LIBRARY=$FAKE_NVML_OLD expect_status 0 "$PFI" gpu info
contains "$T/out" "n/a (instant)"
contains "$T/out" "current 700 W  default n/a  min 200 W  max 700 W  enforced n/a"
contains "$T/out" "processes      pid 4242 (30000 MiB), pid 4243 (30000 MiB)"
contains "$T/out" "not available  power_limit_default,total_energy,enforced_power_limit,field_power_instant"
PFI_NVML_LIBRARY=$FAKE_NVML_OLD expect_status 0 "$PFI" gpu info --json
"$PY" -c 'import json,sys; g=json.load(open(sys.argv[1]))["gpus"][0]; assert g["power_instant_w"] is None and g["limits_w"]["enforced"] is None and g["limits_w"]["default"] is None and g["out_of_band_limit"] is False and g["power_w"] > 0, g' "$T/out" || fail "old driver --json"; ok
# unsupported reads (NOT_SUPPORTED answers) likewise
FAKE_NVML_UNSUPPORTED=nvmlDeviceGetFieldValues,nvmlDeviceGetClockInfo expect_status 0 "$PFI" gpu info
contains "$T/out" "clocks         SM n/a  memory n/a"
no_setter "old driver"

# ---- failures and usage ----
PFI_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1 expect_error 1 "cannot load /nonexistent/libnvidia-ml.so.1" "$PFI" gpu info
FAKE_NVML_INIT_FAIL=1 expect_error 1 "nvmlInit" "$PFI" gpu info
expect_error 2 "expected an action: info" "$PFI" gpu
expect_error 2 "unknown action 'set'" "$PFI" gpu set
expect_error 2 "takes no operands" "$PFI" gpu info 0
expect_status 0 "$PFI" help gpu
contains "$T/out" "read-only"
# the simulated backend too: its caps read, not changed
printf '{"gpus": 3, "caps_w": [300, 400, 500]}\n' >"$T/hw.json"
expect_status 0 "$PFI" gpu info --backend "sim:gpus=3,state=$T/hw.json"
contains "$T/out" "backend sim, 3 GPUs, opened read-only"
contains "$T/out" "current 400 W  default 700 W  min 200 W  max 700 W  enforced 400 W"
"$PY" -c 'import json,sys; assert json.load(open(sys.argv[1]))["caps_w"] == [300, 400, 500]' "$T/hw.json" || fail "the simulated caps changed"; ok
[ "$(cat "$T/nvml-state")" = "$(printf '700000\n700000')" ] || fail "the double's limits changed"; ok

# ---- scripts/nvml-smoke.sh on the double: 0 with every value, 1 naming what an old driver lacks ----
printf '0\n0\n' >"$T/enforced"
PFI="$PFI" PFI_AGENT="$PFI_AGENT" AGENT_S=1 expect_status 0 sh "$SRC/scripts/nvml-smoke.sh"
contains "$T/out" "pfi_gpu_power_limit_enforced_watts{gpu=\"1\""
contains "$T/err" "every value read; nothing changed"
PFI_NVML_LIBRARY=$FAKE_NVML_OLD PFI="$PFI" PFI_AGENT="$PFI_AGENT" AGENT_S=1 expect_status 1 sh "$SRC/scripts/nvml-smoke.sh"
contains "$T/err" "GPU 1: limits_w.enforced missing"
contains "$T/err" "GPU 0: power_instant_w missing"
no_setter "nvml-smoke.sh"
printf '0\n450000\n' >"$T/enforced"

# ---- the agent: the enforced limit, out of band, logged once each way ----
start_daemon agent "$T/agent.log" "$T/port" "$PFI_AGENT" --backend nvml --listen 127.0.0.1:0 \
  --port-file "$T/port" --state-file "$T/agent-state.json" --interval 0.1 --log "$T/agent.log"
URL=http://127.0.0.1:$DPORT
wait_counter 30 "$URL" pfi_agent_samples_total 2
curl -s -m 5 "$URL/metrics" >"$T/m"
contains "$T/m" 'pfi_gpu_power_limit_enforced_watts{gpu="1",uuid="GPU-fa4e0000-0000-4000-8000-000000000001",model_name="'
# one name for the enforced limit (issue 30): one family, the other name gone
[ "$(grep -c '^# TYPE pfi_gpu.*enforced' "$T/m")" = 1 ] || fail "the enforced limit under more than one name"; ok
lacks "$T/m" "pfi_gpu_enforced_power_limit_watts"
grep -q '^pfi_gpu_power_limit_enforced_watts{gpu="1",.*} 450$' "$T/m" || fail "enforced 450"; ok
# the instant field (NVML 186; the double reads 5 W above its average): exported and in /v1/node
grep -q '^pfi_gpu_power_instant_watts{gpu="0",uuid="GPU-fa4e0000-0000-4000-8000-000000000000",.*} [0-9]' "$T/m" \
  || fail "no pfi_gpu_power_instant_watts for GPU 0"
ok
curl -s -m 5 "$URL/v1/node" | "$PY" -c 'import json,sys; g=json.load(sys.stdin)["gpus"][0]; assert abs(g["power_instant_w"] - g["power_w"] - 5) < 50, g' \
  || fail "power_instant_w in /v1/node"
ok
grep -q '^pfi_gpu_power_limit_enforced_watts{gpu="0",.*} 700$' "$T/m" || fail "enforced 700"; ok
grep -q '^pfi_gpu_out_of_band_limit{gpu="1",.*} 1$' "$T/m" || fail "GPU 1 out of band"; ok
grep -q '^pfi_gpu_out_of_band_limit{gpu="0",.*} 0$' "$T/m" || fail "GPU 0 not out of band"; ok
contains "$T/agent.log" "GPU 1 GPU-fa4e0000-0000-4000-8000-000000000001: enforced power limit 450 W is below the cap 700 W: a limit set out of band"
# the other tool lets go: logged once, metric 0
printf '0\n0\n' >"$T/enforced.new"; mv "$T/enforced.new" "$T/enforced"
wait_for 30 "the limit back at the cap" 'grep -q "enforced power limit 700 W is back at the cap 700 W" "$T/agent.log"'
wait_counter 30 "$URL" pfi_agent_samples_total 2
curl -s -m 5 "$URL/metrics" >"$T/m"
grep -q '^pfi_gpu_out_of_band_limit{gpu="1",.*} 0$' "$T/m" || fail "GPU 1 back"; ok
[ "$(grep -c 'out of band' "$T/agent.log")" -eq 1 ] || fail "logged once per transition"; ok
[ "$(grep -c 'back at the cap' "$T/agent.log")" -eq 1 ] || fail "logged once per transition"; ok
# the agent with no lease: only its start-up probe of the write path (issue
# 40), one no-op write per GPU (each limit written back unchanged), nothing else
[ "$(grep -c '^nvmlDeviceSetPowerManagementLimit$' "$T/setters")" = 2 ] && [ "$(grep -c . "$T/setters")" = 2 ] ||
  { cat "$T/setters" >&2; fail "the agent with no lease called setters beyond its start-up probe"; }; ok
[ "$(tr '\n' ' ' <"$T/nvml-state")" = "700000 700000 " ] || fail "the agent with no lease changed a limit: $(cat "$T/nvml-state")"; ok
done_ok
