#!/bin/sh
# test_deploy_failover_doc.sh — docs/deploy.md, "Two controllers that fail
# over, on etcd", as an operator follows it (issue 45): the blocks marked
# `<!-- test-failover: run|file ... -->` run as written, in a network and
# mount namespace of the test's own (as test_deploy_doc.sh does): loopback
# gets 10.0.0.2 (ctl), 10.0.0.3 (mon), 10.0.0.4 (ctl2) and 10.0.0.11
# (gpu01), a private /etc/hosts names them. Each host is a directory under
# $T with /etc/pfi, /etc/etcd, /etc/default, /var/lib/etcd, /var/lib/pfi and
# /root/pfi under it; ssh and scp copy between them; hostname -s names the
# host a block runs on; owners (etcd, pfi-controller) become the test's
# user; systemctl starts etcd with /etc/default/etcd's variables (as
# Debian's etcd.service does) and the controller with its configuration.
# What the section leaves to §2–§5 the test writes itself: one simulated
# agent over http with a token, each controller's API over https (a test
# CA), its operator token, its db, a period of 1 s, lease_s 15, and a
# "name" per controller (both hosts are this machine: one host name).
# Then: the etcd members healthy over mutual TLS; one controller leads,
# the other follows; an event through both controllers' URLs; the leader
# killed, the other takes over; a snapshot saved; etcd stopped on every
# member, restored from the snapshot and started: a leader again, the event
# still there and the agent capped again.
. "$SRC/tests/cli/deploy_lib.sh"
. "$SRC/tests/cli/lib.sh"
: "${PFI_AGENT:?}"
CTL=${PFI_CONTROLLER_BIN:-$(dirname "$PFI_AGENT")/pfi-controller}
for c in openssl ip etcd etcdctl; do command -v $c >/dev/null || fail "$c is needed (scripts/bootstrap.sh test)"; done
kill_daemons_on_exit "${KEEP:+cp -r \"\$T\" \"\$KEEP\"}"
DOC=$SRC/docs/deploy.md

ip link set lo up || fail "ip link set lo up (in the test's network namespace)"
for a in 10.0.0.2 10.0.0.3 10.0.0.4 10.0.0.11; do
  ip addr add "$a/32" dev lo || fail "ip addr add $a (in the test's network namespace)"
done
# (each name's own address first: what every client connects to. The lines
# after give the member names every member address too: an etcd member
# checks a peer's client certificate against the connection's source,
# resolving the certificate's names, and on this namespace's one loopback a
# connection's source is its destination's address: ctl2 reaches mon from
# 10.0.0.3. Between real hosts the source is the peer's own address.)
printf '127.0.0.1 localhost\n10.0.0.2 ctl.cluster\n10.0.0.3 mon.cluster\n10.0.0.4 ctl2.cluster\n10.0.0.11 gpu01.cluster\n' >"$T/hosts"
printf '10.0.0.2 ctl2.cluster mon.cluster\n10.0.0.3 ctl.cluster ctl2.cluster\n10.0.0.4 ctl.cluster mon.cluster\n' >>"$T/hosts"
mount --bind "$T/hosts" /etc/hosts || fail "mount --bind of /etc/hosts (in the test's mount namespace)"
for h in ctl ctl2 mon gpu01 ca; do mkdir -p "$T/$h/etc/pfi" "$T/$h/etc/default" "$T/$h/var/lib/etcd" "$T/$h/var/lib/pfi"; done

# the marked blocks, in order: NN.KIND with NN.mark (the rest of the mark)
doc_blocks test-failover "$DOC" "$T/blocks" >/dev/null
[ "$(ls "$T/blocks"/*.mark | wc -l)" -ge 10 ] || fail "fewer marked blocks than the section has"; ok

# what the section leaves to §2-§5: the test's CA for the controllers' API,
# an operator token, the agent's token, one simulated agent
(cd "$T/ca" && openssl req -x509 -newkey rsa:2048 -nodes -keyout api-ca.key -out api-ca.pem -days 2 -subj "/CN=test CA" 2>/dev/null &&
  for h in ctl:10.0.0.2 ctl2:10.0.0.4; do n=${h%%:*}; a=${h#*:}
    openssl req -newkey rsa:2048 -nodes -keyout $n.key -out $n.csr -subj "/CN=$n.cluster" 2>/dev/null &&
    printf 'subjectAltName=DNS:%s.cluster,IP:%s\nextendedKeyUsage=serverAuth\n' $n $a >$n.ext &&
    openssl x509 -req -in $n.csr -CA api-ca.pem -CAkey api-ca.key -CAcreateserial -days 2 -extfile $n.ext -out $n.pem 2>/dev/null || exit 1
  done) || fail "the test's API certificates"
new_token "$T/ca/agent.token" "$T/ca/alice.token"
start_daemon agent "$T/gpu01/agent.log" "" "$PFI_AGENT" --backend "sim:gpus=4,job=j1:moe-ft-qwen30ba3b-x8@0-3,load=0,state=$T/gpu01/hw.json" \
  --listen 10.0.0.11:9477 --token-file "$T/ca/agent.token" --state-file "$T/gpu01/agent-state.json" --interval 0.5 --log "$T/gpu01/agent.log"
wait_for 20 "the agent answers" 'curl -s -m 2 -o /dev/null http://gpu01.cluster:9477/healthz'
base_config() { # HOST ADDRESS: the controller's keys but failover's
  cp "$T/ca/$1.pem" "$T/ca/$1.key" "$T/ca/api-ca.pem" "$T/ca/agent.token" "$T/ca/alice.token" "$T/$1/etc/pfi/"
  cat >"$T/$1/etc/pfi/controller.json" <<EOF
{"listen": "$2:9480", "tls_cert": "$T/$1/etc/pfi/$1.pem", "tls_key": "$T/$1/etc/pfi/$1.key",
 "token_file": "$T/$1/etc/pfi/alice.token", "db": "$T/$1/var/lib/pfi/controller.db",
 "control_period_s": 1, "lease_s": 15, "tiers": {"j1": 3}, "log": "$T/$1/controller.log",
 "agents": [{"name": "gpu01", "url": "http://gpu01.cluster:9477", "token_file": "$T/$1/etc/pfi/agent.token",
             "allow_insecure_http": true}]}
EOF
  printf '{"ca_file": "%s", "token_file": "%s"}\n' "$T/$1/etc/pfi/api-ca.pem" "$T/$1/etc/pfi/alice.token" >"$T/$1/etc/pfi/pfi.conf"
}
base_config ctl 10.0.0.2
base_config ctl2 10.0.0.4

# the section's text for host H: paths into H's directory, owners the test's user
subst() {
  R=$T/$1
  sed -e "s#/etc/pfi/#$R/etc/pfi/#g; s#/etc/etcd#$R/etc/etcd#g; s#/etc/default/#$R/etc/default/#g" \
      -e "s#/var/lib/etcd#$R/var/lib/etcd#g; s#/root/pfi#$R/root/pfi#g" \
      -e "s/-o etcd -g etcd //g; s/-o pfi-controller -g pfi-controller //g; s/^chown -R etcd:etcd .*/:/"
}
hostname() { echo "$HOST"; }
# a name's own address (the first line: the hosts file's extra lines above
# are for etcd's check of its peers only)
getent() { command getent "$@" | head -n 1; }
EC="--endpoints=https://ctl.cluster:2379,https://ctl2.cluster:2379,https://mon.cluster:2379 --cacert=$T/ca/etcd-ca.pem --cert=$T/ca/etcd-client.pem --key=$T/ca/etcd-client.key"
systemctl() {
  case "$*" in
  "restart etcd" | "start etcd")
    eval "p=\${ETCD_PID_$HOST:-}"; [ -z "$p" ] || stop_daemon "$p" || :
    # as Debian's etcd.service: the variables of /etc/default/etcd
    start_daemon "etcd $HOST" "$R/etcd.log" "" env $(grep '^ETCD_' "$R/etc/default/etcd") etcd
    eval "ETCD_PID_$HOST=\$DPID"
    if [ "$HOST" = mon ]; then # the third member: the cluster answers
      wait_for 60 "the etcd cluster healthy" 'etcdctl $EC endpoint health >/dev/null 2>&1'
    fi ;;
  "stop etcd")
    eval "p=\${ETCD_PID_$HOST:-}"; [ -z "$p" ] || stop_daemon "$p" || :; eval "ETCD_PID_$HOST=" ;;
  "restart pfi-controller")
    eval "p=\${CPID_$HOST:-}"; [ -z "$p" ] || stop_daemon "$p" || :
    start_daemon "controller $HOST" "$R/controller.out" "" "$CTL" --config "$R/etc/pfi/controller.json"
    eval "CPID_$HOST=\$DPID"
    wait_for 30 "the controller on $HOST answers" 'curl -s -m 2 -o /dev/null --cacert "$R/etc/pfi/api-ca.pem" https://$HOST.cluster:9480/healthz' ;;
  *) fail "systemctl $*: not in the test's units" ;;
  esac
}
pfi() {
  PFI_CONF=$R/etc/pfi/pfi.conf "$PFI" "$@" >"$T/cli.last" 2>&1; r=$?
  cat "$T/cli.last"; cat "$T/cli.last" >>"$T/cli.out"; return $r
}
run_block() { # NN HOST DIR: the block in this shell, stopping at its first failing command
  HOST=$2; R=$T/$2
  subst "$2" <"$T/blocks/$1.run" >"$T/blocks/$1.$2.sh"
  echo "docs/deploy.md failover block $1 on $2"
  cd "$3" || fail "cd $3"
  set -e
  . "$T/blocks/$1.$2.sh"
  set +e
  cd "$T"; umask 022
  ok
}
merge_failover() { # NN HOST: the block's keys into the controller's configuration, with a name
  python3 - "$T/$2/etc/pfi/controller.json" "$T/blocks/$1.file" "$2" "$T/$2" <<'PY' || fail "block $1: not JSON"
import json, sys
c = json.load(open(sys.argv[1]))
text = open(sys.argv[2]).read().replace("/etc/pfi/", sys.argv[4] + "/etc/pfi/")
add = json.loads(text)
add["failover"]["name"] = sys.argv[3]
c.update(add)
json.dump(c, open(sys.argv[1], "w"))
PY
  ok
}
role() { curl -s -m 2 --cacert "$T/ca/api-ca.pem" -H "Authorization: Bearer $(cat "$T/ca/alice.token")" "https://$1.cluster:9480/v1/status" |
  sed -n 's/.*"failover":{"role":"\([a-z]*\)".*/\1/p'; }
leader() { for h in ctl ctl2; do [ "$(role "$h")" = leader ] && { echo "$h"; return; }; done; }
capped() { tr -d " \n" <"$T/gpu01/hw.json" | grep -q "\"caps_w\":\[[0-5]"; }

after_status() { # the two controllers: one leads; an event through both URLs; the leader killed
  wait_for 20 "one controller leads, the other follows" '[ -n "$(leader)" ] && [ "$(role ctl)" != "$(role ctl2)" ] && [ -n "$(role ctl)" ] && [ -n "$(role ctl2)" ]'
  L=$(leader); F=$([ "$L" = ctl ] && echo ctl2 || echo ctl)
  R=$T/ctl
  expect_status 0 env PFI_CONF="$T/ctl/etc/pfi/pfi.conf" "$PFI" event create \
    --controller "https://$F.cluster:9480,https://$L.cluster:9480" --reduction 20 --start now --duration 1h --id before-snapshot
  wait_for 20 "the event at the leader" 'curl -s -m 2 --cacert "$T/ca/api-ca.pem" "https://$L.cluster:9480/v1/events/before-snapshot" | grep -q "\"status\":\"active\""'
  wait_for 30 "the agent capped" 'capped'
  eval "p=\$CPID_$L"; stop_daemon "$p" KILL
  wait_for 20 "$F takes over" '[ "$(role "$F")" = leader ]'
  HOST=$L R=$T/$L; systemctl restart pfi-controller
  wait_for 20 "$L, restarted, follows" '[ "$(role "$L")" = follower ]'
}

for f in "$T"/blocks/*.mark; do
  nn=$(basename "$f" .mark)
  case "$(cat "$f")" in
  "in ca") run_block "$nn" ca "$T/ca" ;;
  "on each etcd host") for h in ctl ctl2 mon; do run_block "$nn" "$h" "$T/$h"; done ;;
  "on each controller host") for h in ctl ctl2; do run_block "$nn" "$h" "$T/$h"; done ;;
  "on ctl") run_block "$nn" ctl "$T/ctl"
    grep -q "pfi status" "$T/blocks/$nn.run" && after_status ;;
  "the failover key of /etc/pfi/controller.json on each controller host")
    for h in ctl ctl2; do merge_failover "$nn" "$h"; done ;;
  *) fail "block $nn: unknown mark '$(cat "$f")'" ;;
  esac
done

# ---- after the restore: a leader again, the event of before the snapshot still there
contains "$T/cli.out" "https://"
[ -s "$T/ctl/root/pfi/etcd-snapshot.db" ] || fail "no snapshot"; ok
[ -d "$T/mon/var/lib/etcd/default.before-restore" ] || fail "mon's data directory not set aside"; ok
wait_for 30 "a leader after the restore" '[ -n "$(leader)" ]'
L=$(leader)
curl -s -m 2 --cacert "$T/ca/api-ca.pem" "https://$L.cluster:9480/v1/events/before-snapshot" | grep -q '"id":"before-snapshot"' ||
  fail "the event of before the snapshot not at the leader after the restore"; ok
wait_for 30 "the agent capped after the restore" 'capped'
etcdctl $EC endpoint health >"$T/health" 2>&1 || { cat "$T/health" >&2; fail "etcd not healthy after the restore"; }; ok
done_ok
