#!/bin/sh
# test_agent_nvml_errors.sh — NVML answers that make one GPU unusable until
# something is done (issue 40): RESET_REQUIRED (16), OPERATING_SYSTEM (17:
# the OS blocked the call, e.g. the device outside the agent's cgroup) and
# TIMEOUT (10: a hung call) each mark that GPU unavailable with its own
# state, and three samples in a row answered UNKNOWN (999) mark it
# unavailable too, as GPU_IS_LOST did alone before (the others were read as a failed
# sample, and the GPU stayed in every PUT); the healthy GPU is still
# sampled and capped, and a PUT lists the others under "skipped". After a
# driver upgrade without a reboot nvmlInit answers LIB_RM_VERSION_MISMATCH
# (18): the error names the remedy.
. "$SRC/tests/cli/lib.sh"
: "${PFI_AGENT:?}" "${FAKE_NVML:?}" "${PFI:?}"
new_token "$T/token"
export PFI_NVML_LIBRARY=$FAKE_NVML FAKE_NVML_GPUS=5 FAKE_NVML_STATE=$T/nvml FAKE_NVML_FAULTS=$T/faults
: >"$T/faults"
start_daemon agent "$T/agent.log" "$T/port" "$PFI_AGENT" --backend nvml --listen 127.0.0.1:0 --port-file "$T/port" \
  --token-file "$T/token" --state-file "$T/state.json" --interval 0.1 --log "$T/agent.log"
URL=http://127.0.0.1:$DPORT
wait_counter 30 "$URL" pfi_agent_samples_total 2
printf '1 16 all\n2 17 all\n3 10 all\n4 999 nvmlDeviceGetPowerUsage\n' >"$T/faults"
for gs in 1:reset_required 2:os_blocked 3:timeout; do
  g=${gs%%:*} st=${gs#*:}
  wait_for 30 "GPU $g marked $st" 'curl -s -m 5 "$URL/metrics" | grep -q "^pfi_gpu_up{gpu=\"$g\".*state=\"$st\"} 0"'
  ok
done
# GPU 4 answers UNKNOWN to its power read: three samples in a row make it
# unavailable (no ceiling, null in /v1/control), as the others
wait_for 30 "GPU 4 unavailable after three UNKNOWN samples" \
  '[ "$(curl -s -m 5 "$URL/v1/control" | grep -o "\[null,null,null,null,\"[a-z_]*\"\]" | wc -l)" -eq 4 ]'
contains "$T/agent.log" "GPU requires reset"
contains "$T/agent.log" "GPU access blocked by the operating system"
curl -s -m 5 "$URL/metrics" | grep -q '^pfi_gpu_up{gpu="0".*state="ok"} 1' || fail "the healthy GPU 0 is not up"; ok
CODE=$(curl -s -m 10 -o "$T/body" -w '%{http_code}' -X PUT -H "Authorization: Bearer $(cat "$T/token")" \
  -H 'Content-Type: application/json' --data-binary \
  '{"lease_s":30,"controller":"c","generation":1,"gpus":[{"index":0,"cap_w":400},{"index":1,"cap_w":400}]}' "$URL/v1/caps")
[ "$CODE" = 200 ] || { cat "$T/body" >&2; fail "PUT: HTTP $CODE"; }; ok
contains "$T/body" '"state":"reset_required"'
contains "$T/body" '"state":"os_blocked"'
contains "$T/body" '"state":"timeout"'
[ "$(sed -n 1p "$T/nvml")" = 400000 ] || fail "the healthy GPU 0 was not capped"; ok
[ "$(sed -n 2p "$T/nvml")" = 700000 ] || fail "GPU 1 (reset required) was capped"; ok

# after a driver upgrade without a reboot: the remedy in the one error line
FAKE_NVML_INIT_FAIL=18 expect_error 1 "Driver/library version mismatch (NVML error 18): the NVML library and the loaded kernel driver are different versions" "$PFI" gpu info
contains "$T/err" "stop pfi-agent before a driver upgrade"
done_ok
