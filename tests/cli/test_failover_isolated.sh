#!/bin/sh
# test_failover_isolated.sh — an etcd member cut off from the others but not
# from the controllers (issue 45: "an isolated minority etcd member";
# docs/controller.md, "Failover on etcd"). Three etcd members: m1 in a
# network namespace of its own, joined to the test's by a veth pair, m2 and
# m3 beside the controllers; two agents on simulated GPUs; controllers ctl-a
# and ctl-b, both with m1 first in their list of endpoints (each uses its
# first until a call to it fails). At clock scale 1.
#   - m1 is made etcd's leader (etcdctl move-leader), then isolated: policy
#     routing rules refuse the peer ports between m1 and the others (each way),
#     while the controllers still reach m1's client port. m1 still answers a
#     serializable read, and a linearizable one no longer (it has no quorum):
#     isolated, not dead;
#   - m2 and m3 elect a leader; the controllers' calls to m1 time out and they
#     go on through m2 or m3: within the agents' lease a controller renews
#     both agents' leases, one controller says it leads, the GPUs stay capped
#     throughout (sampled every 0.1 s), and from the agents' own logs no lease
#     lapsed and the admitted generations never went back;
#   - the rules removed, m1 rejoins (a linearizable read through it answers)
#     and one controller leads.
# Runs in network and mount namespaces of its own (deploy_lib.sh), as root.
. "$SRC/tests/cli/deploy_lib.sh"
. "$SRC/tests/cli/lib.sh"
: "${PFI_AGENT:?}"
CTL=${PFI_CONTROLLER_BIN:-$(dirname "$PFI_AGENT")/pfi-controller}
for c in ip nsenter etcd etcdctl; do command -v $c >/dev/null || fail "$c is needed (scripts/bootstrap.sh test)"; done
kill_daemons_on_exit "${KEEP:+cp -r \"\$T\" \"\$KEEP\"}"
new_token "$T/atok" "$T/ctok"
CTOK=$(cat "$T/ctok")

# ---- m1's namespace: a process holds it; a veth pair joins it to ours
ip link set lo up || fail "ip link set lo up (in the test's network namespace)"
unshare -n sleep 100000 &
HOLD=$!; PIDS="$PIDS $HOLD"
wait_for 5 "m1's network namespace" '[ "$(readlink /proc/$HOLD/ns/net)" != "$(readlink /proc/self/ns/net)" ]'
ip link add pfi-vm type veth peer name pfi-vi || fail "ip link add (a veth pair)"
ip link set pfi-vi netns "$HOLD" || fail "ip link set netns"
ip addr add 10.9.0.1/24 dev pfi-vm && ip link set pfi-vm up || fail "the veth's address here"
ISO="nsenter -t $HOLD -n"
$ISO ip link set lo up && $ISO ip addr add 10.9.0.2/24 dev pfi-vi && $ISO ip link set pfi-vi up ||
  fail "the veth's address in m1's namespace"
. "$SRC/tests/cli/etcd_lib.sh"
. "$SRC/tests/cli/failover_lib.sh"
PFI_ETCD_HOST_1=10.9.0.2 PFI_ETCD_WRAP_1=$ISO PFI_ETCD_HOST_2=10.9.0.1 PFI_ETCD_HOST_3=10.9.0.1 etcd_cluster 3

for i in 1 2; do
  job=$([ $i = 1 ] && echo j1:moe-ft-qwen30ba3b-x8 || echo j3:moe-pt-gptoss20b-x8-ep1-nocompile)
  start_daemon "agent $i" "$T/a$i.log" "$T/a$i.port" "$PFI_AGENT" \
    --backend "sim:gpus=4,job=$job@0-3,load=0,steplogs=$T,state=$T/hw$i.json" --listen 127.0.0.1:0 \
    --port-file "$T/a$i.port" --token-file "$T/atok" --state-file "$T/a$i.state" --interval 0.5 --log "$T/a$i.log"
done
P1=$(cat "$T/a1.port"); P2=$(cat "$T/a2.port")
for n in a b; do ctl_json $n /pfi/iso/ 15 "$P1" "$P2"; done # (m1 first in ETCD_EPS)
grants() { grep -c "controller pfi-controller@[^ ]*/$1 generation" "$2"; }
start_pair
S=$(date -u +%Y-%m-%dT%H:%M:%SZ)
CODE=$(curl -s -o "$T/body" -w '%{http_code}' -X POST -H "Authorization: Bearer $CTOK" \
  --data-binary "{\"id\":\"long\",\"start\":\"$S\",\"duration_s\":36000,\"reduction_pct\":30}" "$URL_a/v1/events")
[ "$CODE" = 201 ] || { cat "$T/body" >&2; fail "event: HTTP $CODE"; }; ok
wait_for 30 "caps on both agents from ctl-a" 'both_capped && [ "$(grants ctl-a "$T/a1.log")" -ge 1 ] && [ "$(grants ctl-a "$T/a2.log")" -ge 1 ]'

# ---- m1 leads etcd, then is cut off from m2 and m3 (not from the controllers)
member_hex() { etcdctl --endpoints="$1" endpoint status -w json 2>/dev/null |
  python3 -c 'import json, sys; s = json.load(sys.stdin)[0]["Status"]; print("%x %x" % (s["header"]["member_id"], s["leader"]))'; }
set -- $(member_hex "$ETCD_EP_1"); M1=$1; LEAD=$2
[ -n "$M1" ] || fail "m1's member id"; ok
if [ "$LEAD" != "$M1" ]; then
  etcdctl --endpoints="$ETCD_EPS" move-leader "$M1" >"$T/move" 2>&1 ||
    etcdctl --endpoints="$ETCD_EP_2,$ETCD_EP_3" move-leader "$M1" >"$T/move" 2>&1 || { cat "$T/move" >&2; fail "etcdctl move-leader to m1"; }
fi
wait_for 10 "m1 leads etcd" 'set -- $(member_hex "$ETCD_EP_1"); [ "${2:-}" = "$M1" ]'
( while :; do echo "$(acap "$P1") $(acap "$P2")" >>"$T/caps"; sleep 0.1; done ) &
SAMPLER=$!; PIDS="$PIDS $SAMPLER"
L1=$(wc -l <"$T/a1.log"); L2=$(wc -l <"$T/a2.log")
# lease_end PORT: when the agent's lease ends (epoch s): a push renews it
lease_end() { curl -s -m 2 "http://127.0.0.1:$1/metrics" |
  awk -v now="$(date +%s.%N)" '$1 == "pfi_lease_expires_in_seconds" {printf "%.1f\n", now + $2}'; }
E1=$(lease_end "$P1"); E2=$(lease_end "$P2")
num "$E1" ">" 1 && num "$E2" ">" 1 || fail "the agents' leases: '$E1' '$E2'"; ok
E1=$(awk -v e="$E1" 'BEGIN{printf "%.1f", e + 1}'); E2=$(awk -v e="$E2" 'BEGIN{printf "%.1f", e + 1}')
ip rule add pref 10 ipproto tcp dport "$ETCD_PEER_1" prohibit || fail "ip rule (m2, m3 to m1)"
$ISO ip rule add pref 10 ipproto tcp sport "$ETCD_PEER_1" prohibit || fail "ip rule (m1's answers)"
$ISO ip rule add pref 11 ipproto tcp dport "$ETCD_PEER_2" prohibit || fail "ip rule (m1 to m2)"
$ISO ip rule add pref 12 ipproto tcp dport "$ETCD_PEER_3" prohibit || fail "ip rule (m1 to m3)"
T0=$(date +%s.%N)
# isolated, not dead: a serializable read answers, a linearizable one does not
etcdctl --endpoints="$ETCD_EP_1" --command-timeout=2s get /pfi/iso/term --consistency=s --print-value-only >"$T/ser" 2>&1 ||
  { cat "$T/ser" >&2; fail "m1 does not answer a serializable read"; }; ok
wait_for 15 "m1 without quorum (a linearizable read through it fails)" \
  '! etcdctl --endpoints="$ETCD_EP_1" --command-timeout=1s get /pfi/iso/term >/dev/null 2>&1'
wait_for 15 "m2 and m3 elect a leader" 'set -- $(member_hex "$ETCD_EP_2"); [ -n "${2:-}" ] && [ "$2" != "$M1" ] && [ "$2" != 0 ]'
# a controller pushes to both agents again, through m2 or m3
# (pushes renew a lease at half of it: 7.5 s)
wait_for 20 "both agents' leases renewed after the isolation" \
  'num "$(lease_end "$P1")" ">" "$E1" && num "$(lease_end "$P2")" ">" "$E2"'
wait_for 15 "one controller leads" 'ra=$(role "$URL_a"); rb=$(role "$URL_b"); { [ "$ra" = leader ] && [ "$rb" = follower ]; } || { [ "$ra" = follower ] && [ "$rb" = leader ]; }'
# each controller's clients went on from m1 to m2 or m3, and said so
for n in a b; do
  wait_for 10 "ctl-$n's lease calls through m2 or m3" "grep -q 'etcd: the lease and the election now through .* ($ETCD_EP_1 did not answer)' '$T/ctl-$n.log'"
done
T1=$(date +%s.%N)
echo "measured: m1 (etcd's leader) isolated; pushes through m2/m3 and one leader $(awk -v a="$T0" -v b="$T1" 'BEGIN{printf "%.2f", b - a}') s later (ctl-a $(role "$URL_a"), ctl-b $(role "$URL_b"))"
# hold it a few periods: no second leader, the caps kept
both() { curl -s -m 2 "$URL_a/metrics" "$URL_b/metrics" | awk -v m="$1" '$1 ~ "^" m {s += $2} END {print s + 0}'; }
n0=$(both pfi_ctl_cycles_total)
wait_for 20 "five more periods" '[ "$(both pfi_ctl_cycles_total)" -ge "$((n0 + 5))" ]'
[ "$(both 'pfi_ctl_leader[{]')" = 1 ] ||
  fail "not one leader while m1 is isolated"; ok

# ---- healed: m1 rejoins
ip rule del pref 10 && $ISO ip rule del pref 10 && $ISO ip rule del pref 11 && $ISO ip rule del pref 12 || fail "ip rule del"
wait_for 20 "m1 rejoins (a linearizable read through it)" 'etcdctl --endpoints="$ETCD_EP_1" --command-timeout=1s get /pfi/iso/term >/dev/null 2>&1'
wait_for 10 "one controller leads" 'ra=$(role "$URL_a"); rb=$(role "$URL_b"); { [ "$ra" = leader ] && [ "$rb" = follower ]; } || { [ "$ra" = follower ] && [ "$rb" = leader ]; }'
kill "$SAMPLER" 2>/dev/null; wait "$SAMPLER" 2>/dev/null
awk 'NF == 2 && ($1 >= 700 || $2 >= 700) {bad++} END {exit bad > 0}' "$T/caps" ||
  { grep -c . "$T/caps" >&2; fail "a GPU uncapped while m1 was isolated"; }; ok
[ "$(awk 'NF == 2' "$T/caps" | wc -l)" -ge 20 ] || fail "the sampler took $(wc -l <"$T/caps") samples"; ok
agents_logs_ok "while m1 was isolated" 1 2
done_ok
