#!/bin/sh
# test_alert_rules.sh — contrib/prometheus: the rules file is valid
# (promtool check rules) and every alert fires on synthetic series after its
# `for`, not before and not once the condition clears; the recording rules
# join dcgm-exporter's series to pfi's hpc_job (promtool test rules
# contrib/prometheus/tests/*.yml). promtool comes with Debian's prometheus
# (scripts/bootstrap.sh test).
. "$SRC/tests/cli/lib.sh"
command -v promtool >/dev/null || fail "promtool is needed (apt-get install --no-install-recommends prometheus; scripts/bootstrap.sh test)"
expect_status 0 promtool check rules "$SRC/contrib/prometheus/pfi-rules.yml"
contains "$T/out" "SUCCESS: 9 rules found"
for f in "$SRC"/contrib/prometheus/tests/*.yml; do
  (cd "$(dirname "$f")" && promtool test rules "$(basename "$f")") >"$T/out" 2>&1 || { cat "$T/out" >&2; fail "promtool test rules $f"; }
  contains "$T/out" "SUCCESS"
done
# a rule that no longer matches what it tests is caught: a broken copy fails
sed 's/pfi_ctl_event_met == 0/pfi_ctl_event_met == 2/' "$SRC/contrib/prometheus/pfi-rules.yml" >"$T/pfi-rules.yml"
mkdir -p "$T/tests"; sed 's#\.\./pfi-rules\.yml#../pfi-rules.yml#' "$SRC/contrib/prometheus/tests/pfi-rules-test.yml" >"$T/tests/t.yml"
(cd "$T/tests" && promtool test rules t.yml) >"$T/out" 2>&1 && fail "a broken PfiEventNotMet passed its test"; ok
contains "$T/out" "PfiEventNotMet"
done_ok
