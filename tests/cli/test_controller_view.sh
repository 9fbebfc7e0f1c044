#!/bin/sh
# test_controller_view.sh — GET /v1/control, the agent's compact view for a
# controller (docs/agent.md): a pfi-agent answers it with the same limits,
# caps and jobs as /v1/node; the controller reads it from that agent and falls
# back to /v1/node for an agent that answers it 404 (a fixture standing for an
# agent older than the view), and caps both within their limits during a deep
# event (a misread cap_min_w would push below the fixture's 400 W floor);
# an agent with --control-listen is collected from and capped through its
# control port alone.
# Real time, control period 1 s.
. "$SRC/tests/cli/lib.sh"
: "${PFI_AGENT:?}"
CTL=${PFI_CONTROLLER_BIN:-$(dirname "$PFI_AGENT")/pfi-controller}
new_token "$T/atok" "$T/ctok"
CTOK=$(cat "$T/ctok")

start_daemon "agent" "$T/a.log" "$T/a.port" "$PFI_AGENT" \
  --backend "sim:gpus=8,job=job1:dense-pt-llama70b-x8-compile@0-7,load=0,seed=1" \
  --listen 127.0.0.1:0 --port-file "$T/a.port" --token-file "$T/atok" --state-file "$T/a.state" \
  --interval 1 --log "$T/a.log"
PA=$(cat "$T/a.port")

# ---- the agent's /v1/control agrees with its /v1/node ----
wait_for 20 "the agent's first sample" \
  'curl -s -m 2 "http://127.0.0.1:$PA/v1/node" | grep -q "\"job_id\":\"job1\"" '
curl -s -m 5 -o "$T/node.json" "http://127.0.0.1:$PA/v1/node" || fail "GET /v1/node"
curl -s -m 5 -o "$T/control.json" -w '%{http_code}' "http://127.0.0.1:$PA/v1/control" >"$T/code"
[ "$(cat "$T/code")" = 200 ] || fail "GET /v1/control: HTTP $(cat "$T/code")"
ok
/usr/bin/python3 - "$T/node.json" "$T/control.json" <<'PY' || fail "/v1/control differs from /v1/node"
import json, sys
node, ctl = (json.load(open(p)) for p in sys.argv[1:3])
assert set(ctl) == {"generation_max", "fast_trigger_port", "gpus", "jobs"}, sorted(ctl)
assert ctl["generation_max"] == node["generation_max"]
assert len(ctl["gpus"]) == len(node["gpus"]) == 8
for c, g in zip(ctl["gpus"], node["gpus"]):
    assert c == [g["cap_min_w"], g["cap_max_w"], g.get("cap_w"), g["ceiling_w"]], (c, g)
    assert g["state"] == "ok" and g["ceiling_w"] == g["cap_w"], g  # no cap held: the limit in force
assert [j["job_id"] for j in ctl["jobs"]] == [j["job_id"] for j in node["jobs"]] == ["job1"]
for c, j in zip(ctl["jobs"], node["jobs"]):
    for k in ("gpus", "power_w", "tokens_per_s", "pfi_predicted", "tier"):
        assert c.get(k) == j.get(k), (k, c.get(k), j.get(k))
    assert c["training_means"].items() <= j["training_means"].items()
PY
ok

# ---- an agent with --control-listen: the controller's url names its control
# port, where it both collects and pushes (the advice of docs/agent.md) ----
start_daemon "agent with a control port" "$T/b.log" "$T/b.port" "$PFI_AGENT" \
  --backend "sim:gpus=8,job=job2:dense-pt-llama70b-x8-compile@0-7,load=0,seed=2" \
  --listen 127.0.0.1:0 --port-file "$T/b.port" --control-listen 127.0.0.1:0 \
  --control-port-file "$T/b.cport" --token-file "$T/atok" --state-file "$T/b.state" \
  --interval 1 --log "$T/b.log"
wait_for 20 "the control port file" '[ -s "$T/b.cport" ]'
PB=$(cat "$T/b.cport")
wait_for 20 "the second agent's first sample" \
  'curl -s -m 2 "http://127.0.0.1:$PB/v1/control" | grep -q "\"job_id\":\"job2\"" '
# the control port serves the controller's reads, not a scraper's
[ "$(curl -s -o /dev/null -w '%{http_code}' -m 5 "http://127.0.0.1:$PB/metrics")" = 404 ] \
  || fail "GET /metrics answered on the control port"
ok

# ---- an agent without /v1/control: answers it 404, serves /v1/node; records what it is asked ----
cat >"$T/legacy.py" <<'PY'
import json, os, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
port_file, seen = sys.argv[1], sys.argv[2]
state = {"cap_w": 700.0}
def node():
    gpus = [{"index": i, "uuid": "GPU-old-%d" % i, "name": "fixture", "cap_min_w": 400.0,
             "cap_max_w": 700.0, "cap_default_w": 700.0, "cap_w": state["cap_w"],
             "power_w": min(650.0, state["cap_w"]), "job_id": "oldjob"} for i in range(8)]
    return {"hostname": "old", "backend": "fixture", "generation_max": 0, "gpus": gpus,
            "jobs": [{"job_id": "oldjob", "gpus": list(range(8)),
                      "power_w": 8 * min(650.0, state["cap_w"])}]}
class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def answer(self, code, body):
        with open(seen, "a") as f: f.write("%s %s\n" % (self.command, self.path))
        b = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)
    def do_GET(self):
        if self.path == "/v1/node": self.answer(200, node())
        else: self.answer(404, {"error": "no such endpoint"})
    def do_PUT(self):
        rq = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        caps = [j["cap_w"] for j in rq.get("jobs", [])]
        if caps: state["cap_w"] = caps[-1]
        with open(seen + ".caps", "a") as f: f.write("%s\n" % caps)
        self.answer(200, {"ok": True})
s = ThreadingHTTPServer(("127.0.0.1", 0), H)
s.daemon_threads = True
with open(port_file + ".tmp", "w") as f: f.write(str(s.server_address[1]))
os.rename(port_file + ".tmp", port_file)
s.serve_forever()
PY
start_daemon "legacy fixture agent" "$T/old.log" "$T/old.port" /usr/bin/python3 "$T/legacy.py" "$T/old.port" "$T/seen"
PO=$DPORT

printf '{"listen": "127.0.0.1:0", "token_file": "%s/ctok", "db": "%s/ctl.db", "control_period_s": 1,
 "baseline_window_s": 3, "lease_s": 60, "ramp_s": 0, "default_tier": 3, "agent_timeout_s": 5,
 "agents": [{"name": "new", "url": "http://127.0.0.1:%s", "token_file": "%s/atok"},
            {"name": "old", "url": "http://127.0.0.1:%s", "token_file": "%s/atok"},
            {"name": "cport", "url": "http://127.0.0.1:%s", "token_file": "%s/atok"}]}\n' \
  "$T" "$T" "$PA" "$T" "$PO" "$T" "$PB" "$T" >"$T/ctl.json"
start_daemon controller "$T/ctl.log" "$T/c.port" "$CTL" --config "$T/ctl.json" --port-file "$T/c.port"
URL=http://127.0.0.1:$DPORT
wait_for 30 "3 periods with the three agents up" \
  'num "$(metric "$URL" pfi_ctl_cycles_total)" ">=" 3 && [ "$(metric "$URL" pfi_ctl_agents_up)" = 3 ]'
# every agent's jobs were read (from /v1/control, from /v1/node, from the control port)
curl -s -m 5 "$URL/metrics" >"$T/metrics"
contains "$T/metrics" 'pfi_ctl_job_power_watts{hpc_job="job1"'
contains "$T/metrics" 'pfi_ctl_job_power_watts{hpc_job="oldjob"'
contains "$T/metrics" 'pfi_ctl_job_power_watts{hpc_job="job2"'
# the fixture was asked /v1/control once, then only /v1/node
[ "$(grep -c '^GET /v1/control$' "$T/seen")" = 1 ] || { cat "$T/seen" >&2; fail "/v1/control asked more than once"; }
ok
num "$(grep -c '^GET /v1/node$' "$T/seen")" ">=" 3 || { cat "$T/seen" >&2; fail "/v1/node not read every period"; }
ok
contains "$T/ctl.log" "agent old has no GET /v1/control (404): reading GET /v1/node"
lacks "$T/ctl.log" "agent new has no GET /v1/control"
lacks "$T/ctl.log" "warning"

# ---- a deep event: both capped, neither below its floor ----
S=$(date -u +%Y-%m-%dT%H:%M:%SZ)
[ "$(curl -s -m 10 -o "$T/body" -w '%{http_code}' -X POST -H "Authorization: Bearer $CTOK" \
  --data-binary "{\"id\":\"deep\",\"start\":\"$S\",\"duration_s\":120,\"reduction_pct\":60,\"ramp_s\":0}" "$URL/v1/events")" = 201 ] \
  || { cat "$T/body" >&2; fail "POST /v1/events"; }
ok
wait_for 20 "the fixture capped" '[ -s "$T/seen.caps" ] && grep -q "[0-9]" "$T/seen.caps"'
wait_for 20 "the agent capped" \
  'curl -s -m 2 "http://127.0.0.1:$PA/v1/control" | /usr/bin/python3 -c "import json,sys; g=json.load(sys.stdin)[\"gpus\"]; sys.exit(not all(c[2] is not None and c[2] < c[1] for c in g))"'
/usr/bin/python3 - "$T/seen.caps" <<'PY' || fail "a cap below the fixture's 400 W floor"
import ast, sys
caps = [c for line in open(sys.argv[1]) for c in ast.literal_eval(line)]
assert caps and all(400 <= c <= 700 for c in caps), caps
assert min(caps) < 700, caps
PY
ok
wait_for 20 "the agent behind its control port capped" \
  'curl -s -m 2 "http://127.0.0.1:$PB/v1/control" | /usr/bin/python3 -c "import json,sys; g=json.load(sys.stdin)[\"gpus\"]; sys.exit(not all(c[2] is not None and c[2] < c[1] for c in g))"'
curl -s -m 5 "http://127.0.0.1:$PA/v1/control" | /usr/bin/python3 -c '
import json, sys
g = json.load(sys.stdin)["gpus"]
assert all(lo <= cap <= hi and cap <= ceil == hi for lo, hi, cap, ceil in g), g' || fail "the agent's caps outside its limits"
ok
check_daemons
done_ok
