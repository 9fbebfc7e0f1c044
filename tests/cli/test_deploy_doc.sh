#!/bin/sh
# test_deploy_doc.sh — docs/deploy.md as an operator follows it (issue 30
# item 10: the page had drifted from what ships). Every command block with
# a `<!-- test: run|file ... -->` mark is taken from the page as written and
# run (or written) with the substitutions the page's introduction lists:
# each host is a directory under $T (ctl, gpu01, gpu02, mon; ca for the
# CA's work), /etc/pfi, /etc/default, /etc/prometheus, /var/lib/pfi and
# /run/pfi under it; gpuNN.cluster and 10.0.0.1N become 127.0.0.1N,
# ctl.cluster and 10.0.0.2 become 127.0.0.2 (ports unchanged: each daemon
# has a loopback address of its own); the agents get the simulated backend,
# their state file and log in PFI_AGENT_ARGS; the controller's JSON gets a
# "db" in its directory; owners (pfi-controller, prometheus) become the
# test's user; systemctl starts the daemons with the units' own ExecStart
# lines (packaging/systemd, the EnvironmentFile sourced) and waits until
# they answer, journalctl shows their logs. The page's prose steps between
# blocks (copying a node's token, certificate and key to it) are done here.
# Then: both agents up at the controller over TLS with their tokens, the
# page's event running and capping, and Prometheus's configuration valid.
. "$SRC/tests/cli/lib.sh"
: "${PFI_AGENT:?}"
CTL=${PFI_CONTROLLER_BIN:-$(dirname "$PFI_AGENT")/pfi-controller}
command -v openssl >/dev/null || fail "openssl is needed (scripts/bootstrap.sh test)"
command -v promtool >/dev/null || fail "promtool is needed (scripts/bootstrap.sh test)"
kill_daemons_on_exit
DOC=$SRC/docs/deploy.md
for h in ctl gpu01 gpu02 mon ca; do mkdir -p "$T/$h/etc/prometheus" "$T/$h/run/pfi/jobs" "$T/$h/var/lib/pfi/controller"; done

# the marked blocks, in order: NN.KIND (run|file) with MARK (the rest of the line)
mkdir "$T/blocks"
python3 - "$DOC" "$T/blocks" <<'PY'
import re, sys
lines = open(sys.argv[1]).read().split("\n")
n, i = 0, 0
while i < len(lines):
    m = re.match(r"^<!-- test: (run|file) (.*) -->$", lines[i])
    if m:
        j = i + 1
        assert lines[j].startswith("```"), "line %d: a mark not before a block" % (i + 1)
        k = j + 1
        while not lines[k].startswith("```"):
            k += 1
        n += 1
        open("%s/%02d.%s" % (sys.argv[2], n, m.group(1)), "w").write("\n".join(lines[j + 1:k]) + "\n")
        open("%s/%02d.mark" % (sys.argv[2], n), "w").write(m.group(2) + "\n")
        i = k
    i += 1
print(n)
PY
[ "$(ls "$T/blocks"/*.mark | wc -l)" -ge 10 ] || fail "fewer marked blocks than the page has"; ok

# the page's text for host H (node N: gpu01 -> N)
subst() { # HOST [NODE]
  R=$T/$1; n=${2:-gpu01}; k=${n#gpu0}
  sed -e "s/gpu01/$n/g; s/10\.0\.0\.11/10.0.0.1$k/g" \
      -e "s#/etc/pfi/#$R/etc/pfi/#g; s#/etc/default/#$R/etc/default/#g; s#/etc/prometheus/#$R/etc/prometheus/#g" \
      -e "s#/var/lib/pfi#$R/var/lib/pfi#g; s#/run/pfi#$R/run/pfi#g" \
      -e 's/gpu0\([0-9]\)\.cluster/127.0.0.1\1/g; s/10\.0\.0\.1\([0-9]\)/127.0.0.1\1/g' \
      -e 's/ctl\.cluster/127.0.0.2/g; s/10\.0\.0\.2\([^0-9]\)/127.0.0.2\1/g' \
      -e "s/pfi-controller: /$(id -un): /g; s/-o prometheus -g prometheus //g"
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
    wait_for 30 "agent $HOSTNODE to log that it listens" 'grep -q "listening on https://127.0.0.1$k:9477" "$R/agent.log" 2>/dev/null' ;;
  "enable --now pfi-controller")
    PFI_CONTROLLER_ARGS=
    cmd=$(unit_exec pfi-controller | sed "s#^/usr/sbin/pfi-controller#$CTL#; s#/etc/pfi/#$R/etc/pfi/#g")
    eval "start_daemon controller \"$R/controller.log\" \"\" $cmd"
    wait_for 30 "the controller to answer" 'curl -s -m 2 -o /dev/null http://127.0.0.2:9480/healthz' ;;
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
    /^[ \t]*(#|$)/ || /\(\) *\{/ || /^umask / {print; next}
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

# the blocks in the page's order, each on the hosts its mark names, with
# the prose steps between them
for f in "$T"/blocks/*.mark; do
  nn=$(basename "$f" .mark)
  mark=$(cat "$f")
  case "$mark" in
  "in ca for each node") for n in gpu01 gpu02; do run_block "$nn" ca "$n" "$T/ca"; done ;;
  "in ca") run_block "$nn" ca "" "$T/ca" ;;
  "on every host") for h in ctl gpu01 gpu02 mon; do run_block "$nn" "$h" "" "$T/ca"; done ;;
  "/etc/default/pfi-agent on each node") for n in gpu01 gpu02; do write_block "$nn" "$n" "$n"; done ;;
  "on each node")
    for n in gpu01 gpu02; do # §2's and §3's prose: the node's token, read token, certificate, key
      install -D -m 0600 "$T/ctl/etc/pfi/agents/$n.token" "$T/$n/etc/pfi/agent.token"
      install -D -m 0600 "$T/ctl/etc/pfi/agents/read.token" "$T/$n/etc/pfi/agent-read.token"
      install -D -m 0644 "$T/ca/$n.pem" "$T/$n/etc/pfi/agent.crt"
      install -D -m 0600 "$T/ca/$n.key" "$T/$n/etc/pfi/agent.key"
      run_block "$nn" "$n" "$n" "$T/$n"
    done ;;
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
  "on mon") # §2's prose: read.token to Prometheus's host; the rules from the source tree
    cp "$T/ctl/etc/pfi/agents/read.token" "$T/ca/"
    commands "$nn" mon | sed "s# contrib/# $SRC/contrib/#" >"$T/blocks/$nn.mon.sh"
    HOSTNODE=mon; R=$T/mon; cd "$T/ca"; . "$T/blocks/$nn.mon.sh"; cd "$T"; ok ;;
  *) fail "block $nn: unknown mark '$mark'" ;;
  esac
done

# ---- what the page promises ----
U=http://127.0.0.2:9480
wait_for 30 "both agents up at the controller (TLS, tokens)" 'curl -s -m 5 "$U/v1/status" | grep -q "\"agents_up\":2"'
contains "$T/ctl/controller.log" "agent gpu01 (https://127.0.0.11:9477) is up"
# §5's CLI block ran: its event exists; it runs and caps the jobs
contains "$T/cli.out" "controller   http://127.0.0.2:9480"
contains "$T/cli.out" "test-1"
wait_for 30 "test-1 active" 'curl -s -m 5 "$U/v1/events/test-1" | grep -q "\"status\":\"active\""'
wait_for 60 "the agents capped" 'tr -d " \n" <"$T/gpu01/hw.json" | grep -q "\"caps_w\":\[[0-5]"'
# the read token reads the agent's metrics over TLS, and cannot set caps
curl -s -m 5 --cacert "$T/mon/etc/pfi/ca.pem" -H "Authorization: Bearer $(cat "$T/mon/etc/pfi/agent-read.token")" \
  https://127.0.0.11:9477/metrics | grep -q '^pfi_gpu_power_watts' || fail "the read token does not read the metrics"; ok
c=$(curl -s -o /dev/null -w '%{http_code}' -m 5 --cacert "$T/mon/etc/pfi/ca.pem" -X PUT \
  -H "Authorization: Bearer $(cat "$T/mon/etc/pfi/agent-read.token")" --data-binary '{}' https://127.0.0.11:9477/v1/caps)
[ "$c" = 401 ] || [ "$c" = 403 ] || fail "the read token set caps (HTTP $c)"; ok
# §6: Prometheus's configuration as written, with its files installed
expect_status 0 promtool check config "$T/mon/etc/prometheus/prometheus.yml"
contains "$T/out" "SUCCESS"
done_ok
