#!/bin/sh
# test_agent_dcgm.sh — pfi-agent with dcgm-exporter as shipped (issue 27 c;
# docs/agent.md, "dcgm-exporter as shipped"), on the NVML test double: a
# fixture serving dcgm-exporter's text format with its default profiling
# counters (graphics engine, tensor pipe, DRAM active; SM active and
# occupancy, NVLink and PCIe bytes absent, as its default-counters.csv
# comments them out or lacks them) and a MIG instance's series
# (GPU_I_PROFILE, GPU_I_ID) beside the whole GPU's. Checked: the agent
# says once which fields it cannot get, names them, and points to the
# lines to add; an instance's series never overwrites the GPU's value; and
# --export-dcgm serves the current field name (DCGM_FI_DEV_CLOCKS_EVENT_REASONS,
# not the throttle name DCGM 3.3 retired) with current dcgm-exporter labels
# (gpu, UUID, pci_bus_id, device, modelName, hostname: current dcgm-exporter's, where older releases wrote Hostname).
. "$SRC/tests/cli/lib.sh"
: "${PFI_AGENT:?}" "${FAKE_NVML:?}"
command -v curl >/dev/null || fail "curl is needed (scripts/bootstrap.sh test)"
kill_daemons_on_exit
export PFI_NVML_LIBRARY=$FAKE_NVML FAKE_NVML_GPUS=2 FAKE_NVML_STATE=$T/nvml
U0=GPU-fa4e0000-0000-4000-8000-000000000000
U1=GPU-fa4e0000-0000-4000-8000-000000000001
cat >"$T/dcgm.txt" <<EOF
# HELP DCGM_FI_PROF_GR_ENGINE_ACTIVE Ratio of time the graphics engine is active.
# TYPE DCGM_FI_PROF_GR_ENGINE_ACTIVE gauge
DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu="0",UUID="$U0",pci_bus_id="00000000:18:00.0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="n1"} 0.8
DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu="1",UUID="$U1",pci_bus_id="00000000:28:00.0",device="nvidia1",modelName="NVIDIA H100 80GB HBM3",Hostname="n1"} 0.7
# HELP DCGM_FI_PROF_DRAM_ACTIVE Ratio of cycles the device memory interface is active sending or receiving data.
# TYPE DCGM_FI_PROF_DRAM_ACTIVE gauge
DCGM_FI_PROF_DRAM_ACTIVE{gpu="0",UUID="$U0",pci_bus_id="00000000:18:00.0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="n1"} 0.4
DCGM_FI_PROF_DRAM_ACTIVE{gpu="0",UUID="$U0",pci_bus_id="00000000:18:00.0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="n1",GPU_I_PROFILE="1g.10gb",GPU_I_ID="3"} 0.9
DCGM_FI_PROF_DRAM_ACTIVE{gpu="1",UUID="$U1",pci_bus_id="00000000:28:00.0",device="nvidia1",modelName="NVIDIA H100 80GB HBM3",Hostname="n1"} 0.3
# HELP DCGM_FI_PROF_PIPE_TENSOR_ACTIVE Ratio of cycles the tensor (HMMA) pipe is active.
# TYPE DCGM_FI_PROF_PIPE_TENSOR_ACTIVE gauge
DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{gpu="0",UUID="$U0",pci_bus_id="00000000:18:00.0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="n1"} 0.5
EOF
cat >"$T/serve.py" <<'PY'
import os, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
body = open(sys.argv[1], "rb").read()
class H(BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
s = ThreadingHTTPServer(("127.0.0.1", 0), H)
with open(sys.argv[2] + ".tmp", "w") as f: f.write(str(s.server_address[1]))
os.rename(sys.argv[2] + ".tmp", sys.argv[2])
s.serve_forever()
PY
start_daemon "dcgm-exporter fixture" "$T/dcgm.log" "$T/dcgm.port" /usr/bin/python3 "$T/serve.py" "$T/dcgm.txt" "$T/dcgm.port"
DP=$DPORT
start_daemon agent "$T/agent.log" "$T/port" "$PFI_AGENT" --backend nvml --listen 127.0.0.1:0 --port-file "$T/port" \
  --state-file "$T/state.json" --interval 0.2 --dcgm-url "http://127.0.0.1:$DP/metrics" --export-dcgm --log "$T/agent.log"
URL=http://127.0.0.1:$DPORT
wait_counter 10 "$URL" pfi_agent_samples_total 3
# the fields it cannot get: named once, with where the lines to add are
contains "$T/agent.log" "serves no DCGM_FI_PROF_SM_ACTIVE, DCGM_FI_PROF_SM_OCCUPANCY, DCGM_FI_PROF_NVLINK_TX_BYTES"
contains "$T/agent.log" "dcgm-exporter as shipped"
lacks "$T/agent.log" "serves no DCGM_FI_PROF_GR_ENGINE_ACTIVE"
[ "$(grep -c 'serves no' "$T/agent.log")" = 1 ] || fail "the missing fields logged more than once"; ok
curl -s -m 5 "$URL/metrics" >"$T/m"
# the whole GPU's 0.4, not the MIG instance's 0.9 that came after it
grep -q "^pfi_gpu_dram_active_ratio{gpu=\"0\",uuid=\"$U0\",.*} 0.4$" "$T/m" || { grep dram "$T/m" >&2; fail "GPU 0's DRAM active is not the whole GPU's"; }; ok
grep -q "^pfi_gpu_graphics_engine_active_ratio{gpu=\"1\",.*} 0.7$" "$T/m" || fail "GPU 1's graphics engine active"; ok
# --export-dcgm: current field names and labels
grep -q "^DCGM_FI_DEV_CLOCKS_EVENT_REASONS{gpu=\"0\",UUID=\"$U0\",pci_bus_id=\"00000000:18:00.0\",device=\"nvidia0\",modelName=\"NVIDIA H100 80GB HBM3 (test double)\",hostname=\"" "$T/m" \
  || { grep CLOCK "$T/m" >&2; fail "no DCGM_FI_DEV_CLOCKS_EVENT_REASONS with dcgm-exporter's labels"; }; ok
lacks "$T/m" "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"
# (promtool's linter flags dcgm-exporter's own camelCase labels, modelName
# and UUID: those are the names to match, so it is not run here)

# a dcgm-exporter that does not answer: said once when it goes down, not at
# every sampling round (issue 40: it was one warning a second)
start_daemon agent2 "$T/agent2.log" "$T/port2" "$PFI_AGENT" --backend nvml --listen 127.0.0.1:0 --port-file "$T/port2" \
  --state-file "$T/state2.json" --interval 0.05 --log "$T/agent2.log" --dcgm-url http://127.0.0.1:1/metrics
wait_counter 30 "http://127.0.0.1:$DPORT" pfi_agent_samples_total 10
n=$(grep -c "warning: dcgm-exporter http://127.0.0.1:1/metrics" "$T/agent2.log")
[ "$n" -eq 1 ] || { cat "$T/agent2.log" >&2; fail "a down dcgm-exporter logged $n times over 10 sampling rounds"; }; ok
done_ok
