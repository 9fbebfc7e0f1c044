#!/bin/sh
# test_demo_failover.sh — `pfi demo --failover` (issue 45): three etcd
# members and two controllers as local processes, the leader SIGKILLed a
# third into the event; the one line it prints: the standby took over
# (every agent under its lease) within 10 s, no cap lapsed back to its
# baseline meanwhile, and the event still met with every cap restored at
# the end. Label failover: etcd on the wall clock (its TTL is not scaled).
. "$SRC/tests/cli/lib.sh"
: "${PFI_AGENT:?}" "${PFI_CONTROLLER_BIN:?}"
command -v etcd >/dev/null || fail "etcd is needed: install the Debian package etcd-server (scripts/bootstrap.sh test)"
cd "$T" || fail "no temp dir"
# bounded: timeout(1) signals the demo's whole process group (its daemons too)
expect_status 0 timeout -k 10 "${DEMO_TIMEOUT_S:-300}" "$PFI" demo --failover --dir "$T/d" --keep
cp "$T/out" "$T/demo.out"
contains "$T/demo.out" "3 etcd members at http://127.0.0.1:"
contains "$T/demo.out" "failover: ctl-a leads at"
grep -E '^  failover: leader ctl-a SIGKILLed at \+[0-9.]+ min; ctl-b took over in [0-9.]+ s \(every agent under its lease\); 0 of 32 caps lapsed$' \
  "$T/demo.out" >"$T/line" || { cat "$T/demo.out" >&2; fail "no takeover line with 0 caps lapsed"; }; ok
s=$(sed 's/.*took over in \([0-9.]*\) s.*/\1/' "$T/line")
num "$s" "<" 10 || fail "takeover took $s s"; ok
contains "$T/demo.out" "MET (tolerance 2%)"
contains "$T/demo.out" "every GPU is back at its 700 W baseline"
contains "$T/d/controller-b.log" "took over at term 2"
done_ok
