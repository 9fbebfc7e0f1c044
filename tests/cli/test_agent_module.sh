#!/bin/sh
# test_agent_module.sh — GPUs whose power is governed at module scope
# (issue 40): on GH200 the GPU-scope power fields are missing and the
# module's power and energy include the Grace CPU; GB200/GB300 have module
# power limits the GPU-scope setter does not touch. The NVML double's
# scoped field values (FAKE_NVML_MODULE: GH200-like, FAKE_NVML_MODULE_LIMITS:
# GB200-like) beside an ordinary GPU: the agent says once at start that it
# does not cap those two, names their scope in /v1/node, exports module
# power apart (pfi_gpu_module_power_watts, the GPU's power + 150 W of CPU
# in the double), leaves the GH200-like module's energy out (it is not the
# GPU's), gives them no ceiling in /v1/control, and a PUT skips them
# ("module_scope") while capping the ordinary GPU.
. "$SRC/tests/cli/lib.sh"
: "${PFI_AGENT:?}" "${FAKE_NVML:?}"
new_token "$T/token"
export PFI_NVML_LIBRARY=$FAKE_NVML FAKE_NVML_GPUS=3 FAKE_NVML_STATE=$T/nvml FAKE_NVML_MODULE=1 \
  FAKE_NVML_MODULE_LIMITS=2
start_daemon agent "$T/agent.log" "$T/port" "$PFI_AGENT" --backend nvml --listen 127.0.0.1:0 --port-file "$T/port" \
  --token-file "$T/token" --state-file "$T/state.json" --interval 0.1 --log "$T/agent.log"
URL=http://127.0.0.1:$DPORT
wait_counter 30 "$URL" pfi_agent_samples_total 2
contains "$T/agent.log" "GPU 1 GPU-fa4e0000-0000-4000-8000-000000000001: its power is governed at module scope (GPU-scope power fields missing: a GH200-like module"
contains "$T/agent.log" "GPU 2 GPU-fa4e0000-0000-4000-8000-000000000002: its power is governed at module scope (module power limits exist"
lacks "$T/agent.log" "GPU 0 GPU-fa4e0000-0000-4000-8000-000000000000: its power is governed at module scope"
curl -s -m 5 "$URL/v1/node" >"$T/node"
contains "$T/node" '"power_scope":"module"'
contains "$T/node" '"power_scope":"module_limits"'
curl -s -m 5 "$URL/metrics" >"$T/m"
grep -q '^pfi_gpu_module_power_watts{gpu="1",' "$T/m" && grep -q '^pfi_gpu_module_power_watts{gpu="2",' "$T/m" ||
  { grep module "$T/m" >&2; fail "module power not exported for GPUs 1 and 2"; }; ok
grep -q '^pfi_gpu_module_power_watts{gpu="0",' "$T/m" && fail "module power exported for the ordinary GPU 0"; ok
# the module's power is the GPU's plus the CPU's (150 W in the double)
awk '/^pfi_gpu_power_watts\{gpu="1",/ {g = $NF} /^pfi_gpu_module_power_watts\{gpu="1",/ {m = $NF}
  END {exit !(m - g > 100 && m - g < 200)}' "$T/m" || fail "GPU 1's module power is not its power plus the CPU's"; ok
grep -q '^pfi_gpu_energy_joules_total{gpu="1",' "$T/m" && fail "the GH200-like module's energy is exported as the GPU's"; ok
grep -q '^pfi_gpu_energy_joules_total{gpu="0",' "$T/m" || fail "GPU 0's energy is missing"; ok
curl -s -m 5 "$URL/v1/control" | grep -q '"gpus":\[\[[^]]*[0-9]\],\[[^]]*,null,"module_scope"\],\[[^]]*,null,"module_scope"\]\]' ||
  { curl -s -m 5 "$URL/v1/control" >&2; fail "/v1/control: a module-scope GPU has a ceiling"; }; ok
CODE=$(curl -s -m 10 -o "$T/body" -w '%{http_code}' -X PUT -H "Authorization: Bearer $(cat "$T/token")" \
  -H 'Content-Type: application/json' --data-binary \
  '{"lease_s":30,"controller":"c","generation":1,"gpus":[{"index":0,"cap_w":400},{"index":1,"cap_w":400},{"index":2,"cap_w":400}]}' "$URL/v1/caps")
[ "$CODE" = 200 ] || { cat "$T/body" >&2; fail "PUT: HTTP $CODE"; }; ok
[ "$(grep -o '"state":"module_scope"' "$T/body" | wc -l)" -eq 2 ] || { cat "$T/body" >&2; fail "the module-scope GPUs are not skipped"; }; ok
[ "$(tr '\n' ' ' <"$T/nvml")" = "400000 700000 700000 " ] || fail "limits after the PUT: $(cat "$T/nvml")"; ok
done_ok
