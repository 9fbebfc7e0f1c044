#!/bin/sh
# test_trigger.sh — the trigger fast path (docs/controller.md, "Triggers"):
# POST /v1/trigger and an API event that starts now push the planned caps
# to every agent at once, long before the next control period (30 s here),
# and a slow agent holds up nobody. Two pfi-agents with simulated GPUs (the
# demo's jobs) and a fixture agent that answers /v1/node at first and then,
# once told, takes 5 s for every request. agent_timeout_s 3: the normal
# path (collect every agent, then push) cannot deliver before 3 s, so caps
# within 2 s of the POST came by the fast path; the slow agent's PUT misses
# its deadline and it is marked down. Strict validation of the endpoint;
# an agent under a *.localhost name.
# Real time (no time scale).
. "$SRC/tests/cli/lib.sh"
: "${PFI_AGENT:?}"
CTL=${PFI_CONTROLLER_BIN:-$(dirname "$PFI_AGENT")/pfi-controller}
new_token "$T/atok" "$T/ctok"
CTOK=$(cat "$T/ctok")

for n in 1 2; do
  job=$([ $n = 1 ] && echo dense-pt-llama70b-x8-compile || echo moe-ft-qwen30ba3b-x8)
  start_daemon "agent $n" "$T/a$n.log" "$T/a$n.port" "$PFI_AGENT" \
    --backend "sim:gpus=8,job=job$n:$job@0-7,load=0,seed=$n" \
    --listen 127.0.0.1:0 --port-file "$T/a$n.port" --token-file "$T/atok" --state-file "$T/a$n.state" \
    --interval 1 --log "$T/a$n.log"
done
P1=$(cat "$T/a1.port"); P2=$(cat "$T/a2.port")

# the fixture agent: one job of 8 GPUs; slow (5 s for every request) once $T/slow exists
cat >"$T/slow.py" <<'PY'
import json, os, sys, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
port_file, slow_flag = sys.argv[1], sys.argv[2]
gpus = [{"index": i, "uuid": "GPU-slow-%d" % i, "name": "fixture", "cap_min_w": 200.0,
         "cap_max_w": 700.0, "cap_default_w": 700.0, "cap_w": 700.0, "power_w": 600.0,
         "job_id": "slowjob"} for i in range(8)]
node = {"hostname": "slow", "backend": "fixture", "generation_max": 0, "gpus": gpus,
        "jobs": [{"job_id": "slowjob", "gpus": list(range(8)), "power_w": 4800.0}]}
class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def answer(self, body):
        if os.path.exists(slow_flag): time.sleep(5)
        b = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)
    def do_GET(self): self.answer(node)
    def do_PUT(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.answer({"ok": True})
s = ThreadingHTTPServer(("127.0.0.1", 0), H)
s.daemon_threads = True
with open(port_file + ".tmp", "w") as f: f.write(str(s.server_address[1]))
os.rename(port_file + ".tmp", port_file)
s.serve_forever()
PY
start_daemon "slow fixture agent" "$T/slow.log" "$T/slow.port" /usr/bin/python3 "$T/slow.py" "$T/slow.port" "$T/slow"
P3=$DPORT

# agent URLs: *.localhost is loopback (plain http allowed; curl resolves it itself), a name
# that merely starts with localhost is not
printf '{"agents": [{"url": "http://localhost.example.com:1", "token_file": "%s/atok"}]}\n' "$T" >"$T/bad.json"
expect_error 2 "agents[0].url: plain http to a non-loopback host" "$CTL" --config "$T/bad.json"
printf '{"listen": "127.0.0.1:0", "token_file": "%s/ctok", "db": "%s/ctl.db", "control_period_s": 30,
 "baseline_window_s": 60, "lease_s": 90, "ramp_s": 0, "default_tier": 3, "agent_timeout_s": 3,
 "agents": [{"name": "n1", "url": "http://127.0.0.1:%s", "token_file": "%s/atok"},
            {"name": "n2", "url": "http://n2.localhost:%s", "token_file": "%s/atok"},
            {"name": "slow", "url": "http://127.0.0.1:%s", "token_file": "%s/atok"}]}\n' \
  "$T" "$T" "$P1" "$T" "$P2" "$T" "$P3" "$T" >"$T/ctl.json"
start_daemon controller "$T/ctl.log" "$T/c.port" "$CTL" --config "$T/ctl.json" --port-file "$T/c.port"
URL=http://127.0.0.1:$DPORT
# the first period (at start) saw all three agents and their jobs: the plan exists
wait_for 30 "the first period with 3 agents up" \
  'num "$(metric "$URL" pfi_ctl_cycles_total)" ">=" 1 && [ "$(metric "$URL" pfi_ctl_agents_up)" = 3 ]'

# ---- validation: control token, one-line 400s naming the field ----
post() { curl -s -m 10 -o "$T/body" -w '%{http_code}' -X POST -H "Authorization: Bearer $CTOK" --data-binary "$1" "$URL/v1/trigger"; }
[ "$(curl -s -m 5 -o /dev/null -w '%{http_code}' -X POST --data-binary '{"level":1}' "$URL/v1/trigger")" = 401 ] \
  || fail "POST /v1/trigger without the token"
ok
for bad in '{"level": 4}|trigger.level' '{"level": 0}|trigger.level' '{"reduction_pct": 0}|trigger.reduction_pct' \
  '{"reduction_pct": 95}|trigger.reduction_pct' '{"level": 1, "reduction_pct": 5}|exactly one' '{}|exactly one' \
  '{"level": 1, "ramp_s": 10}|unknown field' '{"reduction_pct": "10"}|trigger.reduction_pct' '[1]|expected an object' \
  'nonsense|trigger: line 1' '{"level": 1, "id": "a b"}|id:'; do
  body=${bad%|*} want=${bad#*|}
  [ "$(post "$body")" = 400 ] || { cat "$T/body" >&2; fail "$body was not refused with 400"; }
  contains "$T/body" "$want"
  lines "$T/body" 1
done
[ "$(curl -s -m 5 -o /dev/null -w '%{http_code}' "$URL/v1/trigger")" = 405 ] || fail "GET /v1/trigger"; ok
[ "$(metric "$URL" pfi_ctl_triggers_total)" = 0 ] || fail "a refused trigger was counted"; ok

# ---- the trigger: the real agents capped at once; the slow one does not hold them up ----
# every GPU of agent $1 below $2 W (its own view: GET /v1/node)
capped() {
  curl -s -m 1 "http://127.0.0.1:$1/v1/node" | /usr/bin/python3 -c '
import json, sys
g = json.load(sys.stdin)["gpus"]
sys.exit(0 if g and all(x["cap_w"] < float(sys.argv[1]) for x in g) else 1)' "$2"
}
capped "$P1" 699 && fail "agent 1 capped before any trigger"
ok
touch "$T/slow"
t0=$(date +%s.%N)
[ "$(post '{"reduction_pct": 25, "id": "fast-1"}')" = 201 ] || { cat "$T/body" >&2; fail "POST /v1/trigger"; }
contains "$T/body" '"fast_path":true'
contains "$T/body" '"source":"trigger"'
contains "$T/body" '"open_ended":true'
wait_for 10 "both real agents capped" 'capped "$P1" 699 && capped "$P2" 699'
dt=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.3f", b - a}')
echo "trigger -> every GPU of both real agents capped: $dt s (polled; next period in ~30 s)"
num "$dt" "<" 2 || fail "caps took $dt s: not the fast path (the slow agent's deadline is 3 s)"
ok
wait_for 15 "the fast path's log line" 'grep -q "trigger fast-1: caps pushed to 3 agents in .* ms (2 by datagram; 1 failed)" "$T/ctl.log"'
ok
grep "trigger fast-1\|PUT /v1/caps (trigger)" "$T/ctl.log"
# the controller's own figure: trigger -> the last cap written (the slow agent failed)
w=$(sed -n 's/.*trigger fast-1: caps pushed.*every cap written \([0-9.]*\) ms.*/\1/p' "$T/ctl.log")
num "$w" "<" 2000 || fail "every reachable cap written only $w ms after the trigger"
ok
wait_for 15 "the slow agent marked down" 'grep -q "agent slow (.*) marked down" "$T/ctl.log"'
ok
[ "$(metric "$URL" pfi_ctl_triggers_total)" = 1 ] || fail "pfi_ctl_triggers_total"; ok
# 25% lies between the planned levels 2 and 3 (20, 30 %): each job's cap interpolated
grep -q "trigger fast-1: 25.0% cut, caps for 3 jobs from the interpolated" "$T/ctl.log" || fail "trigger log line"; ok
# the event it made is active (the normal loop took it over)
wait_for 15 "event fast-1 active" 'curl -s -m 5 "$URL/v1/events/fast-1" | grep -q "\"status\":\"active\""'
ok

# ---- an API event that starts now, deeper: the same fast path ----
rm -f "$T/slow"
c1=$(curl -s -m 1 "http://127.0.0.1:$P1/v1/node" | /usr/bin/python3 -c 'import json,sys; print(max(x["cap_w"] for x in json.load(sys.stdin)["gpus"]))')
S=$(date -u +%Y-%m-%dT%H:%M:%SZ)
t0=$(date +%s.%N)
[ "$(curl -s -m 10 -o "$T/body" -w '%{http_code}' -X POST -H "Authorization: Bearer $CTOK" \
  --data-binary "{\"id\":\"api-60\",\"start\":\"$S\",\"duration_s\":120,\"reduction_pct\":60,\"ramp_s\":0}" "$URL/v1/events")" = 201 ] \
  || { cat "$T/body" >&2; fail "POST /v1/events"; }
ok
wait_for 10 "agent 1 below its cap of $c1 W" 'capped "$P1" "$c1"'
dt=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.3f", b - a}')
echo "API event starting now -> agent 1 capped lower: $dt s"
num "$dt" "<" 2 || fail "the API event's caps took $dt s"
ok
wait_for 15 "the second trigger counted" '[ "$(metric "$URL" pfi_ctl_triggers_total)" = 2 ]'
ok
# 60% is beyond the plan (levels 10, 20, 30 %): equal-weight caps computed at once
grep -q "trigger api-60: 60.0% cut, caps for [0-9]* jobs from the equal weight" "$T/ctl.log" \
  || { grep "trigger api-60" "$T/ctl.log" >&2; fail "the 60% trigger's caps did not come from equal weight"; }
ok
# a level: the plan's own caps (it only lowers caps: after 60% it changes none)
[ "$(post '{"level": 3, "id": "lvl-3"}')" = 201 ] || { cat "$T/body" >&2; fail "POST /v1/trigger level 3"; }
contains "$T/body" '"level":3'
wait_for 15 "the level trigger's log line" 'grep -q "trigger lvl-3: 30.0% cut, caps for [0-9]* jobs from the plan " "$T/ctl.log"'
ok
[ "$(metric "$URL" pfi_ctl_triggers_total)" = 3 ] || fail "pfi_ctl_triggers_total after three triggers"; ok
done_ok
