#!/bin/sh
# test_vtn_forms.sh — pfi-controller's VEN against VTNs that refuse or
# challenge what it asks, each a mode of tests/tools/mock_vtn.py (issue 42;
# the sources of each behaviour are cited in the mock's header). In every
# mode pfi must act on an event the VTN serves (its caps lowered) and report
# it (a REPORT the VTN accepts); before issue 42 the first three never
# polled at all:
#   A. the webhook echo challenge, query form (3.1.1 Definition "Webhooks"),
#      and a token whose expires_in is a string;
#   B. the Alliance's reference VTN's forms: the echo challenge's path form,
#      timestamps without an offset; a VTN whose pages are shorter than the
#      limit asked (the listing goes on); two values now (two steps, each
#      reported under the event's id and its interval's), three over PT3H;
#   C. a VTN without webhooks (501 to /subscriptions), rate-limiting its
#      first polls (429 with Retry-After 3: honoured, not 1 s);
#   D. POST /vens refused (409) while the VTN holds our VEN object under
#      another name, with targets granted by its business logic (the event
#      is for those targets: ours);
#   E. OpenADR 3.0.1 polled without program_id: the REPORT names the
#      event's own programID.
. "$SRC/tests/cli/lib.sh"
: "${PFI_AGENT:?}"
CTL=${PFI_CONTROLLER_BIN:-$(dirname "$PFI_AGENT")/pfi-controller}
printf 'pfi-ven-client\n' >"$T/cid"
printf 'pfi-ven-secret\n' >"$T/csecret"
chmod 600 "$T/cid" "$T/csecret"
kill_daemons_on_exit "${KEEP:+cp -r \"\$T\" \"\$KEEP\"}"

# event FILE ID START VERSION [TARGETS_JSON]: one event of program prog-1,
# an hour from START, a limit of 1 kW
event() {
  tg=${5:-[]}
  ot=; [ "$4" = 3.0.1 ] && ot='"objectType":"EVENT",'
  printf '{%s"id":"%s","programID":"prog-1","createdDateTime":"2026-07-01T08:00:00Z","modificationDateTime":"2026-07-01T08:00:00Z","targets":%s,"intervalPeriod":{"start":"%s","duration":"PT1H"},"intervals":[{"id":0,"payloads":[{"type":"IMPORT_CAPACITY_LIMIT","values":[1.0]}]}]}\n' \
    "$ot" "$2" "$tg" "$3" >"$1.tmp"
  mv "$1.tmp" "$1"
}

# up NAME VERSION CALLBACK(0|1) OPENADR_EXTRA MOCK_ARGS...: a mock VTN, an
# agent with one job, a relay to the controller's webhook (the callback URL
# must be known before the controller binds port 0) and the controller
up() {
  N=$1 VER=$2 CB=$3 EXTRA=$4; shift 4
  S=$T/$N V=$T/$N/vtn
  mkdir -p "$V/events"
  new_token "$S/atok" "$S/ctok"
  : >"$S/ctl.log"
  start_daemon "mock VTN ($N)" "$S/vtn.log" "$S/vtn.port" python3 "$SRC/tests/tools/mock_vtn.py" \
    --port-file "$S/vtn.port" --state "$V" --version "$VER" \
    --client-id pfi-ven-client --client-secret pfi-ven-secret --strict-reports "$@"
  VPID=$DPID VTN=http://127.0.0.1:$DPORT
  HW=$S/hw.json
  start_daemon "agent ($N)" "$S/a.log" "$S/a.port" "$PFI_AGENT" \
    --backend "sim:gpus=4,job=j1:moe-ft-qwen30ba3b-x8@0-3,load=0,steplogs=$S,state=$HW" \
    --listen 127.0.0.1:0 --port-file "$S/a.port" --token-file "$S/atok" --state-file "$S/a.state" \
    --interval 0.5 --log "$S/a.log"
  APID=$DPID AP=$DPORT
  CBJ= RPID=
  if [ "$CB" = 1 ]; then
    start_daemon "relay ($N)" "$S/relay.log" "$S/relay.port" python3 "$SRC/tests/tools/tcp_relay.py" \
      --port-file "$S/relay.port" --to-port-file "$S/c.port"
    RPID=$DPID
    CBJ="\"callback_url\": \"http://127.0.0.1:$DPORT/openadr3/events\", \"callback_token_file\": \"$S/cbtok\","
  fi
  CFGV=$([ "$VER" = 3.1.1 ] && echo 3.1 || echo 3.0.1)
  cat >"$S/ctl.json" <<EOF
{"listen": "127.0.0.1:0", "token_file": "$S/ctok", "db": "$S/ctl.db", "control_period_s": 0.5,
 "baseline_window_s": 2, "ramp_s": 0, "ramp_down_s": 0, "lease_s": 30, "tiers": {"j1": 3},
 "openadr": {"version": "$CFGV", "vtn_url": "$VTN", "client_id_file": "$T/cid",
             "client_secret_file": "$T/csecret", "ven_name": "pfi-test-ven", $CBJ $EXTRA
             "poll_s": ${POLL:-2}, "report_interval_s": 2},
 "agents": [{"name": "n1", "url": "http://127.0.0.1:$AP", "token_file": "$S/atok"}]}
EOF
  start_daemon "controller ($N)" "$S/ctl.log" "$S/c.port" "$CTL" --config "$S/ctl.json" --port-file "$S/c.port"
  CPID=$DPID URL=http://127.0.0.1:$DPORT
}
down() { for p in $CPID $RPID $APID $VPID; do stop_daemon "$p"; done; }
# run X: whether scenario X runs (PFI_VTN_FORMS="A C" runs those only: to
# show each failing on an older controller, PFI_CONTROLLER_BIN)
run() { case " ${PFI_VTN_FORMS:-A B C D E} " in *" $1 "*) return 0;; esac; return 1; }
status() { curl -s -m 5 "$URL/v1/status" >"$S/status"; }
# vtn_field KEY: /v1/status's vtn.KEY
vtn_field() { status; python3 -c 'import json,sys; v=json.load(open(sys.argv[1]))["vtn"][sys.argv[2]]; print(json.dumps(v) if not isinstance(v, str) else v)' "$S/status" "$1"; }
ev_is() { curl -s -m 5 "$URL/v1/events/$1" | grep -q "\"status\":\"$2\""; }
# acts_and_reports ID: the event of that id active, the caps lowered, a
# REPORT of it accepted by the (strict) VTN
acts_and_reports() {
  EID=$1 # (wait_for's own $1 is its deadline)
  wait_for 60 "$EID active ($N)" 'ev_is "$EID" active'; ok
  wait_for 30 "the caps lowered ($N)" 'num "$(hw_cap 0)" "<" 700'; ok
  wait_for 60 "a report of $EID accepted ($N)" '[ -e "$V/reports/001.json" ]'; ok
  contains "$V/reports/001.json" "\"eventID\":\"$EID\""
  [ -z "$(ls "$V/refused" 2>/dev/null)" ] || { cat "$V/refused"/* >&2; fail "a report refused ($N)"; }; ok
}

if run A; then
# ---- A: echo challenge (query), expires_in as a string ----
up A 3.1.1 1 '"program_id": "prog-1",' --echo-challenge query --expires-in-string --expires-in 3600
event "$V/events/a1.json" a1 0001-01-01T00:00:00Z 3.1.1
acts_and_reports a1
contains "$S/vtn.log" "POST /subscriptions -> 201"
grep -q "mock_vtn: echo challenge http://127.0.0.1:[0-9]*/openadr3/events?echo=.* -> 200 echoed" "$S/vtn.log" ||
  fail "no echo challenge answered (A)"; ok
contains "$S/ctl.log" "VTN: subscribed to EVENT"
[ "$(vtn_field subscribed)" = yes ] || fail "A: vtn.subscribed $(vtn_field subscribed)"; ok
num "$(metric "$URL" pfi_ctl_vtn_echo_challenges_total)" ">=" 1 || fail "A: echo counter"; ok
curl -s -m 5 "$URL/metrics" | grep -q '^pfi_ctl_vtn_nonconformant_accepted_total{kind="expires_in_string"} [1-9]' ||
  fail "A: expires_in as a string not counted"; ok
# the challenge answered only for unreserved characters, and open (no token)
c=$(curl -s -o "$S/body" -w '%{http_code}' -m 5 "$URL/openadr3/events?echo=abc.DEF_1-~")
[ "$c" = 200 ] && [ "$(cat "$S/body")" = "abc.DEF_1-~" ] || fail "A: echo: $c $(cat "$S/body")"; ok
curl -s -D "$S/hdr" -o /dev/null -m 5 "$URL/openadr3/events/echo?echo=x1"
grep -qi '^content-type: text/plain' "$S/hdr" && grep -qi '^x-content-type-options: nosniff' "$S/hdr" ||
  { cat "$S/hdr" >&2; fail "A: the echo's headers"; }; ok
for bad in '%3Cscript%3E' '' "$(head -c 257 /dev/zero | tr '\0' a)"; do
  c=$(curl -s -o /dev/null -w '%{http_code}' -m 5 "$URL/openadr3/events?echo=$bad")
  [ "$c" = 400 ] || fail "A: echo '$bad' answered $c"; ok
done
down
fi

if run B; then
# ---- B: the reference VTN's forms: echo challenge (path form), timestamps
# without an offset; pages shorter than the limit; a multi-value payload ----
up B 3.1.1 1 '"program_id": "prog-1",' --echo-challenge path --short-pages 2 --local-timestamps
# b1: stamped without an offset; two values over PT16S now, interval id 7:
# two steps (b1.0, b1.1), each reported under the VTN's event id and the
# interval's own id (User Guide 7.3)
# (each edited event is written beside the VTN's folder and moved in whole:
# a poll between the write and the edit would serve another version)
event "$S/b1.json" b1 0001-01-01T00:00:00Z 3.1.1
sed -i 's/"createdDateTime":"[^"]*","modificationDateTime":"[^"]*"/"createdDateTime":"2026-03-20 14:58:51","modificationDateTime":"2026-03-20 14:58:51"/; s/"PT1H"/"PT16S"/; s/"values":\[1.0\]/"values":[1.0,1.2]/; s/"intervals":\[{"id":0,/"intervals":[{"id":7,/' "$S/b1.json"
mv "$S/b1.json" "$V/events/b1.json"
for i in 2 3 4; do event "$V/events/b$i.json" "b$i" "2030-02-0${i}T00:00:00Z" 3.1.1; done
# three values over PT3H: three steps of an hour (User Guide 7.3)
event "$S/b5.json" b5 2030-02-05T00:00:00Z 3.1.1
sed -i 's/"PT1H"/"PT3H"/; s/"values":\[1.0\]/"values":[3.0,2.0,1.0]/' "$S/b5.json"
mv "$S/b5.json" "$V/events/b5.json"
wait_for 60 "b1.0 active (B)" 'ev_is b1.0 active'; ok
wait_for 30 "the caps lowered (B)" 'num "$(hw_cap 0)" "<" 700'; ok
sub_reported() { grep -l "\"reportName\":\"pfi b1.$1#" "$V/reports/"*.json 2>/dev/null | head -1; }
wait_for 60 "reports of both of b1's sub-intervals" '[ -n "$(sub_reported 0)" ] && [ -n "$(sub_reported 1)" ]'; ok
for k in 0 1; do
  f=$(sub_reported $k)
  contains "$f" '"eventID":"b1"'
  contains "$f" '"intervals":[{"id":7,'
done
[ -z "$(ls "$V/refused" 2>/dev/null)" ] || { cat "$V/refused"/* >&2; fail "a report refused (B)"; }; ok
curl -s -m 5 "$URL/metrics" | grep -q '^pfi_ctl_vtn_nonconformant_accepted_total{kind="local_timestamp"} 1$' ||
  fail "B: the offset-less timestamp not counted once"; ok
for k in 0 1 2; do
  curl -s -m 5 "$URL/v1/events/b5.$k" >"$S/ev"
  contains "$S/ev" "\"start\":\"2030-02-05T0$k:00:00Z\""
  contains "$S/ev" '"duration_s":3600'
  grep -Eq "\"target_kw\":$((3 - k))(\.0)?[,}]" "$S/ev" || fail "B: b5.$k's target: $(cat "$S/ev")"; ok
done
grep -q "mock_vtn: echo challenge http://127.0.0.1:[0-9]*/openadr3/events/echo?echo=.* -> 200 echoed" "$S/vtn.log" ||
  fail "no echo challenge (path form) answered (B)"; ok
wait_for 30 "the five events listed through pages of 2 (B)" 'grep -qF "VTN: polled events: 5 listed" "$S/ctl.log"'; ok
ev_is b5.2 scheduled || fail "B: b5, on the third page, not booked"; ok
down
fi

if run C; then
# ---- C: no webhooks (501), 429 with Retry-After (3 s, under poll_s 5: not the 1 s backoff) ----
POLL=5
up C 3.1.1 1 '"program_id": "prog-1",' --no-webhooks 501 --rate-limit 2 --retry-after 3
event "$V/events/c1.json" c1 0001-01-01T00:00:00Z 3.1.1
acts_and_reports c1
contains "$S/ctl.log" "the VTN takes no webhooks; polling every 5 s instead"
[ "$(vtn_field subscribed)" = off ] || fail "C: vtn.subscribed $(vtn_field subscribed)"; ok
[ "$(grep -c "/subscriptions" "$S/vtn.log")" = 1 ] || { grep subscriptions "$S/vtn.log" >&2; fail "C: subscriptions asked again"; }; ok
curl -s -m 5 "$URL/metrics" | grep -q '^pfi_ctl_vtn_nonconformant_accepted_total{kind="subscription_refused"} 1$' ||
  fail "C: the refused subscription not counted"; ok
[ "$(grep -c "GET /events?.* -> 429" "$S/vtn.log")" = 2 ] || fail "C: two polls rate-limited"; ok
contains "$S/ctl.log" "VTN GET /events: GET /events: HTTP 429"
grep -q "warning: VTN GET /events: .*HTTP 429.*; again in 3 s" "$S/ctl.log" || { grep 429 "$S/ctl.log" >&2; fail "C: Retry-After not honoured"; }; ok
[ "$(metric "$URL" pfi_ctl_vtn_retry_after_seconds)" = 3 ] || fail "C: retry_after gauge"; ok
num "$(metric "$URL" pfi_ctl_vtn_last_poll_success_timestamp_seconds)" ">" 1700000000 || fail "C: last poll"; ok
# a new event at a VTN without webhooks: acted on at the next poll (printed;
# held to 3 polls, a margin for a loaded machine)
t0=$(date +%s.%N)
event "$V/events/c2.json" c2 0001-01-01T00:00:00Z 3.1.1
wait_for 15 "c2 active (C)" 'ev_is c2 active'; ok
dt=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b - a}')
echo "measured: an event added at a VTN without webhooks active after $dt s (poll_s 5)"
down
fi
POLL=2

if run D; then
# ---- D: POST /vens 409, the VEN found by listing, its granted targets ----
up D 3.1.1 0 '"program_id": "prog-1",' --vens-refuse 409 --ven-targets group1
event "$V/events/d1.json" d1 0001-01-01T00:00:00Z 3.1.1 '["group1"]'
acts_and_reports d1
contains "$S/ctl.log" "the only VEN the VTN lists is ours: venName bl-ven-1 (id bl-ven-1-id)"
[ "$(vtn_field ven_name_listed)" = bl-ven-1 ] || fail "D: ven_name_listed"; ok
[ "$(vtn_field registered)" = yes ] || fail "D: registered"; ok
contains "$S/vtn.log" "GET /vens/bl-ven-1-id -> 200"
lacks "$S/ctl.log" "its targets name neither"
down
fi

if run E; then
# ---- E: 3.0.1 polled without program_id: the event's programID reported ----
up E 3.0.1 0 ''
event "$V/events/e1.json" e1 0001-01-01T00:00:00Z 3.0.1
acts_and_reports e1
contains "$V/reports/001.json" '"programID":"prog-1"'
down
fi
done_ok
