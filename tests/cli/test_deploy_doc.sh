#!/bin/sh
# test_deploy_doc.sh — docs/deploy.md as an operator follows it, on real
# (non-loopback) addresses (issue 30 item 10: the page had drifted; issue 41
# (C): its CLI step could not work as written, and the old test mapped the
# hosts to loopback addresses, where the CLI's rule for a token over plain
# http does not apply). The test runs in a network and mount namespace of
# its own (unshare; as root without a user namespace): loopback gets
# 10.0.0.2 (ctl), 10.0.0.3 (mon), 10.0.0.11 and 10.0.0.12 (gpu01, gpu02),
# a private /etc/hosts names them, and nothing leaves the namespace. Every
# command block with a `<!-- test: run|file ... -->` mark is taken from
# the page as written and run (or written) with the substitutions the
# page's introduction lists: each host is a directory under $T (ctl, gpu01,
# gpu02, mon; ca for the administrator's CA work) with /etc/pfi,
# /etc/default, /etc/prometheus, /var/lib/pfi, /run/pfi and /root/pfi under
# it; ssh and scp copy between them; /usr/share/pfi/ is contrib/; the agents
# get the simulated backend, their state file and log in PFI_AGENT_ARGS;
# the controller's JSON gets a "db" in its directory; owners (pfi-controller,
# prometheus) become the test's user; systemctl starts the daemons with the
# units' own ExecStart lines (packaging/systemd, the EnvironmentFile
# sourced) and waits until they answer, journalctl shows their logs.
# Then: both agents up at the controller over mutual TLS with their tokens,
# the page's event running and capping, created by alice; the agents refuse
# a client without a certificate; reads need a token; desk cannot trigger;
# the CLI refuses plain http to the controller's address; Prometheus's
# configuration valid with the files the page installed.
. "$SRC/tests/cli/deploy_lib.sh"
. "$SRC/tests/cli/lib.sh"
: "${PFI_AGENT:?}"
CTL=${PFI_CONTROLLER_BIN:-$(dirname "$PFI_AGENT")/pfi-controller}
command -v openssl >/dev/null || fail "openssl is needed (scripts/bootstrap.sh test)"
command -v promtool >/dev/null || fail "promtool is needed (scripts/bootstrap.sh test)"
command -v ip >/dev/null || fail "ip is needed (iproute2; scripts/bootstrap.sh test)"
kill_daemons_on_exit
DOC=$SRC/docs/deploy.md

# ---- the hosts' addresses and names, inside this namespace only ----
ip link set lo up || fail "ip link set lo up (in the test's network namespace)"
for a in 10.0.0.2 10.0.0.3 10.0.0.11 10.0.0.12; do
  ip addr add "$a/32" dev lo || fail "ip addr add $a (in the test's network namespace)"
done
printf '127.0.0.1 localhost\n10.0.0.2 ctl.cluster\n10.0.0.3 mon.cluster\n10.0.0.11 gpu01.cluster\n10.0.0.12 gpu02.cluster\n' >"$T/hosts"
mount --bind "$T/hosts" /etc/hosts || fail "mount --bind of /etc/hosts (in the test's mount namespace)"
getent hosts gpu02.cluster | grep -q '^10\.0\.0\.12 ' || fail "gpu02.cluster does not resolve to 10.0.0.12"; ok
for h in ctl gpu01 gpu02 mon ca; do mkdir -p "$T/$h/etc/prometheus" "$T/$h/run/pfi/jobs" "$T/$h/var/lib/pfi/controller"; done

# the marked blocks, in order: NN.KIND (run|file) with MARK (the rest of the line)
doc_blocks test "$DOC" "$T/blocks" >/dev/null
[ "$(ls "$T/blocks"/*.mark | wc -l)" -ge 15 ] || fail "fewer marked blocks than the page has"; ok

# the page's text for host H (node N: gpu01 -> N): paths into H's
# directory, the shipped files from contrib/, owners the test's user
subst() { # HOST [NODE]
  R=$T/$1; n=${2:-gpu01}; k=${n#gpu0}
  sed -e "s/gpu01/$n/g; s/10\.0\.0\.11/10.0.0.1$k/g" \
      -e "s#/etc/pfi/#$R/etc/pfi/#g; s#/etc/default/#$R/etc/default/#g; s#/etc/prometheus/#$R/etc/prometheus/#g" \
      -e "s#/var/lib/pfi#$R/var/lib/pfi#g; s#/run/pfi#$R/run/pfi#g; s#/root/pfi#$R/root/pfi#g" \
      -e "s#/usr/share/pfi/#$SRC/contrib/#g" \
      -e "s/pfi-controller: /$(id -un): /g; s/-o prometheus -g prometheus //g; s/-o pfi-controller -g pfi-controller //g"
}
# systemctl and journalctl for the blocks: the units' own command lines
unit_exec() { sed -n 's/^ExecStart=//p' "$SRC/packaging/systemd/$1.service"; }
systemctl() {
  case "$*" in
  "restart pfi-agent")
    PFI_AGENT_ARGS=; . "$R/etc/default/pfi-agent"
    PFI_AGENT_ARGS="$PFI_AGENT_ARGS --backend sim:name=$HOSTNODE,gpus=4,job=j$k:moe-ft-qwen30ba3b-x8@0-3,load=0,steplogs=$R,state=$R/hw.json --state-file $R/var/lib/pfi/agent-state.json --log $R/agent.log"
    cmd=$(unit_exec pfi-agent | sed "s#^/usr/sbin/pfi-agent#$PFI_AGENT#")
    eval "start_daemon agent-$HOSTNODE \"$R/agent.out\" \"\" $cmd"
    eval "PID_$HOSTNODE=\$DPID"
    wait_for 30 "agent $HOSTNODE to log that it listens" 'grep -q "listening on https://10.0.0.1$k:9477" "$R/agent.log" 2>/dev/null' ;;
  "enable --now pfi-controller")
    PFI_CONTROLLER_ARGS=
    cmd=$(unit_exec pfi-controller | sed "s#^/usr/sbin/pfi-controller#$CTL#; s#/etc/pfi/#$R/etc/pfi/#g")
    eval "start_daemon controller \"$R/controller.log\" \"\" $cmd"
    wait_for 30 "the controller to answer" 'curl -s -m 2 -o /dev/null --cacert "$T/ctl/etc/pfi/ca.pem" https://ctl.cluster:9480/healthz' ;;
  *) fail "systemctl $*: not in the test's units" ;;
  esac
}
journalctl() { # -u UNIT -n N
  case "$2" in
  pfi-agent) tail -n "$4" "$R/agent.log" ;;
  pfi-controller) tail -n "$4" "$R/controller.log" ;;
  esac
}
pfi() { # the CLI with the host's pfi.conf; its output kept for the checks below
  PFI_CONF=$R/etc/pfi/pfi.conf "$PFI" "$@" >"$T/cli.last" 2>&1; r=$?
  cat "$T/cli.last"; cat "$T/cli.last" >>"$T/cli.out"; return $r
}
# a block's text for host H, node N, each command line failing the test
# with the line when it fails (the block runs in this shell: its daemons
# stay ours, and are killed at exit)
commands() { # NN HOST [NODE]
  subst "$2" "${3:-}" <"$T/blocks/$1.run" | awk -v nn="$1" -v h="${3:-$2}" '
    /^[ \t]*(#|$)/ || /\(\) *\{/ || /^umask / || /^ *(for|do|done)( |$)/ || / do$/ {print; next}
    {l = $0; gsub(/"/, "\\\"", l); gsub(/\$/, "\\$", l); gsub(/`/, "\\`", l)
     print $0 " || fail \"docs/deploy.md block " nn " on " h ": " l "\""}'
}
run_block() { # NN HOST [NODE] DIR
  HOSTNODE=${3:-$2}; R=$T/$2; n=${3:-gpu01}; k=${n#gpu0}
  commands "$1" "$2" "${3:-}" >"$T/blocks/$1.$HOSTNODE.sh"
  cd "$4" || fail "cd $4"
  . "$T/blocks/$1.$HOSTNODE.sh"
  cd "$T"; umask 022
  ok
}
write_block() { # NN HOST [NODE]
  HOSTNODE=${3:-$2}; R=$T/$2; n=${3:-gpu01}; k=${n#gpu0}
  path=$(sed 's/^\([^ ]*\) on .*/\1/' "$T/blocks/$1.mark" | subst "$2" "${3:-}")
  mkdir -p "$(dirname "$path")"
  subst "$2" "${3:-}" <"$T/blocks/$1.file" >"$path"
  ok
}

# the blocks in the page's order, each on the hosts its mark names
for f in "$T"/blocks/*.mark; do
  nn=$(basename "$f" .mark)
  mark=$(cat "$f")
  case "$mark" in
  "in ca for each node") for n in gpu01 gpu02; do run_block "$nn" ca "$n" "$T/ca"; done ;;
  "in ca") run_block "$nn" ca "" "$T/ca" ;;
  "/etc/default/pfi-agent on each node") for n in gpu01 gpu02; do write_block "$nn" "$n" "$n"; done ;;
  "on each node") for n in gpu01 gpu02; do run_block "$nn" "$n" "$n" "$T/$n"; done ;;
  "/etc/pfi/controller.json on ctl")
    write_block "$nn" ctl
    # the controller's database in its state directory (the unit's StateDirectory)
    python3 - "$T/ctl/etc/pfi/controller.json" "$T/ctl/var/lib/pfi/controller/controller.db" <<'PY'
import json, sys
c = json.load(open(sys.argv[1])); c["db"] = sys.argv[2]
json.dump(c, open(sys.argv[1], "w"))
PY
    ;;
  *" on ctl") write_block "$nn" ctl ;;
  "on ctl") run_block "$nn" ctl "" "$T/ctl" ;;
  *" on mon") write_block "$nn" mon ;;
  "on mon") run_block "$nn" mon "" "$T/mon" ;;
  *) fail "block $nn: unknown mark '$mark'" ;;
  esac
done

# ---- what the page promises ----
U=https://ctl.cluster:9480
CA=$T/ctl/etc/pfi/ca.pem
ALICE=$(cat "$T/ctl/etc/pfi/operators/alice.token")
DESK=$(cat "$T/ctl/etc/pfi/operators/desk.token")
get() { curl -s -m 5 --cacert "$CA" -H "Authorization: Bearer $ALICE" "$U$1"; }
wait_for 30 "both agents up at the controller (mutual TLS, tokens)" 'get /v1/status | grep -q "\"agents_up\":2"'
contains "$T/ctl/controller.log" "agent gpu01 (https://gpu01.cluster:9477) is up"
contains "$T/ctl/controller.log" "agent gpu02 (https://gpu02.cluster:9477) is up"
# §5's CLI block ran over https to the controller's real address: its event
# exists, made by alice, and it runs and caps the jobs
contains "$T/cli.out" "https://ctl.cluster:9480"
contains "$T/cli.out" "test-1"
get /v1/events/test-1 | grep -q '"created_by":"alice"' || fail "test-1 not created by alice: $(get /v1/events/test-1)"; ok
wait_for 30 "test-1 active" 'get /v1/events/test-1 | grep -q "\"status\":\"active\""'
wait_for 60 "the agents capped" 'tr -d " \n" <"$T/gpu02/hw.json" | grep -q "\"caps_w\":\[[0-5]"'
# the CLI sends a token only over https (or to loopback): plain http to
# the controller's address is refused before anything is sent
R=$T/ctl
expect_status 1 env PFI_CONF="$T/ctl/etc/pfi/pfi.conf" "$PFI" event create --controller http://10.0.0.2:9480 --reduction 10 --start now --duration 10m
contains "$T/err" "plain http to a non-loopback host would send the token in cleartext"
# reads need a token (require_read_scope); desk may create events, not trigger
c=$(curl -s -o /dev/null -w '%{http_code}' -m 5 --cacert "$CA" "$U/v1/status")
[ "$c" = 401 ] || fail "a read without a token: HTTP $c"; ok
c=$(curl -s -o "$T/body" -w '%{http_code}' -m 5 --cacert "$CA" -H "Authorization: Bearer $DESK" --data-binary '{"reduction_pct": 5}' "$U/v1/trigger")
[ "$c" = 403 ] || fail "desk triggers: HTTP $c"; ok
# the agents: no client certificate, no answer (mutual TLS); Prometheus's
# certificate and the read token read the metrics and cannot set caps
M=$T/mon/etc/pfi
RT=$(cat "$M/agent-read.token")
c=$(curl -s -m 5 --cacert "$M/ca.pem" -H "Authorization: Bearer $RT" -o "$T/body" -w '%{http_code}' https://gpu01.cluster:9477/metrics)
[ "$c" = 403 ] || fail "an agent answered a client without a certificate: HTTP $c"; ok
contains "$T/body" "a client certificate signed by the configured CA is required"
curl -s -m 5 --cacert "$M/ca.pem" --cert "$M/prometheus-client.crt" --key "$M/prometheus-client.key" \
  -H "Authorization: Bearer $RT" https://gpu01.cluster:9477/metrics | grep -q '^pfi_gpu_power_watts' ||
  fail "Prometheus's certificate and the read token do not read the agent's metrics"; ok
c=$(curl -s -o /dev/null -w '%{http_code}' -m 5 --cacert "$M/ca.pem" --cert "$M/prometheus-client.crt" --key "$M/prometheus-client.key" \
  -X PUT -H "Authorization: Bearer $RT" --data-binary '{}' https://gpu01.cluster:9477/v1/caps)
[ "$c" = 401 ] || [ "$c" = 403 ] || fail "the read token set caps (HTTP $c)"; ok
# the controller's metrics with Prometheus's read operator token
curl -s -m 5 --cacert "$M/ca.pem" -H "Authorization: Bearer $(cat "$M/controller-read.token")" "$U/metrics" |
  grep -q '^pfi_ctl_' || fail "the controller's metrics not read with the prometheus operator's token"; ok
# §6: Prometheus's configuration as written, with the files the page installed
expect_status 0 promtool check config "$T/mon/etc/prometheus/prometheus.yml"
contains "$T/out" "SUCCESS"
done_ok
