#!/bin/sh
# test_failover_vtn.sh — the VTN side of a takeover (issue 45;
# src/daemon/controller/ctl_store_oadr.c): three etcd members, one
# agent, a mock VTN (tests/tools/mock_vtn.py, 3.1.1, strict reports) that
# stores each POST /reports at once and answers it 2 s later
# (--report-delay: the VEN cannot know whether a report it sent was taken),
# controllers ctl-a and ctl-b polling it. At clock scale 1.
#   - ctl-a leads, acts on the VTN's event and reports its intervals (6 s
#     each), each committed to the store as an intent before it is sent;
#   - ctl-a is killed while a POST /reports is in flight (stored by the VTN,
#     not answered);
#   - ctl-b takes over, asks the VTN for that report by its reportName
#     (GET /reports?eventID=&clientName=) and finds it: it is not sent
#     again; it sends the rest;
#   - the new leader polls the VTN's "now" event again and keeps its start
#     (the first receipt is in the store): its end does not move;
#   - each interval's sum and count of measured power is in the store
#     (PREFIX/agg/e1#k, ctl_store_agg.c); ctl-b takes them over and
#     continues them: the intervals ctl-a finished keep its counts, the one
#     the kill fell in keeps at least its count;
#   - at the end the VTN holds one report object per reportName, every
#     interval ctl-a kept is there, and no interval is missing (the
#     reports are built from the store's aggregates, not from the new
#     leader's own samples, which start at its takeover).
. "$SRC/tests/cli/lib.sh"
. "$SRC/tests/cli/etcd_lib.sh"
. "$SRC/tests/cli/failover_lib.sh"
: "${PFI_AGENT:?}"
CTL=${PFI_CONTROLLER_BIN:-$(dirname "$PFI_AGENT")/pfi-controller}
kill_daemons_on_exit "${KEEP:+cp -r \"\$T\" \"\$KEEP\"}"
new_token "$T/atok" "$T/ctok"
printf 'pfi-ven-client\n' >"$T/cid"
printf 'pfi-ven-secret\n' >"$T/csecret"
chmod 600 "$T/cid" "$T/csecret"
etcd_cluster 3

V=$T/vtn
mkdir -p "$V/events"
start_daemon "mock VTN" "$T/vtn.log" "$T/vtn.port" python3 "$SRC/tests/tools/mock_vtn.py" \
  --port-file "$T/vtn.port" --state "$V" --version 3.1.1 --client-id pfi-ven-client \
  --client-secret pfi-ven-secret --strict-reports --report-delay 2
VTN=http://127.0.0.1:$DPORT
start_daemon agent "$T/a.log" "$T/a.port" "$PFI_AGENT" \
  --backend "sim:gpus=4,job=j1:moe-ft-qwen30ba3b-x8@0-3,load=0,steplogs=$T,state=$T/hw.json" \
  --listen 127.0.0.1:0 --port-file "$T/a.port" --token-file "$T/atok" --state-file "$T/a.state" \
  --interval 0.5 --log "$T/a.log"
AP=$DPORT
EPS_JSON=$(echo "$ETCD_EPS" | sed 's/[^,]*/"&"/g')
for n in a b; do
  cat >"$T/ctl-$n.json" <<EOF
{"listen": "127.0.0.1:0", "token_file": "$T/ctok", "db": "$T/ctl-$n.db", "control_period_s": 1,
 "baseline_window_s": 2, "ramp_s": 0, "ramp_down_s": 0, "lease_s": 15, "tiers": {"j1": 3}, "log": "$T/ctl-$n.log",
 "openadr": {"version": "3.1", "vtn_url": "$VTN", "client_id_file": "$T/cid",
             "client_secret_file": "$T/csecret", "ven_name": "pfi-test-ven", "program_id": "prog-1",
             "poll_s": 1, "report_interval_s": 6},
 "failover": {"etcd": [$EPS_JSON], "prefix": "/pfi/vtn/", "name": "ctl-$n", "ttl_s": 2, "timeout_s": 0.5},
 "agents": [{"name": "n1", "url": "http://127.0.0.1:$AP", "token_file": "$T/atok"}]}
EOF
done
nfiles() { ls "$V/reports" 2>/dev/null | grep -c '\.json$'; }

start_pair
# the event: now, 36 s, a limit of 1 kW (six report intervals of 6 s)
printf '{"id":"e1","programID":"prog-1","createdDateTime":"2026-07-01T08:00:00Z","modificationDateTime":"2026-07-01T08:00:00Z","targets":[],"intervalPeriod":{"start":"0001-01-01T00:00:00Z","duration":"PT36S"},"intervals":[{"id":0,"payloads":[{"type":"IMPORT_CAPACITY_LIMIT","values":[1.0]}]}]}\n' >"$T/e1.json"
mv "$T/e1.json" "$V/events/e1.json"
wait_for 30 "ctl-a acts on the event" 'curl -s -m 2 "$URL_a/v1/events/e1" | grep -q "\"status\":\"active\""'
# kill ctl-a while its second report is stored by the VTN and not yet answered
wait_for 40 "a report in flight" '[ "$(nfiles)" -ge 2 ] && [ "$(grep -c "VTN: report for event e1#[0-9]* accepted" "$T/ctl-a.log")" -lt "$(nfiles)" ]'
start_a=$(curl -s -m 2 "$URL_a/v1/events/e1" | sed -n 's/.*"start":"\([^"]*\)".*/\1/p')
dur_a=$(curl -s -m 2 "$URL_a/v1/events/e1" | sed -n 's/.*"duration_s":\([0-9.]*\).*/\1/p')
[ -n "$start_a" ] && [ -n "$dur_a" ] || fail "ctl-a's e1 has no start or duration"; ok
stop_daemon "$CPID_a" KILL
aggs() { etcdctl --endpoints="$ETCD_EPS" get --prefix /pfi/vtn/agg/ 2>/dev/null | paste - - | sed 's|^/pfi/vtn/agg/||'; }
aggs >"$T/agg_a"
# an interval's aggregate that is not "SUM COUNT": skipped and named by the new leader
etcdctl --endpoints="$ETCD_EPS" put '/pfi/vtn/agg/e1#99' 'NaN 3' >/dev/null 2>&1 || fail "etcdctl put"; ok
[ -s "$T/agg_a" ] || fail "no report aggregates in the store at the kill"; ok
sent_a=$(grep -c "VTN: report for event e1#[0-9]* accepted" "$T/ctl-a.log")
[ "$sent_a" -lt "$(nfiles)" ] || fail "no report in flight at the kill"; ok
grep -o "report for event e1#[0-9]* kept" "$T/ctl-a.log" | sed 's/.*#\([0-9]*\) kept/\1/' | sort -n >"$T/kept_a"
wait_for 15 "ctl-b leads" '[ "$(role "$URL_b")" = leader ]'
contains "$T/ctl-b.log" "not known answered: each asked of the VTN by name before it is sent"
wait_for 20 "ctl-b finds the report in flight at the VTN" 'grep -q "found at the VTN .*not sent again" "$T/ctl-b.log"'
contains "$T/vtn.log" "GET /reports?eventID=e1&clientName="
# the VTN's "now" event, polled again by the new leader, keeps the start the dead
# leader gave it (its first receipt, from the store): its end does not move
wait_for 10 "ctl-b polls the event again" '[ "$(grep -c "VTN: polled events" "$T/ctl-b.log")" -ge 1 ]'
start_b=$(curl -s -m 2 "$URL_b/v1/events/e1" | sed -n 's/.*"start":"\([^"]*\)".*/\1/p')
[ "$start_b" = "$start_a" ] || fail "e1 starts at $start_b at ctl-b, $start_a at ctl-a"; ok
dur_b=$(curl -s -m 2 "$URL_b/v1/events/e1" | sed -n 's/.*"duration_s":\([0-9.]*\).*/\1/p')
# (within 10 ms: a step's start is the clock when it was added, its end first receipt + 36 s)
awk -v a="$dur_a" -v b="$dur_b" 'BEGIN{d = a - b; exit !(b != "" && d < 0.01 && d > -0.01)}' ||
  fail "e1 lasts $dur_b s at ctl-b, $dur_a s at ctl-a"; ok

# ---- the event over, every report sent: one object per reportName, none of ctl-a's missing
wait_for 60 "the event over at ctl-b" 'curl -s -m 2 "$URL_b/v1/events/e1" | grep -q "\"status\":\"done\""'
wait_for 30 "the event's last report" 'grep -q "VTN: report for event e1#5 accepted\|VTN: report for event e1#5 found" "$T/ctl-b.log"'
contains "$T/ctl-b.log" "the reports' aggregates of"
contains "$T/ctl-b.log" "agg/e1#99: not \"SUM COUNT\"; skipped"
aggs >"$T/agg_b"
python3 - "$T/agg_a" "$T/agg_b" <<'EOF' || fail "the store's report aggregates"
import sys
def read(p):
    out = {}
    for line in open(p):
        key, val = line.rstrip("\n").split("\t")
        s, n = val.split()
        out[int(key.split("#")[1])] = float(n)
    return out
a, b = read(sys.argv[1]), read(sys.argv[2])
last = max(a)
for k, n in sorted(a.items()):
    if k < last and b.get(k) != n:
        sys.exit("interval %d: %s samples at the kill, %s after (ctl-b changed a finished interval)" % (k, n, b.get(k)))
    if k == last and not b.get(k, 0) >= n:
        sys.exit("interval %d: %s samples at the kill, %s after (not continued)" % (k, n, b.get(k)))
print("measured: samples per interval at the kill %s, at the end %s" % (a, b))
EOF
ok
python3 - "$V/reports" "$T/kept_a" <<'EOF' || fail "the VTN's reports"
import collections, json, os, sys
d, kept = sys.argv[1], [int(x) for x in open(sys.argv[2]).read().split()]
names = collections.Counter()
for f in sorted(os.listdir(d)):
    if f.endswith(".json"):
        names[json.load(open(os.path.join(d, f)))["reportName"]] += 1
dup = [n for n, k in names.items() if k > 1]
if dup:
    sys.exit("reports sent twice: %s" % dup)
got = sorted(int(n.rsplit("#", 1)[1]) for n in names)
missing = [k for k in kept if k not in got]
if missing:
    sys.exit("intervals ctl-a kept, not at the VTN: %s (got %s)" % (missing, got))
if [k for k in got if k >= 6]:
    sys.exit("reports of intervals past the event's 36 s: %s" % got)
if set(range(6)) - set(got):
    sys.exit("intervals missing: got %s" % got)
print("measured: %d report objects for 6 intervals, ctl-a kept %s, no reportName twice" % (len(got), kept))
EOF
ok
[ -z "$(ls "$V/refused" 2>/dev/null)" ] || { cat "$V/refused"/* >&2; fail "a report refused"; }; ok
done_ok
