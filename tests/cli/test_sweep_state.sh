#!/bin/sh
# test_sweep_state.sh — pfi sweep's own state file (issue 14, items 2 and
# 10): a truncated or corrupt file from a killed sweep no longer stops the
# next sweep while caps stay as they are: every GPU goes back to its device
# default, with a warning naming the file, and the sweep runs; a cap in the
# file outside the device's range is replaced by the default; a valid file
# is still restored exactly. (The full disk: test_state_fulldisk.sh.)
. "$SRC/tests/cli/lib.sh"
HW=$T/hw.json
SIM="sim:name=t,gpus=8,job=17:moe-ft-qwen30ba3b-x8@0-7,noise=0.003,state=$HW"
ST=$T/sweep-state
hw_set() { echo "{\"gpus\": 8, \"caps_w\": [$1]}" >"$HW"; }
export PFI_TIME_SCALE=100
U=GPU-5151a000-ccaf-4000-8000-00000000000
sweep() { "$PFI" sweep --backend "$SIM" --caps 700,600 --duration 90 --pause 0 --no-agent --state-file "$ST" --out "$1"; }

# ---- a truncated state file: device defaults, a warning naming the file, the sweep runs ----
hw_set "450, 700, 700, 700, 700, 700, 700, 380"
printf '{"format_version": 1, "pid": 4242, "gpus": [{"index": 0, "uuid": "%s0", "cap_w": 4' "$U" >"$ST"
expect_status 0 sweep "$T/s1"
contains "$T/err" "warning: $ST: a previous sweep's state is unreadable or corrupt"
contains "$T/err" "GPU 7: cap restored to 700 W (device default)"
[ "$(hw_cap 0)" = "700" ] && [ "$(hw_cap 7)" = "700" ] || fail "caps not at their defaults: $(hw_cap 0), $(hw_cap 7)"; ok
[ -s "$ST.corrupt" ] || fail "the corrupt file was not kept"; ok
[ ! -e "$ST" ] || fail "state file left after a clean sweep"; ok
lines "$T/s1/sweep.csv" 3

# ---- garbage ----
hw_set "450, 700, 700, 700, 700, 700, 700, 700"
head -c 100 /dev/urandom >"$ST"
expect_status 0 sweep "$T/s2"
contains "$T/err" "unreadable or corrupt"
[ "$(hw_cap 0)" = "700" ] || fail "GPU 0 at $(hw_cap 0)"; ok

# ---- a cap outside the device's range: its default ----
hw_set "450, 500, 700, 700, 700, 700, 700, 700"
printf '{"format_version": 1, "pid": 4242, "gpus": [{"index": 0, "uuid": "%s0", "cap_w": 9999}, {"index": 1, "uuid": "%s1", "cap_w": 650}]}\n' "$U" "$U" >"$ST"
expect_status 0 sweep "$T/s3"
contains "$T/err" "$ST: gpus[0].cap_w: 9999 W is outside GPU 0's 200..700 W; using its default limit 700 W"
contains "$T/err" "GPU 1: cap restored to 650 W"
[ "$(hw_cap 0)" = "700" ] || fail "GPU 0 at $(hw_cap 0)"; ok
[ "$(hw_cap 1)" = "650" ] || fail "GPU 1 at $(hw_cap 1): the sweep's restore of 650 W was lost"; ok

# ---- a GPU that is not on this node: refused, the file kept ----
printf '{"format_version": 1, "pid": 4242, "gpus": [{"index": 0, "uuid": "GPU-elsewhere", "cap_w": 500}]}\n' >"$ST"
expect_status 1 sweep "$T/s4"
contains "$T/err" "$ST: gpus[0]: cannot restore 500 W on GPU-elsewhere (not on this node)"
[ -s "$ST" ] || fail "the state file was removed"; ok
done_ok
