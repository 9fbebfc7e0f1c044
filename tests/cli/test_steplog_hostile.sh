#!/bin/sh
# test_steplog_hostile.sh — a job's step log is its user's file, and the
# agent must not let it freeze lease expiry or /metrics (issue 14 item 1):
# with a 6 s lease on the GPUs, the step log replaced by a FIFO (no writer:
# an open for reading would block for ever) — the lease still ends and the
# baseline is restored within a bounded time, /metrics answers meanwhile,
# and the FIFO is refused (logged once). A symbolic link, a file owned by
# another user than the job file's uid, a job file's uid the file does not
# have, and a relative path are refused; a regular file of the job's user
# is read, and a log far behind is read from its newest 256 KiB only.
# Throughputs no job has (1e308, 1e11 tokens/s) are refused, counted
# (pfi_agent_steplog_lines_refused_total) and logged once per job.
# Needs root (chown), as the agent runs.
. "$SRC/tests/cli/lib.sh"
: "${PFI_AGENT:?}"
command -v curl >/dev/null || fail "curl is needed (scripts/bootstrap.sh test)"
[ "$(id -u)" = 0 ] || fail "needs root (chown to another uid, as the agent runs as root)"
new_token "$T/token"
TOKEN=$(cat "$T/token")
HW=$T/hw.json
mkdir -p "$T/jobs" "$T/sl"
chmod 1777 "$T/sl"

uptime_s() { cut -d' ' -f1 /proc/uptime; }
rec() { # FILE N: append N step records
  i=0; while [ $i -lt "$2" ]; do printf '{"t_s": %s, "tokens_per_s": 1000}\n' "$(date +%s)" >>"$1"; i=$((i + 1)); done
}
job() { # ID GPU STEPLOG [UID]
  printf '{"job_id": "%s", "gpus": [%s], "steplog": "%s"%s}\n' "$1" "$2" "$3" "${4:+, \"uid\": $4}" >"$T/jobs/$1.json"
}
# u0: a good file; u1: symlink; u2: owned by 65534, job says 0; u3: owned by root, job says 65534;
# u4: relative path; u5: no uid (must be the agent's own user's: it is) and far behind
rec "$T/sl/u0.jsonl" 3
rec "$T/sl/target.jsonl" 3; ln -s "$T/sl/target.jsonl" "$T/sl/u1.jsonl"
rec "$T/sl/u2.jsonl" 3; chown 65534 "$T/sl/u2.jsonl"
rec "$T/sl/u3.jsonl" 3
job u0 0 "$T/sl/u0.jsonl" 0
job u1 1 "$T/sl/u1.jsonl" 0
job u2 2 "$T/sl/u2.jsonl" 0
job u3 3 "$T/sl/u3.jsonl" 65534
job u4 4 "sl/u4.jsonl" 0
# a big log of records at 1 tok/s and then a few at 5000: only the newest bytes count
awk 'BEGIN{for(i=0;i<20000;i++) printf "{\"t_s\": 1, \"tokens_per_s\": 1}\n"; for(i=0;i<10;i++) printf "{\"t_s\": 2, \"tokens_per_s\": 5000}\n"}' >"$T/sl/u5.jsonl"
job u5 5 "$T/sl/u5.jsonl"
# u6 claims absurd throughputs (issue 41): 1e308 and 1e11 tokens/s are refused and counted, the one
# plausible record is its throughput
printf '{"t_s": 1, "tokens_per_s": 1e308}\n{"t_s": 2, "tokens_per_s": 1e11}\n{"t_s": 3, "tokens_per_s": 2000}\n' >"$T/sl/u6.jsonl"
job u6 6 "$T/sl/u6.jsonl" 0

start_daemon agent "$T/agent.log" "$T/port" "$PFI_AGENT" --log-level debug --backend "sim:gpus=7,state=$HW" --listen 127.0.0.1:0 \
  --port-file "$T/port" --token-file "$T/token" --state-file "$T/state.json" --interval 0.2 --jobs-dir "$T/jobs" --log "$T/agent.log"
PID=$DPID; URL=http://127.0.0.1:$DPORT
tps() { curl -s -m 5 "$URL/metrics" | awk -v j="$1" '$1 ~ "^pfi_job_tokens_per_second[{]hpc_job=\"" j "\"" {print $2}'; }
has_tps() { [ -n "$(tps "$1")" ]; }
logged() { grep -qF -- "$1" "$T/agent.log"; }

# ---- a regular file of the job's user is read; the others are refused ----
wait_for 30 "u0's throughput" 'has_tps u0'
wait_for 30 "u5's throughput" 'has_tps u5'
# the reference: the mean of the whole records in the file's last 256 KiB (the whole file's is 3.5)
want=$(tail -c 262144 "$T/sl/u5.jsonl" | tail -n +2 | awk -F'"tokens_per_s": ' '{s += $2 + 0; n++} END{print s / n}')
near "$(tps u5)" "$want" 0.001
wait_for 30 "u6's throughput" 'has_tps u6'
[ "$(tps u6)" = 2000 ] || fail "u6's throughput $(tps u6), expected 2000 (its absurd records refused)"; ok
num "$(metric "$URL" pfi_agent_steplog_lines_refused_total)" ">=" 2 || fail "refused step-log lines not counted"; ok
wait_for 30 "u6's refusal logged" 'logged "job u6: step log $T/sl/u6.jsonl: 2 lines refused (key '\''tokens_per_s'\'': above 1e10 tokens/s"'
wait_for 30 "u1 refused" 'logged "job u1: step log $T/sl/u1.jsonl: a symbolic link (refused)"'
wait_for 30 "u2 refused" 'logged "job u2: step log $T/sl/u2.jsonl: owned by uid 65534, not the job'\''s user (uid 0; refused)"'
wait_for 30 "u3 refused" 'logged "job u3: step log $T/sl/u3.jsonl: owned by uid 0, not the job'\''s user (uid 65534; refused)"'
wait_for 30 "u4 refused" 'logged "job u4: step log sl/u4.jsonl: not an absolute path"'
for j in u1 u2 u3 u4; do [ -z "$(tps $j)" ] || fail "job $j: a refused step log gave a throughput"; ok; done
n=$(grep -c "job u1: step log" "$T/agent.log"); [ "$n" -eq 1 ] || fail "the refusal of u1 logged $n times (once expected)"; ok
# a bad uid in a job file: the entry is ignored, with a line naming the file and field
printf '{"job_id": "u9", "gpus": [5], "uid": "root"}\n' >"$T/jobs/u9.json"
wait_for 30 "the bad uid named" 'logged "$T/jobs/u9.json: job u9: field '\''uid'\'': expected a user id"'
rm -f "$T/jobs/u9.json"
# job files themselves must be the admin's: a FIFO, a link, a file others
# can write, or another user's are ignored (logged), never read or waited on
mkfifo "$T/jobs/f1.json"
printf '{"job_id": "f2", "gpus": [5]}\n' >"$T/f2.json"; ln -s "$T/f2.json" "$T/jobs/f2.json"
printf '{"job_id": "f3", "gpus": [5]}\n' >"$T/jobs/f3.json"; chmod 666 "$T/jobs/f3.json"
printf '{"job_id": "f4", "gpus": [5]}\n' >"$T/jobs/f4.json"; chown 65534 "$T/jobs/f4.json"
wait_for 30 "the FIFO job file refused" 'logged "$T/jobs/f1.json: not a regular file; job file ignored"'
wait_for 30 "the linked job file refused" 'logged "$T/jobs/f2.json: a symbolic link; job file ignored"'
wait_for 30 "the world-writable job file refused" 'logged "$T/jobs/f3.json: not root'\''s, or writable by others; job file ignored"'
wait_for 30 "another user's job file refused" 'logged "$T/jobs/f4.json: not root'\''s, or writable by others; job file ignored"'
metrics_ok() { curl -s -m 5 -o /dev/null -w '%{http_code}' "$URL/metrics" | grep -q 200; }
wait_for 30 "/metrics answering with a FIFO in the jobs directory" 'metrics_ok'
for j in f1 f2 f3 f4; do ! curl -s -m 5 "$URL/v1/node" | grep -q "\"job_id\":\"$j\"" || fail "job $j mapped from a refused job file"; ok; done
rm -f "$T/jobs/f1.json" "$T/jobs/f2.json" "$T/jobs/f3.json" "$T/jobs/f4.json"

# ---- a FIFO step log during a lease: expiry and /metrics go on ----
CODE=$(curl -s -o "$T/body" -w '%{http_code}' -X PUT -H "Authorization: Bearer $TOKEN" \
  --data-binary '{"lease_s":6,"controller":"c","generation":1,"jobs":[{"job_id":"u0","cap_w":400}]}' "$URL/v1/caps")
[ "$CODE" = 200 ] || { cat "$T/body" >&2; fail "PUT: HTTP $CODE"; }; ok
t0=$(uptime_s)
rm -f "$T/sl/u0.jsonl"; mkfifo "$T/sl/u0.jsonl"
cap0_is() { num "$(hw_cap 0)" "==" "$1"; } # GPU 0's cap is W
metrics_answer() { curl -s -m 5 -o "$T/m" -w '%{http_code}' "$URL/metrics" | grep -q 200; }
wait_for 30 "the FIFO refused" 'logged "job u0: step log $T/sl/u0.jsonl: not a regular file (refused)"'
metrics_answer || fail "/metrics did not answer within 5 s with a FIFO step log"; ok
wait_for 30 "the baseline after the 6 s lease" 'cap0_is 700'
d=$(awk -v a="$t0" -v b="$(uptime_s)" 'BEGIN{print b - a}')
metrics_answer || fail "/metrics did not answer within 5 s after the lease"; ok
contains "$T/agent.log" "lease of controller c generation 1 expired"
# from the agent's own log (ms stamps): how long after the lease's end the baseline came back
sod() { grep -F -- "$1" "$T/agent.log" | head -1 | cut -c12-23 | awk -F: '{printf "%.3f", $1 * 3600 + $2 * 60 + $3}'; }
late=$(awk -v g="$(sod 'lease granted: controller c generation 1')" -v r="$(sod 'baseline restored: lease expired')" 'BEGIN{l = r - g - 6; if (l < -43200) l += 86400; printf "%.3f", l}')
# the lease starts before its caps are written and the state file is synced,
# and "lease granted" is logged after both: under load that line trails the
# lease's start by tens of ms, so a restore on time can read up to that much
# "early" here (-0.012 s seen under make test); an early expiry from a bug
# would be whole seconds
awk -v l="$late" 'BEGIN{exit !(l >= -0.25 && l < 5)}' || fail "restored $late s after the lease's end"; ok
echo "FIFO step log: the 6 s lease restored $late s after its end ($d s after the PUT); /metrics answering"
# the FIFO gone again: a regular file is followed from its start
rm -f "$T/sl/u0.jsonl"; rec "$T/sl/u0.jsonl" 2
stop_daemon $PID TERM; rc=$STOP_RC; PID=
[ $rc -eq 0 ] || fail "agent exit $rc"; ok
done_ok
