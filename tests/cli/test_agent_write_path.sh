#!/bin/sh
# test_agent_write_path.sh — pfi-agent proves its write path at start
# (issue 40 c): each usable GPU's limit is written back unchanged once, so a
# missing privilege shows at start-up, not as a 503 on the first grid event.
# The NVML double's privilege model (FAKE_NVML_CAPS=1: the setter needs
# CAP_SYS_ADMIN in the caller, as the driver's administrator check does)
# with the agent started under `setpriv --bounding-set=-sys_admin` (a
# container or a unit without the capability): the start-up log names the
# refusal, the capabilities the agent has and the unit's device policy;
# pfi_agent_write_path_ok is 0; /v1/node says "refused" with the error and
# marks each GPU; no limit changes. With the capability: "ok", 1, one log
# line. --read-only: no probe, no setter called, "read-only", no metric.
. "$SRC/tests/cli/lib.sh"
: "${PFI_AGENT:?}" "${FAKE_NVML:?}"
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (setpriv --bounding-set)"; exit 77; }
command -v setpriv >/dev/null || fail "setpriv is not installed (util-linux)"

export PFI_NVML_LIBRARY=$FAKE_NVML FAKE_NVML_GPUS=2 FAKE_NVML_STATE=$T/nvml FAKE_NVML_CAPS=1 \
  FAKE_NVML_SETTER_LOG=$T/setters
printf '450000\n700000\n' >"$T/nvml"
start_agent() { # [wrapper...] -- [options...]
  rm -f "$T/agent.log" "$T/setters"
  w=""; while [ "$1" != "--" ]; do w="$w $1"; shift; done; shift
  # shellcheck disable=SC2086
  start_daemon agent "$T/agent.log" "$T/port" $w "$PFI_AGENT" --backend nvml --listen 127.0.0.1:0 --port-file "$T/port" \
    --state-file "$T/state.json" --interval 0.2 --log "$T/agent.log" "$@"
  PID=$DPID; AURL=http://127.0.0.1:$DPORT
}

# ---- without CAP_SYS_ADMIN: refused, said at start, exported ----
start_agent setpriv --bounding-set=-sys_admin --
contains "$T/agent.log" "error: write path refused on 2 of 2 GPUs (GPU 0:"
contains "$T/agent.log" "needs CAP_SYS_ADMIN (the agent has:"
contains "$T/agent.log" "DeviceAllow=char-nvidia*"
[ "$(metric "$AURL" pfi_agent_write_path_ok)" = 0 ] || fail "pfi_agent_write_path_ok is not 0"; ok
curl -s -m 5 "$AURL/v1/node" >"$T/node"
contains "$T/node" '"write_path":"refused"'
contains "$T/node" '"write_path_error":"GPU 0:'
[ "$(grep -o '"write_refused":true' "$T/node" | wc -l)" -eq 2 ] || fail "/v1/node does not mark both GPUs"; ok
[ "$(cat "$T/nvml" | tr '\n' ' ')" = "450000 700000 " ] || fail "a refused probe changed a limit: $(cat "$T/nvml")"; ok
stop_daemon "$PID" TERM

# ---- with it: every limit written back unchanged ----
start_agent --
contains "$T/agent.log" "write path: each GPU's limit written back unchanged (2 GPUs)"
[ "$(grep -c nvmlDeviceSetPowerManagementLimit "$T/setters")" -eq 2 ] || fail "the probe did not write each GPU once"; ok
[ "$(cat "$T/nvml" | tr '\n' ' ')" = "450000 700000 " ] || fail "the probe changed a limit: $(cat "$T/nvml")"; ok
[ "$(metric "$AURL" pfi_agent_write_path_ok)" = 1 ] || fail "pfi_agent_write_path_ok is not 1"; ok
curl -s -m 5 "$AURL/v1/node" | grep -q '"write_path":"ok"' || fail "/v1/node: write_path is not ok"; ok
stop_daemon "$PID" TERM

# ---- --read-only: nothing written, nothing claimed ----
start_agent -- --read-only
[ ! -e "$T/setters" ] || { cat "$T/setters" >&2; fail "a read-only agent called a setter"; }; ok
curl -s -m 5 "$AURL/v1/node" | grep -q '"write_path":"read-only"' || fail "/v1/node: write_path is not read-only"; ok
curl -s -m 5 "$AURL/metrics" | grep -q '^pfi_agent_write_path_ok' && fail "a read-only agent exports pfi_agent_write_path_ok"; ok
stop_daemon "$PID" TERM
done_ok
