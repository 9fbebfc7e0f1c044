#!/bin/sh
# test_agent_parallel.sh — pfi-agent applies a PUT's caps to all of its GPUs
# at once (issue 19 item 2) and answers after they are applied: on the NVML
# test double with 8 GPUs whose limit setter takes 200 ms, all 8 setters are
# in flight together (FAKE_NVML_SETTER_MAX_FILE) and every limit is in the
# device's file when the 200 arrives; when one GPU refuses, the request fails
# (503, naming it), the 7 that took their cap are put back, and the log has
# each GPU's line. No elapsed time is asserted.
. "$SRC/tests/cli/lib.sh"
: "${PFI_AGENT:?}" "${FAKE_NVML:?}"
command -v curl >/dev/null || fail "curl is needed (scripts/bootstrap.sh test)"
kill_daemons_on_exit
new_token "$T/token"
TOKEN=$(cat "$T/token")
export PFI_NVML_LIBRARY=$FAKE_NVML FAKE_NVML_GPUS=8 FAKE_NVML_STATE=$T/nvml FAKE_NVML_SET_DELAY_MS=200
PID=

start_agent() { # NAME
  start_daemon "$1" "$T/$1.log" "$T/port" "$PFI_AGENT" --log-level debug --backend nvml --listen 127.0.0.1:0 --port-file "$T/port" \
    --token-file "$T/token" --state-file "$T/state.json" --interval 0.2 --log "$T/$1.log"
  PID=$DPID; URL=http://127.0.0.1:$DPORT
}
put_all() { # CAP_W GENERATION -> $CODE, body in $T/body
  g=; for i in 0 1 2 3 4 5 6 7; do g="$g${g:+,}{\"index\":$i,\"cap_w\":$1}"; done
  CODE=$(curl -s -m 30 -o "$T/body" -w '%{http_code}' -X PUT -H "Authorization: Bearer $TOKEN" \
    -H 'Content-Type: application/json' --data-binary "{\"lease_s\":60,\"controller\":\"c\",\"generation\":$2,\"gpus\":[$g]}" "$URL/v1/caps")
}
# the device's limits (mW), one line per GPU, as one line: "400000 400000 ..."
limits() { tr '\n' ' ' <"$T/nvml" | sed 's/ $//'; }
all_of() { echo "$1 $1 $1 $1 $1 $1 $1 $1"; }

printf '700000\n700000\n700000\n700000\n700000\n700000\n700000\n700000\n' >"$T/nvml"
export FAKE_NVML_SETTER_MAX_FILE=$T/max1
start_agent agent
put_all 400 1
[ "$CODE" = 200 ] || { cat "$T/body" >&2; fail "HTTP $CODE, expected 200"; }; ok
# answered after every cap is applied: all eight are in the device's file now
[ "$(limits)" = "$(all_of 400000)" ] || fail "limits when the PUT answered: $(limits)"; ok
[ "$(cat "$T/max1")" = 8 ] || fail "$(cat "$T/max1") setters in flight at once, expected 8"; ok
n=$(grep -c 'cap 700 -> 400 W (controller c, generation 1)' "$T/agent.log"); [ "$n" -eq 8 ] || fail "$n cap lines"; ok
stop_daemon $PID
[ "$(limits)" = "$(all_of 700000)" ] || fail "not restored on SIGTERM: $(limits)"; ok

# ---- GPU 5 refuses: all or nothing ----
export FAKE_NVML_SET_FAIL=5 FAKE_NVML_SETTER_MAX_FILE=$T/max2
start_agent failing
put_all 300 2
[ "$CODE" = 503 ] || { cat "$T/body" >&2; fail "HTTP $CODE, expected 503"; }; ok
contains "$T/body" 'GPU 5: NVML: GPU 5: nvmlDeviceSetPowerManagementLimit: Unknown Error'
[ "$(limits)" = "$(all_of 700000)" ] || fail "the refused PUT left limits changed: $(limits)"; ok
[ "$(cat "$T/max2")" = 8 ] || fail "$(cat "$T/max2") setters in flight at once, expected 8"; ok
contains "$T/failing.log" 'error: GPU 5: setting 300 W failed'
n=$(grep -c 'cap 700 -> 300 W (controller c, generation 2)' "$T/failing.log"); [ "$n" -eq 7 ] || fail "$n cap lines, expected 7"; ok
lacks "$T/failing.log" 'undo failed'
curl -s -m 5 "$URL/v1/node" >"$T/node"
contains "$T/node" '"lease":null' # the refused PUT granted no lease
stop_daemon $PID
done_ok
