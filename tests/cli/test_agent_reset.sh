#!/bin/sh
# test_agent_reset.sh — a GPU reset on a SKU whose default limit is below
# its maximum (issue 40 c). The NVML double as a B200-like part
# (FAKE_NVML_MAX_W=1000, FAKE_NVML_DEFAULT_W=600; DGX B200 ships at 700 of
# 1000 W) with the admin's limit at 1000 W and pfi's cap at 800 W:
#  - a reset (FAKE_NVML_RESETS: the limit back to the default, the energy
#    counter from 0) drops the limit to 600 W, below pfi's cap. Before, the
#    agent took it for an administrator's lowering and adopted 600 W as the
#    baseline for good (the admin's 1000 W lost). Now the counter going back
#    corroborates a reset: pfi's cap is set again under the live lease, and
#    the baseline stays 1000 W;
#  - the same lowering to the default without a reset (the limit written,
#    the counter going on) is an administrator's, adopted as before. The
#    double's energy counter integrates power and never goes back when a
#    limit changes (its power drops here), so it cannot fake a reset.
. "$SRC/tests/cli/lib.sh"
: "${PFI_AGENT:?}" "${FAKE_NVML:?}"
export PFI_NVML_LIBRARY=$FAKE_NVML FAKE_NVML_GPUS=2 FAKE_NVML_STATE=$T/nvml FAKE_NVML_MAX_W=1000 \
  FAKE_NVML_DEFAULT_W=600 FAKE_NVML_RESETS=$T/resets
printf '1000000\n1000000\n' >"$T/nvml" # the admin's limit: the maximum
printf '0 0\n1 0\n' >"$T/resets"
new_token "$T/token"
start_daemon agent "$T/agent.log" "$T/port" "$PFI_AGENT" --backend nvml --listen 127.0.0.1:0 --port-file "$T/port" \
  --token-file "$T/token" --state-file "$T/state.json" --interval 0.1 --log "$T/agent.log"
URL=http://127.0.0.1:$DPORT
limit() { sed -n "$(($1 + 1))p" "$T/nvml"; }
put() {
  CODE=$(curl -s -m 10 -o "$T/body" -w '%{http_code}' -X PUT -H "Authorization: Bearer $(cat "$T/token")" \
    -H 'Content-Type: application/json' --data-binary "$1" "$URL/v1/caps")
  [ "$CODE" = 200 ] || { cat "$T/body" >&2; fail "PUT: HTTP $CODE"; }; ok
}
put '{"lease_s":120,"controller":"c","generation":1,"gpus":[{"index":0,"cap_w":800},{"index":1,"cap_w":800}]}'
[ "$(limit 0)" = 800000 ] && [ "$(limit 1)" = 800000 ] || fail "caps not set: $(limit 0) $(limit 1)"; ok
wait_counter 30 "$URL" pfi_agent_samples_total 3

# GPU 0 is reset: its limit falls to the default, below pfi's cap; pfi's cap comes back
printf '0 1\n1 0\n' >"$T/resets"
wait_for 30 "the reset recognised" 'grep -q "GPU 0 .*its limit fell to its default 600 W after a GPU reset (its energy counter went back): pfi.s cap 800 W set again" "$T/agent.log"'
wait_for 30 "GPU 0 back at pfi's cap" '[ "$(limit 0)" = 800000 ]'
lacks "$T/agent.log" "GPU 0 GPU-fa4e0000-0000-4000-8000-000000000000: limit lowered out of band"
grep -q '"baseline_w": 1000' "$T/state.json" || { cat "$T/state.json" >&2; fail "the admin's 1000 W baseline was lost"; }; ok
curl -s -m 5 "$URL/metrics" | grep -q "^pfi_gpu_cap_drift_total{kind=\"reset\",hostname=\"[^\"]*\"} 1\$" || fail "the reset is not counted"; ok

# GPU 1 lowered to the default by an administrator (no reset): adopted, as before
sed -i '2s/.*/600000/' "$T/nvml"
wait_for 30 "the admin's lowering adopted" 'grep -q "GPU 1 .*limit lowered out of band to 600 W, below pfi.s cap 800 W: adopted" "$T/agent.log"'
lacks "$T/agent.log" "GPU 1 GPU-fa4e0000-0000-4000-8000-000000000001: its limit fell to its default"
[ "$(limit 1)" = 600000 ] || fail "the admin's 600 W on GPU 1 was overwritten with $(limit 1)"; ok
done_ok
