#!/bin/sh
# test_store_backends.sh — the authoritative state survives a controller's
# restart on both store backends (issue 45: "the store's tests run against
# both backends"; src/daemon/controller/ctl_store.h): SQLite alone (the
# default) and etcd (one member; the controller alone in its failover
# group). The same script runs on each:
#   - an operator's event now (30% cut) and another one later, cancelled;
#     the GPUs capped; the agent's admitted generation noted;
#   - the controller stopped (SIGTERM), then started again: with SQLite on
#     the same database; with etcd on an EMPTY one (a new host: everything
#     it knows comes from the store);
#   - after the restart: the running event is there with its target and
#     who created it, the cancelled one with who cancelled it, the GPUs
#     capped again, and the agent's admitted generation above the one
#     before (never back: a 409 would keep the caps off).
# With etcd the committed caps are pushed first ("the last committed caps
# pushed to 1 agents").
. "$SRC/tests/cli/lib.sh"
. "$SRC/tests/cli/etcd_lib.sh"
: "${PFI_AGENT:?}"
CTL=${PFI_CONTROLLER_BIN:-$(dirname "$PFI_AGENT")/pfi-controller}
kill_daemons_on_exit "${KEEP:+cp -r \"\$T\" \"\$KEEP\"}"
new_token "$T/atok" "$T/ctok"
CTOK=$(cat "$T/ctok")
etcd_cluster 1

acap() { curl -s -m 2 "http://127.0.0.1:$AP/metrics" | awk -F'[ {}]' '$1=="pfi_gpu_power_cap_watts" && index($0, "gpu=\"0\""){print $NF}'; }
agen() { curl -s -m 2 "http://127.0.0.1:$AP/metrics" | awk '$1 == "pfi_lease_generation" {print $2}'; }
field() { sed -n "s/.*\"$1\":\"\\{0,1\\}\\([^\",}]*\\).*/\\1/p" "$2"; }

for B in sqlite etcd; do
  mkdir -p "$T/$B"
  # each backend its own agent (no lease held from the other's controller)
  start_daemon "agent ($B)" "$T/$B/a.log" "$T/$B/a.port" "$PFI_AGENT" \
    --backend "sim:gpus=4,job=j1:moe-ft-qwen30ba3b-x8@0-3,load=0,steplogs=$T/$B,state=$T/$B/hw.json" --listen 127.0.0.1:0 \
    --port-file "$T/$B/a.port" --token-file "$T/atok" --state-file "$T/$B/a.state" --interval 0.5 --log "$T/$B/a.log"
  AP=$DPORT
  FO=
  [ $B = etcd ] && FO="\"failover\": {\"etcd\": [\"$ETCD_EPS\"], \"prefix\": \"/pfi/backends/\", \"name\": \"ctl-x\", \"ttl_s\": 2, \"timeout_s\": 0.5},"
  cat >"$T/$B/ctl.json" <<EOF
{"listen": "127.0.0.1:0", "token_file": "$T/ctok", "db": "$T/$B/ctl.db", "control_period_s": 1,
 "baseline_window_s": 3, "baseline_settle_s": 0, "lease_s": 15, "tiers": {"j1": 3}, "log": "$T/$B/ctl.log", $FO
 "agents": [{"name": "n1", "url": "http://127.0.0.1:$AP", "token_file": "$T/atok"}]}
EOF
  start_daemon "controller ($B)" "$T/$B/ctl.log" "$T/$B/c.port" "$CTL" --config "$T/$B/ctl.json" --port-file "$T/$B/c.port"
  CP=$DPID; URL=http://127.0.0.1:$DPORT
  [ $B = etcd ] && wait_for 20 "$B: the controller leads" 'curl -s -m 2 "$URL/v1/status" | grep -q "\"role\":\"leader\""'
  S=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  L=$(date -u -d '+2 hours' +%Y-%m-%dT%H:%M:%SZ)
  for ev in "{\"id\":\"now-$B\",\"start\":\"$S\",\"duration_s\":36000,\"reduction_pct\":30}" \
    "{\"id\":\"later-$B\",\"start\":\"$L\",\"duration_s\":600,\"reduction_pct\":10}"; do
    CODE=$(curl -s -o "$T/body" -w '%{http_code}' -X POST -H "Authorization: Bearer $CTOK" --data-binary "$ev" "$URL/v1/events")
    [ "$CODE" = 201 ] || { cat "$T/body" >&2; fail "$B: event: HTTP $CODE"; }; ok
  done
  CODE=$(curl -s -o "$T/body" -w '%{http_code}' -X DELETE -H "Authorization: Bearer $CTOK" "$URL/v1/events/later-$B")
  [ "$CODE" = 200 ] || { cat "$T/body" >&2; fail "$B: cancel: HTTP $CODE"; }; ok
  wait_for 30 "$B: the GPUs capped" 'num "$(acap)" "<" 700'
  curl -s -m 2 "$URL/v1/events/now-$B" >"$T/$B/now1"; curl -s -m 2 "$URL/v1/events/later-$B" >"$T/$B/later1"
  wait_for 10 "$B: the baseline and target committed" '[ -n "$(field target_w "$T/$B/now1")" ] || { curl -s -m 2 "$URL/v1/events/now-$B" >"$T/$B/now1"; false; }'
  G1=$(agen)
  num "$G1" ">" 0 || fail "$B: the agent's generation: '$G1'"; ok
  stop_daemon "$CP" TERM
  # etcd: a new host, its SQLite empty (what it knows comes from the store)
  [ $B = etcd ] && rm -f "$T/$B/ctl.db" "$T/$B/ctl.db-wal" "$T/$B/ctl.db-shm"
  start_daemon "controller ($B, again)" "$T/$B/ctl.log" "$T/$B/c.port" "$CTL" --config "$T/$B/ctl.json" --port-file "$T/$B/c.port"
  URL=http://127.0.0.1:$DPORT
  wait_for 30 "$B: the event again after the restart" 'curl -s -m 2 "$URL/v1/events/now-$B" | grep -q "\"status\":\"active\""'
  curl -s -m 2 "$URL/v1/events/now-$B" >"$T/$B/now2"; curl -s -m 2 "$URL/v1/events/later-$B" >"$T/$B/later2"
  for f in target_w created_by; do
    [ -n "$(field $f "$T/$B/now1")" ] && [ "$(field $f "$T/$B/now1")" = "$(field $f "$T/$B/now2")" ] ||
      fail "$B: now-$B's $f: '$(field $f "$T/$B/now1")' before the restart, '$(field $f "$T/$B/now2")' after"; ok
  done
  contains "$T/$B/later2" '"status":"cancelled"'
  [ -n "$(field cancelled_by "$T/$B/later1")" ] && [ "$(field cancelled_by "$T/$B/later1")" = "$(field cancelled_by "$T/$B/later2")" ] ||
    fail "$B: later-$B's cancelled_by: '$(field cancelled_by "$T/$B/later1")', then '$(field cancelled_by "$T/$B/later2")'"; ok
  wait_for 20 "$B: the agent admits the restarted controller's push" 'num "$(agen)" ">" "$G1"'
  num "$(acap)" "<" 700 || fail "$B: the GPUs not capped after the restart"; ok
  [ $B = etcd ] && contains "$T/$B/ctl.log" "the last committed caps pushed to 1 agents"
  echo "measured: $B: the generation $G1 before the restart, $(agen) after; now-$B's target $(field target_w "$T/$B/now2") W"
  stop_daemon "$DPID" TERM
done
done_ok
