#!/bin/sh
# test_ctl_extreme_values.sh — no job input makes the controller's /metrics
# unparseable (issue 41: a step log's 1e308 tokens/s became an infinite
# baseline and a "-nan" profile cost, and promtool refused the whole text,
# so every controller series and alert went dark). A stand-in agent (here,
# in Python: the real one refuses such lines itself, test_steplog_hostile.sh)
# reports four jobs whose throughputs are 1e308, 1e11, -5 and a plausible
# 5000 tokens/s. Through a 20% trigger and its end: `promtool check metrics`
# accepts every scrape (a missing promtool fails the test), the absurd
# values are refused (logged once) and taken as unknown, and the plausible
# job's throughput is exported. Polls with a wall-clock deadline.
. "$SRC/tests/cli/lib.sh"
: "${PFI_AGENT:?}"
CTL=${PFI_CONTROLLER_BIN:-$(dirname "$PFI_AGENT")/pfi-controller}
command -v promtool >/dev/null || fail "promtool is needed (apt-get install --no-install-recommends prometheus; scripts/bootstrap.sh test)"
kill_daemons_on_exit
new_token "$T/atok" "$T/ctok"
CTOK=$(cat "$T/ctok")

cat >"$T/agent.py" <<'PY'
import json, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
port_file = sys.argv[1]
state = {"cap_w": 700.0}
JOBS = [("liar", 1e308), ("huge", 1e11), ("neg", -5.0), ("ok", 5000.0)]
def control():
    gpus = [[200.0, 700.0, state["cap_w"], 700.0] for _ in range(8)]
    jobs = [{"job_id": j, "gpus": [2 * k, 2 * k + 1], "power_w": 2 * min(600.0, state["cap_w"]),
             "tokens_per_s": t, "training_means": {}} for k, (j, t) in enumerate(JOBS)]
    return {"generation_max": 0, "gpus": gpus, "jobs": jobs}
class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def answer(self, code, body):
        b = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)
    def do_GET(self):
        if self.path == "/v1/control": self.answer(200, control())
        else: self.answer(404, {"error": "no such endpoint"})
    def do_PUT(self):
        rq = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        caps = [g["cap_w"] for g in rq.get("gpus", [])] + [j["cap_w"] for j in rq.get("jobs", [])]
        if caps: state["cap_w"] = min(caps)
        self.answer(200, {"ok": True, "gpus": []})
s = ThreadingHTTPServer(("127.0.0.1", 0), H)
with open(port_file + ".tmp", "w") as f: f.write(str(s.server_address[1]))
import os; os.rename(port_file + ".tmp", port_file)
s.serve_forever()
PY
start_daemon agent "$T/agent.log" "$T/a.port" /usr/bin/python3 "$T/agent.py" "$T/a.port"
cat >"$T/ctl.json" <<JSON
{"listen": "127.0.0.1:0", "token_file": "$T/ctok", "db": "$T/ctl.db", "control_period_s": 0.5,
 "baseline_window_s": 1, "lease_s": 30,
 "agents": [{"name": "n1", "url": "http://127.0.0.1:$DPORT", "token_file": "$T/atok"}]}
JSON
start_daemon controller "$T/ctl.log" "$T/c.port" "$CTL" --config "$T/ctl.json" --port-file "$T/c.port"
URL=http://127.0.0.1:$DPORT
check() { # WHAT: promtool accepts the controller's /metrics now
  curl -s -m 10 "$URL/metrics" >"$T/m.prom" || fail "$1: /metrics"
  promtool check metrics <"$T/m.prom" >"$T/lint" 2>&1 || true
  if grep -qiE 'error|unparseable|invalid' "$T/lint"; then cat "$T/lint" >&2; grep -n 'nan\|inf' "$T/m.prom" | head >&2; fail "$1: promtool refuses /metrics"; fi
  ! grep -qE ' -?nan$| -?inf$' "$T/m.prom" || fail "$1: a value printf spells"
  ok
}
wait_counter 30 "$URL" pfi_ctl_cycles_total 4
check "before the trigger"
contains "$T/ctl.log" "warning: agent n1 reports a job's tokens_per_s that is negative, not finite or above 1e10 tokens/s; taken as unknown"
[ "$(grep -c "reports a job's tokens_per_s" "$T/ctl.log")" = 1 ] || fail "the refusal logged more than once"; ok
curl -s -m 10 "$URL/metrics" | grep -q '^pfi_ctl_job_tokens_per_second{[^}]*job="ok"[^}]*} 5000$' ||
  { curl -s "$URL/metrics" | grep tokens_per >&2; fail "the plausible job's throughput is not exported"; }; ok
! curl -s -m 10 "$URL/metrics" | grep -q 'tokens_per_second{[^}]*job="liar"[^}]*} [0-9]' || fail "the liar's 1e308 exported"; ok
[ "$(curl -s -m 10 -o "$T/body" -w '%{http_code}' -X POST -H "Authorization: Bearer $CTOK" \
  --data-binary '{"reduction_pct": 20, "id": "t1", "duration_s": 4}' "$URL/v1/trigger")" = 201 ] || { cat "$T/body" >&2; fail "trigger"; }; ok
wait_counter 30 "$URL" pfi_ctl_cycles_total 4
check "during the trigger"
wait_for 30 "the trigger to end" 'curl -s -m 5 "$URL/v1/events/t1" | grep -q "\"status\":\"done\""'
check "after the trigger"
curl -s -m 10 "$URL/v1/events/t1/report" | python3 -c 'import json,sys; json.load(sys.stdin)' || fail "the report is not JSON"; ok
done_ok
