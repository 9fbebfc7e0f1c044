#!/bin/sh
# test_offer_forecast.sh — the offer's forecast and sustain time (issue 44;
# docs/controller.md, "The forecast"). Two simulated Slurm jobs, 101 and
# 102, and an squeue double that prints what squeue(1) of Slurm 22.05
# prints for `-h -a -t RUNNING,PENDING -o '%A|%T|%S|%e|%l|%D|%b'` under
# SLURM_TIME_FORMAT=%s (tests/data/squeue/ has the real one's output; the
# double refuses any other arguments or time format): 101 reaches its time
# limit in 30 min, 102 is unlimited, 103 (4 GPUs) is pending with an
# expected start in 90 min. Then: the offer says 101's end bounds it
# (sustain_s about 1,800 s), the first hour's fleet is 102 alone and the
# second adds the pending 103; squeue failing or hanging past its timeout
# leaves the present fleet, says why, and logs it once. test_slurm.sh does
# the same against the real Slurm. With a curve model (fitted here on the
# reconstruction) the jobs' first offer, before anything is measured,
# rests on the prior's conservative bound for their features (issue 44).
. "$SRC/tests/cli/lib.sh"
: "${PFI_AGENT:?}"
CTL=${PFI_CONTROLLER_BIN:-$(dirname "$PFI_AGENT")/pfi-controller}
new_token "$T/atok" "$T/ctok"
kill_daemons_on_exit
cat >"$T/squeue" <<'EOF'
#!/bin/sh
# the squeue double: its mode from the file beside it
[ "$*" = "-h -a -t RUNNING,PENDING -o %A|%T|%S|%e|%l|%D|%b" ] || { echo "squeue double: unexpected arguments: $*" >&2; exit 2; }
[ "$SLURM_TIME_FORMAT" = "%s" ] || { echo "squeue double: SLURM_TIME_FORMAT is '$SLURM_TIME_FORMAT'" >&2; exit 2; }
case "$(cat "$0.mode")" in
  fail) echo "squeue: error: Unable to contact slurm controller (connect failure)" >&2; exit 1 ;;
  hang) exec sleep 60 ;;
esac
now=$(date +%s)
echo "101|RUNNING|$((now - 600))|$((now + 1800))|40:00|1|gres:gpu:2"
echo "102|RUNNING|$((now - 600))|Unknown|UNLIMITED|1|gres/gpu:2"
echo "103|PENDING|$((now + 5400))|$((now + 9000))|1:00:00|1|gres:gpu:4"
echo "104|PENDING|N/A|N/A|1:00:00|1|gres:gpu:8"
echo "200|RUNNING|$((now - 60))|$((now + 60))|2:00|1|N/A"
EOF
chmod +x "$T/squeue"
"$PFI" synth --summary -o "$T/recon.csv" || fail "synth"
"$PFI" fit --curve --train-where split=headline --model "$T/model.json" "$T/recon.csv" >/dev/null || fail "fit"
contains "$T/model.json" '"throughput_se"'
echo ok >"$T/squeue.mode"
start_daemon agent "$T/a.log" "$T/a.port" "$PFI_AGENT" \
  --backend "sim:gpus=4,job=101:moe-ft-qwen30ba3b-x8@0-1,job=102:dense-pt-llama70b-x8-compile@2-3,load=0,steplogs=$T,state=$T/hw.json" \
  --listen 127.0.0.1:0 --port-file "$T/a.port" --token-file "$T/atok" --state-file "$T/a.state" \
  --interval 0.5 --log "$T/a.log"
AP=$DPORT
cat >"$T/c.json" <<EOF
{"listen": "127.0.0.1:0", "token_file": "$T/ctok", "db": "$T/c.db", "control_period_s": 0.5,
 "baseline_window_s": 2, "ramp_s": 0, "log": "$T/c.log", "curve_model": "$T/model.json",
 "offer": {"interval_s": 1, "squeue": "$T/squeue", "squeue_interval_s": 10, "squeue_timeout_s": 2, "horizon_h": 3},
 "agents": [{"name": "n1", "url": "http://127.0.0.1:$AP", "token_file": "$T/atok"}]}
EOF
start_daemon controller "$T/c.log" "$T/c.port" "$CTL" --config "$T/c.json" --port-file "$T/c.port"
URL=http://127.0.0.1:$DPORT
offer() { curl -s -m 5 "$URL/v1/offer" >"$T/offer.json"; }
py() { python3 -c 'import json,sys; o=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$T/offer.json" "$1"; }
wait_for 60 "an offer of both jobs read with Slurm's queue" \
  'offer && [ "$(py "len(o[\"jobs\"]) == 2 and o[\"forecast\"][\"source\"] == \"squeue\"" 2>/dev/null)" = True ]'
# nothing measured yet: the prior's bound for their features, which
# allows more than the proportional bound's 5% of the baselines at 5%
[ "$(py '[(j["measured"], j["prior"]) for j in o["jobs"]] == [(False, "features")] * 2')" = True ] ||
  fail "the first offer does not rest on the prior: $(cat "$T/offer.json")"; ok
num "$(py 'o["offers"][3]["total_kw"] / o["baseline_kw"]')" ">" 0.055 || fail "the prior's offer at 5%: $(cat "$T/offer.json")"; ok
python3 - "$T/offer.json" <<'PY' || fail "the forecast: $(cat "$T/offer.json")"
import json, sys
o = json.load(open(sys.argv[1]))
f = o["forecast"]
assert f["squeue_error"] is None and f["squeue_read_at"] and f["horizon_h"] == 3, f
# 101 reaches its limit in 30 min and carries more than 5% of the shed
sheds = {j["id"]: j["shed_kw"] for j in o["jobs"]}
assert sheds["101"] > 0.05 * sum(sheds.values()), sheds
assert 1700 <= o["sustain_s"] <= 1800, o["sustain_s"]
p = f["points"]
assert [x["in_h"] for x in p] == [1, 2, 3], p
# hour 1: 102 alone, 101's 2 GPUs refilled by jobs not yet submitted;
# hour 2: 102 and the pending 103 (104 has no start: not counted; 200 is
# not pfi's), more GPUs than today: no refill; hour 3: 103 ended (its limit)
assert (p[0]["jobs"], p[0]["pending_jobs"], p[0]["refill_gpus"]) == (1, 0, 2), p[0]
assert (p[1]["jobs"], p[1]["pending_jobs"], p[1]["refill_gpus"]) == (2, 1, 0), p[1]
assert (p[2]["jobs"], p[2]["pending_jobs"], p[2]["refill_gpus"]) == (1, 0, 2), p[2]
now = [x["total_kw"] for x in o["offers"]]
assert p[1]["total_kw"][4] > p[0]["total_kw"][4], p     # 4 GPUs more than today
assert all(a <= b + 1e-9 for a, b in zip(p[1]["total_kw"], p[1]["total_kw"][1:])), p[1]
PY
ok

# squeue fails: the present fleet, with squeue's own words
echo fail >"$T/squeue.mode"
wait_for 30 "the forecast without Slurm's queue" \
  'offer && [ "$(py "o[\"forecast\"][\"source\"]")" = "present fleet" ]'
contains "$T/offer.json" "exited with status 1: squeue: error: Unable to contact slurm controller"
[ "$(py 'o["sustain_s"]')" = None ] || fail "sustain_s without a queue: $(cat "$T/offer.json")"; ok
[ "$(py '[x["total_kw"] for x in o["forecast"]["points"]] == [[x["total_kw"] for x in o["offers"]]] * 3')" = True ] ||
  fail "the present fleet does not persist: $(cat "$T/offer.json")"; ok
[ "$(grep -c "the offer's forecast: .*Unable to contact slurm controller" "$T/c.log")" = 1 ] || fail "the failure not logged once"; ok
# back, then hanging past its timeout
echo ok >"$T/squeue.mode"
wait_for 30 "the queue read again" 'offer && [ "$(py "o[\"forecast\"][\"source\"]")" = squeue ]'
contains "$T/c.log" "the offer's forecast reads Slurm's queue again"
echo hang >"$T/squeue.mode"
wait_for 40 "squeue past its timeout" 'offer && grep -q "no answer within its timeout" "$T/offer.json"'
[ "$(py 'o["forecast"]["source"]')" = "present fleet" ] || fail "source after a timeout"; ok
# a bad forecast key: one line naming it
sed 's/"horizon_h": 3/"horizon_h": 49/' "$T/c.json" >"$T/bad.json"
expect_error 2 "offer.horizon_h" "$CTL" --config "$T/bad.json"
done_ok
