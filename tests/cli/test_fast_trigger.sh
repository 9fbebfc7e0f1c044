#!/bin/sh
# test_fast_trigger.sh — fast trigger datagrams (docs/agent.md, "Fast trigger
# datagrams"; fast_trigger.h): a controller's PUT /v1/caps in one UDP
# datagram, keyed by the agent's control token. Datagrams are made here by a
# separate implementation of the layout (Python's hmac), so the agent is
# checked against the documented format, not against its own encoder:
#  - the agent offers its port in GET /v1/control (the listener's number, in
#    UDP); --no-fast-trigger and an agent without a token offer none;
#  - a valid datagram sets the caps and is answered 200 with a valid MAC;
#    the same datagram again (a replay), another token, a seq 10 s old and
#    a malformed datagram are dropped without an answer and counted; a body
#    PUT would refuse is answered with PUT's status and error;
#  - a view request (GET /v1/control in a datagram) is answered with the
#    view; datagrams keyed by the read token (views or caps) are dropped: a
#    read token's holder must not forge views nor spend the seqs;
#  - an HTTP PUT /v1/caps makes every datagram sent before it stale (a
#    datagram held back by the network cannot undo the PUT); a restarted
#    agent takes nothing sent before it started;
#  - a controller with one agent that takes datagrams, one that does not
#    offer them and a fixture that offers a port but never answers: a
#    trigger reaches the first by datagram, the second by HTTP, and the
#    third by HTTP once its datagram's deadline (fast_trigger_ack_s) passed;
#  - a controller with a 0.2 s period reads its agents' views by datagram
#    (every 16th period by HTTP), also from an agent with a read token (its
#    datagrams keyed by the control token).
. "$SRC/tests/cli/lib.sh"
: "${PFI_AGENT:?}"
CTL=${PFI_CONTROLLER_BIN:-$(dirname "$PFI_AGENT")/pfi-controller}
new_token "$T/atok" "$T/ctok" "$T/other"
PY=/usr/bin/python3

start_daemon "agent 1" "$T/a1.log" "$T/a1.port" "$PFI_AGENT" --log-level debug \
  --backend "sim:gpus=8,job=job1:dense-pt-llama70b-x8-compile@0-7,load=0,seed=1" \
  --listen 127.0.0.1:0 --port-file "$T/a1.port" --token-file "$T/atok" --state-file "$T/a1.state" \
  --interval 1 --log "$T/a1.log"
P1=$DPORT
start_daemon "agent 2" "$T/a2.log" "$T/a2.port" "$PFI_AGENT" \
  --backend "sim:gpus=8,job=job2:moe-ft-qwen30ba3b-x8@0-7,load=0,seed=2" --no-fast-trigger \
  --listen 127.0.0.1:0 --port-file "$T/a2.port" --token-file "$T/atok" --state-file "$T/a2.state" \
  --interval 1 --log "$T/a2.log"
P2=$DPORT
start_daemon "agent 3 (no token)" "$T/a3.log" "$T/a3.port" "$PFI_AGENT" --backend sim:gpus=2 \
  --listen 127.0.0.1:0 --port-file "$T/a3.port" --state-file "$T/a3.state" --log "$T/a3.log"
P3=$DPORT

# ---- the port each offers ----
view() { curl -s -m 5 -H "Authorization: Bearer $(cat "$T/atok")" "http://127.0.0.1:$1/v1/control"; }
[ "$(view "$P1" | $PY -c 'import json,sys; print(json.load(sys.stdin).get("fast_trigger_port"))')" = "$P1" ] \
  || fail "agent 1 does not offer fast trigger datagrams on its port $P1"
ok
grep -q "fast trigger datagrams on udp port $P1" "$T/a1.log" || fail "agent 1's log"; ok
view "$P2" | grep -q fast_trigger_port && fail "agent 2 (--no-fast-trigger) offers a port"
ok
view "$P3" | grep -q fast_trigger_port && fail "agent 3 (no token) offers a port"
ok
grep -q "fast trigger datagrams: off (no --token-file" "$T/a3.log" || fail "agent 3's log"; ok

# ---- datagrams made here: dg.py TOKENFILE PORT SEQ BODY [--raw HEX] -> "STATUS BODY" or "none" ----
cat >"$T/dg.py" <<'PY'
import hashlib, hmac, socket, struct, sys, time
tok, port, seq, body = open(sys.argv[1]).read().strip().encode(), int(sys.argv[2]), sys.argv[3], sys.argv[4].encode()
seq = int(time.time() * 1e6) + int(seq[3:] or 0) if seq.startswith("now") else int(seq)
hdr = b"PFIT" + bytes([1]) + __import__("os").environ.get("DG_TYPE", "C").encode() + struct.pack(">HQ", 0, seq)
d = hdr + hmac.new(tok, hdr + body, hashlib.sha256).digest() + body
if len(sys.argv) > 5: d = bytes.fromhex(sys.argv[6]) if sys.argv[5] == "--raw" else d
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(float(__import__("os").environ.get("DG_WAIT", "3")))
s.sendto(d, ("127.0.0.1", port))
open(sys.argv[1] + ".last", "wb").write(d)
try:
    a = s.recv(2000)
except socket.timeout:
    print("none"); sys.exit(0)
ah, mac, ab = a[:16], a[16:48], a[48:]
assert ah[:6] == b"PFIT\x01A", ah
assert struct.unpack(">Q", ah[8:16])[0] == seq, "the answer's seq is not the request's"
assert hmac.compare_digest(mac, hmac.new(tok, ah + ab, hashlib.sha256).digest()), "the answer's MAC"
print(struct.unpack(">H", ah[6:8])[0], ab.decode())
PY
caps() { curl -s -m 5 "http://127.0.0.1:$1/v1/node" | $PY -c 'import json,sys; print(" ".join("%g" % g["cap_w"] for g in json.load(sys.stdin)["gpus"]))'; }
counter() { curl -s -m 5 "http://127.0.0.1:$P1/metrics" | sed -n "s/^pfi_agent_fast_trigger_datagrams_total{result=\"$1\"} //p"; }
BODY='{"lease_s":30,"controller":"dg-test","generation":1,"jobs":[{"job_id":"job1","cap_w":400}]}'
out=$($PY "$T/dg.py" "$T/atok" "$P1" now "$BODY")
[ "$out" = '200 {"ok":true}' ] || fail "a valid datagram was answered '$out'"
ok
# /v1/node shows the caps as the last sample read them (every second)
wait_for 5 "agent 1 at 400 W per GPU" '[ "$(caps "$P1")" = "400 400 400 400 400 400 400 400" ]'
[ "$(counter taken)" = 1 ] || fail "taken counter"; ok
grep -q "fast trigger datagram from 127.0.0.1:[0-9]*: 200" "$T/a1.log" || fail "agent 1 did not log the datagram"
ok
# the same bytes again: a replay, dropped without an answer
out=$(DG_WAIT=1 $PY "$T/dg.py" "$T/atok" "$P1" now "$BODY" --raw "$(od -An -tx1 -v "$T/atok.last" | tr -d ' \n')")
[ "$out" = none ] || fail "a replayed datagram was answered: $out"
ok
wait_for 5 "the replay counted stale" '[ "$(counter stale)" = 1 ]'
# another token: dropped, counted bad, logged (once a minute at most)
out=$(DG_WAIT=1 $PY "$T/dg.py" "$T/other" "$P1" now "$BODY")
[ "$out" = none ] || fail "a datagram with another token was answered: $out"
ok
wait_for 5 "the forged datagram counted bad" '[ "$(counter bad)" = 1 ]'
grep -q "warning: fast trigger datagram from 127.0.0.1:[0-9]* dropped: .*seq [0-9]* is not above the last taken" "$T/a1.log" \
  || fail "the replay's log line"
ok
# 10 s old (held back): stale
out=$(DG_WAIT=1 $PY "$T/dg.py" "$T/atok" "$P1" now-10000000 "$BODY")
[ "$out" = none ] || fail "a datagram 10 s old was answered: $out"
ok
wait_for 5 "the old datagram counted stale" '[ "$(counter stale)" = 2 ]'
# not a datagram of ours at all
out=$(DG_WAIT=1 $PY "$T/dg.py" "$T/atok" "$P1" now "$BODY" --raw 00112233)
[ "$out" = none ] || fail "garbage was answered: $out"
ok
wait_for 5 "garbage counted bad" '[ "$(counter bad)" = 2 ]'
# what PUT refuses: the same status and error
out=$($PY "$T/dg.py" "$T/atok" "$P1" now '{"lease_s":30,"controller":"dg-test","generation":1,"jobs":[{"job_id":"job1","cap_w":10}]}')
case "$out" in "422 "*"outside the device"*) ok ;; *) fail "a cap below the device's minimum was answered '$out'" ;; esac
[ "$(counter refused)" = 1 ] || fail "refused counter"; ok
[ "$(caps "$P1")" = "400 400 400 400 400 400 400 400" ] || fail "a refused datagram changed caps: $(caps "$P1")"
ok
# the caps go back when the datagram's lease ends, as PUT's: hand them back now
out=$($PY "$T/dg.py" "$T/atok" "$P1" now '{"lease_s":1,"controller":"dg-test","generation":2}')
[ "$out" = '200 {"ok":true}' ] || fail "release by datagram: $out"
ok
wait_for 10 "agent 1 back at its baseline" '[ "$(caps "$P1")" = "700 700 700 700 700 700 700 700" ]'

# ---- an HTTP PUT makes older datagrams stale: one sent 0.5 s ago, after a PUT now ----
[ "$(curl -s -m 5 -o /dev/null -w '%{http_code}' -X PUT -H "Authorization: Bearer $(cat "$T/atok")" \
  --data-binary '{"lease_s":30,"controller":"dg-test","generation":3,"jobs":[{"job_id":"job1","cap_w":450}]}' \
  "http://127.0.0.1:$P1/v1/caps")" = 200 ] || fail "HTTP PUT"
ok
out=$(DG_WAIT=1 $PY "$T/dg.py" "$T/atok" "$P1" now-500000 '{"lease_s":30,"controller":"dg-test","generation":3,"jobs":[{"job_id":"job1","cap_w":300}]}')
[ "$out" = none ] || fail "a datagram sent before an HTTP PUT was answered: $out"
ok
wait_for 5 "the older datagram counted stale" '[ "$(counter stale)" = 3 ]'
wait_for 5 "agent 1 still at the PUT's 450 W" '[ "$(caps "$P1")" = "450 450 450 450 450 450 450 450" ]'
out=$($PY "$T/dg.py" "$T/atok" "$P1" now '{"lease_s":1,"controller":"dg-test","generation":4}')
[ "$out" = '200 {"ok":true}' ] || fail "release after the PUT: $out"
ok

# ---- a restart: nothing sent before the agent started is taken ----
before_us=$(( $(date +%s%N) / 1000 ))
start_daemon "agent 5" "$T/a5.log" "$T/a5.port" "$PFI_AGENT" --backend sim:gpus=2 --listen 127.0.0.1:0 \
  --port-file "$T/a5.port" --token-file "$T/atok" --state-file "$T/a5.state" --log "$T/a5.log"
P5=$DPORT
out=$(DG_WAIT=1 DG_TYPE=V $PY "$T/dg.py" "$T/atok" "$P5" "$before_us" '{}')
[ "$out" = none ] || fail "a datagram sent before the agent started was answered: $out"
ok
out=$(DG_TYPE=V $PY "$T/dg.py" "$T/atok" "$P5" now '{}')
case "$out" in '200 {"generation_max":'*) ok ;; *) fail "a fresh view request after the start: '$out'" ;; esac

# ---- view requests: GET /v1/control in a datagram, keyed by the control token only ----
out=$(DG_TYPE=V $PY "$T/dg.py" "$T/atok" "$P1" now '{"path":"/v1/control"}')
case "$out" in '200 {"generation_max":'*'"fast_trigger_port":'"$P1"*'"job_id":"job1"'*) ok ;;
  *) fail "a view request was answered '$out'" ;; esac
[ "$(counter view)" = 1 ] || fail "view counter"; ok
# agent 1 has no read token: a view keyed by another token is dropped
out=$(DG_WAIT=1 DG_TYPE=V $PY "$T/dg.py" "$T/other" "$P1" now '{}')
[ "$out" = none ] || fail "a view request with another token was answered: $out"
ok
new_token "$T/rtok"
start_daemon "agent 4 (read token)" "$T/a4.log" "$T/a4.port" "$PFI_AGENT" \
  --backend "sim:gpus=8,job=job4:dense-pt-llama70b-x8-compile@0-7,load=0,seed=4" \
  --listen 127.0.0.1:0 --port-file "$T/a4.port" --token-file "$T/atok" --read-token-file "$T/rtok" \
  --state-file "$T/a4.state" --interval 1 --log "$T/a4.log"
P4=$DPORT
out=$(DG_WAIT=1 DG_TYPE=V $PY "$T/dg.py" "$T/rtok" "$P4" now '{}')
[ "$out" = none ] || fail "a view keyed by the read token was answered: $out"
ok
out=$(DG_WAIT=1 $PY "$T/dg.py" "$T/rtok" "$P4" now '{"lease_s":30,"controller":"x","generation":1,"jobs":[{"job_id":"job4","cap_w":400}]}')
[ "$out" = none ] || fail "caps keyed by the read token were answered: $out"
ok

# ---- a fixture agent that offers a port and never answers on it ----
cat >"$T/mute.py" <<'PY'
import json, os, socket, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
port_file, put_file = sys.argv[1], sys.argv[2]
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.bind(("127.0.0.1", 0))  # takes datagrams, answers none
gpus = [[200.0, 700.0, 700.0] for i in range(8)]
view = {"generation_max": 0, "fast_trigger_port": u.getsockname()[1], "gpus": gpus,
        "jobs": [{"job_id": "mutejob", "gpus": list(range(8)), "power_w": 4800.0}]}
class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def answer(self, body):
        b = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)
    def do_GET(self):
        if self.path == "/v1/control": self.answer(view)
        else: self.send_error(404)
    def do_PUT(self):
        b = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        with open(put_file, "ab") as f: f.write(b + b"\n")
        self.answer({"ok": True})
s = ThreadingHTTPServer(("127.0.0.1", 0), H)
s.daemon_threads = True
with open(port_file + ".tmp", "w") as f: f.write(str(s.server_address[1]))
os.rename(port_file + ".tmp", port_file)
s.serve_forever()
PY
start_daemon "mute fixture agent" "$T/mute.log" "$T/mute.port" $PY "$T/mute.py" "$T/mute.port" "$T/mute.puts"
PM=$DPORT

printf '{"listen": "127.0.0.1:0", "token_file": "%s/ctok", "db": "%s/ctl.db", "control_period_s": 30,
 "baseline_window_s": 60, "lease_s": 90, "ramp_s": 0, "default_tier": 3, "fast_trigger_ack_s": 0.3,
 "agents": [{"name": "n1", "url": "http://127.0.0.1:%s", "token_file": "%s/atok"},
            {"name": "n2", "url": "http://127.0.0.1:%s", "token_file": "%s/atok"},
            {"name": "mute", "url": "http://127.0.0.1:%s", "token_file": "%s/atok"}]}\n' \
  "$T" "$T" "$P1" "$T" "$P2" "$T" "$PM" "$T" >"$T/ctl.json"
start_daemon controller "$T/ctl.log" "$T/c.port" "$CTL" --config "$T/ctl.json" --port-file "$T/c.port"
URL=http://127.0.0.1:$DPORT
wait_for 30 "the first period with 3 agents up" \
  'num "$(metric "$URL" pfi_ctl_cycles_total)" ">=" 1 && [ "$(metric "$URL" pfi_ctl_agents_up)" = 3 ]'
taken0=$(counter taken)
[ "$(curl -s -m 10 -o "$T/body" -w '%{http_code}' -X POST -H "Authorization: Bearer $(cat "$T/ctok")" \
  --data-binary '{"level": 2, "id": "ft-1"}' "$URL/v1/trigger")" = 201 ] || { cat "$T/body" >&2; fail "POST /v1/trigger"; }
ok
wait_for 15 "the trigger's summary" 'grep -q "trigger ft-1: caps pushed to 3 agents" "$T/ctl.log"'
grep "trigger ft-1\|datagram" "$T/ctl.log"
grep -q "trigger ft-1: caps pushed to 3 agents in .* ms (1 by datagram; 0 failed)" "$T/ctl.log" \
  || fail "not 1 of 3 agents by datagram with none failed"
ok
grep -q "trigger ft-1: 1 agents did not answer the datagram within 300 ms: their caps go by HTTP" "$T/ctl.log" \
  || fail "the mute agent's fall back to HTTP was not logged"
ok
wait_for 10 "the mute fixture's PUT" 'grep -q mutejob "$T/mute.puts" 2>/dev/null'
num "$(counter taken)" ">" "$taken0" || fail "agent 1 did not take the trigger by datagram (taken $(counter taken))"
ok
grep -q "fast trigger datagram from 127.0.0.1:[0-9]*: 200" "$T/a1.log" || fail "agent 1's log"; ok
grep -q "fast trigger datagram" "$T/a2.log" && fail "agent 2 (--no-fast-trigger) got a datagram"
ok
wait_for 5 "agent 2 capped by HTTP" 'num "$(caps "$P2" | cut -d" " -f1)" "<" 699'
grep -q "lease granted: controller pfi-controller@" "$T/a2.log" || fail "agent 2's lease"; ok
# (the period the trigger's event starts may send caps by datagram too)
num "$(metric "$URL" 'pfi_ctl_fast_datagrams_total{kind="caps"}')" ">=" 2 || fail "datagrams sent counter"; ok
num "$(metric "$URL" 'pfi_ctl_fast_answers_total{kind="caps"}')" ">=" 1 || fail "datagrams answered counter"; ok
num "$(metric "$URL" 'pfi_ctl_fast_fallbacks_total{kind="caps"}')" ">=" 1 || fail "fallbacks counter"; ok

# ---- a period's views by datagram: a second controller, period 0.2 s, agents 1 and 4 (whose
# datagrams are keyed by the control token all the same) ----
printf '{"listen": "127.0.0.1:0", "token_file": "%s/ctok", "db": "%s/ctl2.db", "control_period_s": 0.2,
 "agents": [{"name": "n1", "url": "http://127.0.0.1:%s", "token_file": "%s/atok"},
            {"name": "n4", "url": "http://127.0.0.1:%s", "token_file": "%s/atok", "read_token_file": "%s/rtok"}]}\n' \
  "$T" "$T" "$P1" "$T" "$P4" "$T" "$T" >"$T/ctl2.json"
start_daemon "controller 2" "$T/ctl2.log" "$T/c2.port" "$CTL" --config "$T/ctl2.json" --port-file "$T/c2.port"
URL2=http://127.0.0.1:$DPORT
v4() { curl -s -m 5 -H "Authorization: Bearer $(cat "$T/rtok")" "http://127.0.0.1:$P4/metrics" | sed -n 's/^pfi_agent_fast_trigger_datagrams_total{result="view"} //p'; }
wait_for 30 "20 views answered by datagram" 'num "$(metric "$URL2" "pfi_ctl_fast_answers_total{kind=\"view\"}")" ">=" 20'
num "$(v4)" ">=" 8 || fail "agent 4 answered $(v4) view datagrams"
ok
[ "$(metric "$URL2" pfi_ctl_agents_up)" = 2 ] || fail "agents up with views by datagram"; ok
[ "$(metric "$URL2" 'pfi_ctl_fast_fallbacks_total{kind="view"}')" = 0 ] || fail "views fell back to HTTP"; ok
lacks "$T/ctl2.log" "unreachable"
done_ok
