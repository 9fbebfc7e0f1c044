#!/bin/sh
# test_alert_rules.sh — contrib/prometheus: the rules file is valid
# (promtool check rules) and every alert fires on synthetic series after its
# `for`, not before and not once the condition clears; the controller's
# alerts (down, absent, killed mid-event: its series stop and the event's
# alerts keep firing) and cap drift; the recording rules join dcgm-exporter's
# series to pfi's hpc_job (promtool test rules
# contrib/prometheus/tests/*.yml); contrib's prometheus.yml and
# docs/deploy.md's agree with each other and with the shipped ports. Broken copies of the rules (the hold over
# a dead controller's series removed, ...) fail those tests. promtool comes
# with Debian's prometheus (scripts/bootstrap.sh test).
. "$SRC/tests/cli/lib.sh"
command -v promtool >/dev/null || fail "promtool is needed (apt-get install --no-install-recommends prometheus; scripts/bootstrap.sh test)"
expect_status 0 promtool check rules "$SRC/contrib/prometheus/pfi-rules.yml"
contains "$T/out" "SUCCESS: 24 rules found"
for f in "$SRC"/contrib/prometheus/tests/*.yml; do
  (cd "$(dirname "$f")" && promtool test rules "$(basename "$f")") >"$T/out" 2>&1 || { cat "$T/out" >&2; fail "promtool test rules $f"; }
  contains "$T/out" "SUCCESS"
done
# contrib's prometheus.yml and docs/deploy.md §6 are valid configurations
# (promtool check config, their /etc paths made local) and agree with each
# other and with what ships: the agents' CA and read token at the same
# paths, the controller on the shipped port 9480 (9478 is an agent's
# --control-listen example) over http as shipped (contrib) and over https
# with a read operator's token in the guide (require_read_scope), the CA
# installed (§4) before the agent uses it
mkdir -p "$T/etc"; : >"$T/etc/ca.pem"; : >"$T/etc/prometheus-client.crt"; : >"$T/etc/prometheus-client.key"
echo "0123456789abcdef0123" >"$T/etc/agent-read.token"; echo "0123456789abcdef0123" >"$T/etc/controller-read.token"
localize() { sed "s#/etc/pfi/#$T/etc/#g; s#/etc/prometheus/pfi-rules.yml#$SRC/contrib/prometheus/pfi-rules.yml#" "$1" >"$2"; }
localize "$SRC/contrib/prometheus/prometheus.yml" "$T/contrib.yml"
expect_status 0 promtool check config "$T/contrib.yml"
awk '/^## 6\. Prometheus/ {s = 1} s && /^```yaml/ {y = 1; next} y && /^```/ {exit} y' "$SRC/docs/deploy.md" >"$T/deploy6.yml"
contains "$T/deploy6.yml" "job_name: pfi-agent"
localize "$T/deploy6.yml" "$T/deploy.yml"
expect_status 0 promtool check config "$T/deploy.yml"
for f in "$SRC/contrib/prometheus/prometheus.yml" "$T/deploy6.yml"; do
  for want in "ca_file: /etc/pfi/ca.pem" "credentials_file: /etc/pfi/agent-read.token" "type: Bearer" \
    "ctl.cluster:9480" "gpu01.cluster:9477" "- /etc/prometheus/pfi-rules.yml"; do
    contains "$f" "$want"
  done
  grep -v '^ *#' "$f" | grep -q ':9478' && fail "$f scrapes port 9478 (an agent's control port)"; ok
done
# the shipped controller's job is plain http (loopback, as packaged); the
# guide's is https with the read operator's token
awk '/job_name: pfi-controller/ {c = 1; next} /job_name:/ {c = 0} c && /^ *scheme: https/ {exit 1}' \
  "$SRC/contrib/prometheus/prometheus.yml" || fail "contrib's prometheus.yml: the controller over https"; ok
awk '/job_name: pfi-controller/ {c = 1; next} /job_name:/ {c = 0} c && /^ *scheme: https/ {f = 1} END {exit !f}' \
  "$T/deploy6.yml" || fail "docs/deploy.md §6: the controller not over https"; ok
contains "$T/deploy6.yml" "credentials_file: /etc/pfi/controller-read.token"
contains "$SRC/packaging/etc/pfi/controller.json" '"listen": "127.0.0.1:9480"'
contains "$SRC/packaging/etc/pfi/pfi.conf" '"controller": "http://127.0.0.1:9480"'
awk '/^## 4\./ {s = 1} s && /systemctl restart pfi-agent/ {exit} s && /install -D -m 0644 \/root\/pfi\/ca.pem \/etc\/pfi\/ca.pem/ {f = 1} END {exit !f}' "$SRC/docs/deploy.md" ||
  fail "docs/deploy.md §4 does not install /etc/pfi/ca.pem before the agent uses it"
ok

# a rule that no longer matches what it tests is caught: each broken copy
# fails the tests, naming the alert it broke
mkdir -p "$T/tests"; cp "$SRC/contrib/prometheus/tests/pfi-rules-test.yml" "$T/tests/t.yml"
broken() { # ALERT SED-EXPR: the rules with SED-EXPR applied fail, naming ALERT
  sed "$2" "$SRC/contrib/prometheus/pfi-rules.yml" >"$T/pfi-rules.yml"
  cmp -s "$T/pfi-rules.yml" "$SRC/contrib/prometheus/pfi-rules.yml" && fail "broken $1: the edit '$2' changed nothing"
  (cd "$T/tests" && promtool test rules t.yml) >"$T/out" 2>&1 && fail "a broken $1 passed its test ($2)"; ok
  contains "$T/out" "alertname: $1,"
}
broken PfiEventNotMet 's/pfi_ctl_event_met{job="pfi-controller"} == 0/pfi_ctl_event_met{job="pfi-controller"} == 2/'
# without the hold, a controller killed during an event not met resolves the alert
broken PfiEventNotMet 's/last_over_time(pfi_ctl_event_met{job="pfi-controller"}\[1h\])/pfi_ctl_event_met{job="pfi-controller"}/'
broken PfiEventUnanswered 's/last_over_time(pfi_ctl_event_active{job="pfi-controller"}\[1d\])/pfi_ctl_event_active{job="pfi-controller"}/'
broken PfiControllerDown 's/ or absent(up{job="pfi-controller"})//'
broken PfiCapDrift 's/< pfi_gpu_power_cap_watts{job="pfi-agent"} - 1/< pfi_gpu_power_cap_watts{job="pfi-agent"}/'
broken PfiCapContested 's/pfi_gpu_cap_contested{job="pfi-agent"} == 1/pfi_gpu_cap_contested{job="pfi-agent"} == 2/'
broken PfiFailoverTwoLeaders 's/sum(pfi_ctl_leader{job="pfi-controller"}) > 1/sum(pfi_ctl_leader{job="pfi-controller"}) > 2/'
broken PfiFailoverNoLeader 's/sum(pfi_ctl_leader{job="pfi-controller"}) == 0/max(pfi_ctl_leader{job="pfi-controller"}) < 0/'
done_ok
