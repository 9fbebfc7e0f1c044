# failover_lib.sh — controllers that fail over on etcd, for the tests
# (sourced after lib.sh and etcd_lib.sh; issue 45): each controller a, b
# configured in $T/ctl-X.json and logging to $T/ctl-X.log, the agents'
# logs $T/aN.log.

# ctl_json X PREFIX LEASE_S PORT1 PORT2: controller X's configuration in
# $T/ctl-X.json: etcd $ETCD_EPS (in its order) under PREFIX, TTL 2 s, a
# period of 1 s, agents n1 and n2 (jobs j1 and j3, tier 3) at those ports
ctl_json() {
  cat >"$T/ctl-$1.json" <<EOF
{"listen": "127.0.0.1:0", "token_file": "$T/ctok", "db": "$T/ctl-$1.db", "control_period_s": 1,
 "baseline_window_s": 3, "baseline_settle_s": 0, "lease_s": $3, "tiers": {"j1": 3, "j3": 3}, "log": "$T/ctl-$1.log",
 "failover": {"etcd": [$(echo "$ETCD_EPS" | sed 's/[^,]*/"&"/g')], "prefix": "$2", "name": "ctl-$1", "ttl_s": 2, "timeout_s": 0.5},
 "agents": [{"name": "n1", "url": "http://127.0.0.1:$4", "token_file": "$T/atok"},
            {"name": "n2", "url": "http://127.0.0.1:$5", "token_file": "$T/atok"}]}
EOF
}
# start_ctl X: controller X on port 0; sets CPID_X and URL_X
start_ctl() {
  start_daemon "controller $1" "$T/ctl-$1.log" "$T/c$1.port" "$CTL" --config "$T/ctl-$1.json" --port-file "$T/c$1.port"
  eval "CPID_$1=$DPID URL_$1=http://127.0.0.1:$DPORT"
}
# start_pair: controller a, leading, then b, following
start_pair() {
  start_ctl a
  wait_for 20 "ctl-a leads" '[ "$(role "$URL_a")" = leader ]'
  start_ctl b
  wait_for 20 "ctl-b follows" '[ "$(role "$URL_b")" = follower ]'
}
# role URL: "leader", "follower" (or "" when it does not answer)
role() { curl -s -m 2 "$1/v1/status" | sed -n 's/.*"failover":{"role":"\([a-z]*\)".*/\1/p'; }
# acap PORT: GPU 0's cap at the agent on that port; capped PORT: below 700 W
acap() { curl -s -m 2 "http://127.0.0.1:$1/metrics" | awk -F'[ {}]' '$1=="pfi_gpu_power_cap_watts" && index($0, "gpu=\"0\""){print $NF}'; }
capped() { c=$(acap "$1"); [ -n "$c" ] && awk -v c="$c" 'BEGIN{exit !(c < 700)}'; }
both_capped() { capped "$P1" && capped "$P2"; }
# agents_logs_ok WHEN N...: from agent N's own log, the admitted generations
# never go back, and none of its leases lapsed after its line $L<N> (WHEN
# names that span in the failure)
agents_logs_ok() {
  al_when=$1; shift
  for a in "$@"; do
    grep -o "lease granted: controller [^ ]* generation [0-9]*\|lease taken over: controller [^ ]* generation [0-9]*" "$T/a$a.log" |
      awk '{print $NF}' >"$T/gens$a"
    [ -s "$T/gens$a" ] || fail "agent $a admitted nothing"
    awk 'NR > 1 && $1 < prev {bad = 1} {prev = $1} END {exit bad}' "$T/gens$a" ||
      { cat "$T/gens$a" >&2; fail "agent $a admitted a generation below an earlier one"; }; ok
    eval "from=\$L$a"
    tail -n +"$((from + 1))" "$T/a$a.log" | grep -q "lease of controller .* expired" &&
      { show_logs; fail "agent $a's lease lapsed $al_when"; }; ok
  done
}
