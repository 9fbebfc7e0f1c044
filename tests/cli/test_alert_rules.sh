#!/bin/sh
# test_alert_rules.sh — contrib/prometheus: the rules file is valid
# (promtool check rules) and every alert fires on synthetic series after its
# `for`, not before and not once the condition clears; the controller's
# alerts (down, absent, killed mid-event: its series stop and the event's
# alerts keep firing) and cap drift; the recording rules join dcgm-exporter's
# series to pfi's hpc_job (promtool test rules
# contrib/prometheus/tests/*.yml). Broken copies of the rules (the hold over
# a dead controller's series removed, ...) fail those tests. promtool comes
# with Debian's prometheus (scripts/bootstrap.sh test).
. "$SRC/tests/cli/lib.sh"
command -v promtool >/dev/null || fail "promtool is needed (apt-get install --no-install-recommends prometheus; scripts/bootstrap.sh test)"
expect_status 0 promtool check rules "$SRC/contrib/prometheus/pfi-rules.yml"
contains "$T/out" "SUCCESS: 13 rules found"
for f in "$SRC"/contrib/prometheus/tests/*.yml; do
  (cd "$(dirname "$f")" && promtool test rules "$(basename "$f")") >"$T/out" 2>&1 || { cat "$T/out" >&2; fail "promtool test rules $f"; }
  contains "$T/out" "SUCCESS"
done
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
done_ok
