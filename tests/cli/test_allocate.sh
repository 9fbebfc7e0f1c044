#!/bin/sh
# test_allocate.sh — `pfi allocate` and `pfi simulate` on the reconstruction
# and Zeus: budgets met, integer caps within device limits, the oracle above
# every strategy, pfi-aware never below equal weight (the paper's claim),
# SLA tiers honoured by the oracle, infeasible cuts reported, the normalized
# objective, out-of-sample pools, and bad input.
. "$(dirname "$0")/lib.sh"
R="$T/recon.csv"
"$PFI" synth --summary -o "$R" || fail synth; ok
total() { awk -F, '$2=="TOTAL"{print $'"$2"'}' "$1"; }

# --- one allocation per strategy
for s in oracle equal moe-ft-weighted pfi-aware dcgm curve-aware closed-loop safe-online pfi-op; do
  expect_status 0 "$PFI" allocate --cut 0.3 --strategy $s --only split=headline "$R"
  cp "$T/out" "$T/a-$s.csv"
  lines "$T/a-$s.csv" 27   # 25 jobs + TOTAL + header
  # budget: total target <= 70% of the uncapped total
  awk -F, '$2=="TOTAL" { if ($6 > 0.7 * $5 * (1 + 1e-9)) exit 1 }' "$T/a-$s.csv" || fail "$s exceeds the budget"; ok
  # caps integer, within 200..700, slack non-negative
  awk -F, 'NR>1 && $2!="TOTAL" { if ($7 != int($7) || $7 < 200 || $7 > 700 || $8 < -1e-6) exit 1 }' "$T/a-$s.csv" || fail "$s caps"; ok
done
oracle=$(total "$T/a-oracle.csv" 11)
for s in equal moe-ft-weighted pfi-aware dcgm curve-aware closed-loop safe-online pfi-op; do
  v=$(total "$T/a-$s.csv" 11)
  awk -v o="$oracle" -v v="$v" 'BEGIN{exit !(v <= o * (1 + 1e-9))}' || fail "$s ($v) above the oracle ($oracle)"; ok
done
awk -v a="$(total "$T/a-pfi-aware.csv" 11)" -v e="$(total "$T/a-equal.csv" 11)" 'BEGIN{exit !(a > e)}' || fail "pfi-aware not above equal"; ok
# safe-online (the default) starts from equal weight and only moves on measured gains
awk -v a="$(total "$T/a-safe-online.csv" 11)" -v e="$(total "$T/a-equal.csv" 11)" 'BEGIN{exit !(a > e)}' || fail "safe-online not above equal"; ok
expect_status 0 "$PFI" allocate --cut 0.3 --only split=headline "$R"
cmp -s "$T/out" "$T/a-safe-online.csv" || fail "the default is not safe-online"; ok
# equal weight cuts every job by the same fraction, except one clipped at its
# lowest measured power (dense-ft-llama70b-x16 was measured from 500 W only);
# the others take its excess
awk -F, 'NR>1 && $2!="TOTAL" && $2!="dense-ft-llama70b-x16" { r = $6 / $5; if (f == "") f = r; if (r < f - 1e-6 || r > f + 1e-6 || r > 0.7) exit 1 }' "$T/a-equal.csv" || fail "equal fractions"; ok
awk -F, '$2=="dense-ft-llama70b-x16" { if ($7 != 500) exit 1 }' "$T/a-equal.csv" || fail "clipped job not at its floor"; ok

# --- SLA tiers: the oracle honours them; Flex 0 is not reduced
printf 'group,tier\ndense-pt-llama70b-x8-compile,0\nmoe-ft-qwen30ba3b-x8,1\ndense-pt-qwen32b-x16,2\n' >"$T/sla.csv"
expect_status 0 "$PFI" allocate --cut 0.3 --strategy oracle --sla "$T/sla.csv" --only split=headline "$R"
awk -F, '$2=="dense-pt-llama70b-x8-compile" { if ($6 != $5) exit 1 }' "$T/out" || fail "Flex 0 job reduced"; ok
awk -F, '$2=="moe-ft-qwen30ba3b-x8" { if ($11 < 0.9 * $9 - 1e-6) exit 1 }' "$T/out" || fail "Flex 1 job lost more than 10%"; ok
[ "$(total "$T/out" 12)" = 0 ] || fail "oracle SLA violations"; ok
printf 'group,tier\nx,7\n' >"$T/badsla.csv"
expect_error 1 "badsla.csv:2: column 'tier': '7' is not 0, 1, 2 or 3" "$PFI" allocate --cut 0.3 --sla "$T/badsla.csv" "$R"

# --- an absolute target, and an infeasible one
expect_status 0 "$PFI" allocate --target-w 50000 --strategy equal --only split=headline "$R"
contains "$T/err" "infeasible"
awk -F, 'NR>1 && $2!="TOTAL" { if ($7 != 200 && $7 != 500) exit 1 }' "$T/out" || fail "infeasible: not at the floors"; ok

# --- simulate (reduced scale): shape, oracle on top, pfi-aware >= equal at every cut, gap closed
expect_status 0 "$PFI" simulate --workloads 15 --pool-where split=headline "$R"
cp "$T/out" "$T/sim.csv"
lines "$T/sim.csv" $((2 * 9 * 41 + 1))
contains "$T/err" "paper: +1.5k tokens/s, 63%"
contains "$T/err" "closed loop gap closed by round"
awk -F, 'NR>1 { key=$1","$3; v[key","$2]=$4 } END {
    for (k in v) { split(k, a, ","); o = v[a[1]","a[2]",oracle"]; if (v[k] > o * (1 + 1e-9)) { print "above oracle: " k; exit 1 } } }' "$T/sim.csv" || fail "a strategy beats the oracle"; ok
awk -F, 'NR>1 && $2=="pfi-aware" { p[$1","$3]=$4 } NR>1 && $2=="equal" { e[$1","$3]=$4 } END {
    for (k in p) if (p[k] < e[k] * (1 - 1e-9)) { print "pfi-aware below equal at " k; exit 1 } }' "$T/sim.csv" || fail "pfi-aware below equal"; ok
awk -F, '$2=="oracle" && $3>0 && $6 != 1 {exit 1} $2=="equal" && $3>0 && $6 != 0 {exit 1}' "$T/sim.csv" || fail "gap_closed anchors"; ok
# deterministic
expect_status 0 "$PFI" simulate --workloads 15 --pool-where split=headline "$R"
cmp -s "$T/out" "$T/sim.csv" || fail "simulate not deterministic"; ok

# --- the score CSV (issue 31): the closed loop's SLA columns filled at every
# round (they read 0 before, its last round's violations aside), and more
# than 15 rounds
expect_status 0 "$PFI" simulate --workloads 10 --pool-where split=headline --strategies oracle,equal,closed-loop,safe-online \
  --sla-mix 0.25,0.25,0.25,0.25 --loop-rounds 20 --online-rounds 25 --score-csv "$T/score.csv" "$R"
head -1 "$T/score.csv" | grep -q '^scenario,strategy,cut,round,total,total_raw,gap_points,scored,gap_closed,gap_closed_raw,sla_violations,sla_violations_oracle_feasible,violating_workloads_oracle_feasible,' || fail "score CSV header"; ok
awk -F, '$2=="safe-online" && $3==0.3' "$T/score.csv" >"$T/so30"; lines "$T/so30" 52   # rounds 0..25, two scenarios
awk -F, '$2=="closed-loop" && $3==0.3' "$T/score.csv" >"$T/cl30"; lines "$T/cl30" 42   # rounds 0..20
# the violations within the offer's floors point (issue 44) are among all of them
head -1 "$T/score.csv" | grep -q ',offered_workloads,sla_violations_offered,sla_violations_offered_margin$' || fail "score CSV: the offered columns"; ok
awk -F, 'NR > 1 && $2=="safe-online" && $22 > 0 {n++} NR > 1 && ($23 > $11 || $24 > $23 || $24 > $20) {bad++} END {exit !(n > 0 && !bad)}' "$T/score.csv" ||
  fail "offered workloads or violations out of order"; ok
# --prior (issue 44): without profiles, the first floors come from the
# curve model's conservative bound; the round-1 allocations change where
# the tiers bind, and a model file without the prior is refused by name
"$PFI" fit --curve --train-where split=h100 --model "$T/cm.json" "$R" >/dev/null || fail "fit --curve"
for p in "" --prior; do
  expect_status 0 "$PFI" simulate --workloads 20 --pool-where split=headline --strategies oracle,equal,safe-online \
    --sla-mix 0.1,0.3,0.3,0.3 --no-profile --curve-model "$T/cm.json" $p --score-csv "$T/prior$p.csv" "$R"
done
awk -F, 'NR==FNR && $2=="safe-online" && $4==1 {a[$1","$3]=$5; next} $2=="safe-online" && $4==1 && a[$1","$3] != $5 {d++} END {exit !(d > 0)}' \
  "$T/prior.csv" "$T/prior--prior.csv" || fail "--prior changed no round-1 total"; ok
python3 -c 'import json,sys; o=json.load(open(sys.argv[1])); del o["prior"]; json.dump(o, open(sys.argv[2], "w"))' "$T/cm.json" "$T/cm_old.json"
expect_error 1 "no standard errors" "$PFI" simulate --workloads 2 --pool-where split=headline --strategies oracle,equal,safe-online \
  --no-profile --curve-model "$T/cm_old.json" --prior "$R"
awk -F, 'NR > 1 && $2=="closed-loop" && $4 < 20 && $11 > 0 {n++} END {exit !(n > 0)}' "$T/score.csv" ||
  fail "closed-loop: no SLA violations before its last round"; ok
awk -F, 'NR > 1 && $2=="closed-loop" && $12 > 0 {n++} NR > 1 && ($12 > $11 || $13 > $12) {bad++} END {exit !(n > 0 && !bad)}' "$T/score.csv" ||
  fail "closed-loop: oracle-feasible SLA columns empty or inconsistent"; ok
expect_error 2 "--online-rounds" "$PFI" simulate --online-rounds 101 "$R"

# --- out of sample: predictor fitted on the headline groups, jobs drawn from validation + H100
"$PFI" fit --train-where split=headline --model "$T/m.json" "$R" >/dev/null 2>&1 || fail fit; ok
"$PFI" fit --curve --train-where split=headline --model "$T/c.json" "$R" >/dev/null 2>&1 || fail "fit --curve"; ok
expect_status 0 "$PFI" simulate --workloads 20 --model "$T/m.json" --curve-model "$T/c.json" --pool-where split=validation,h100 "$R"
contains "$T/out" "production,curve-aware,0.3,"

# --- Zeus, normalized objective (throughput units differ between datasets)
Z="$SRC/data/zeus"
expect_status 0 "$PFI" simulate --workloads 20 --objective normalized --features power_frac --target robust \
  --strategies oracle,equal,pfi-aware --scenario random "$Z/summary_power_a40.csv" "$Z/summary_power_v100.csv"
contains "$T/err" "(normalized)"
lines "$T/out" $((3 * 41 + 1))

# --- a table without dram_copy_product (as Zeus's): only strategies that
# predict need features; dcgm needs the column; nothing is silently unweighted.
# Two linear 8-GPU jobs: Eq. 1 PFI a = 0.4286/0.2 = 2.143, b = 0.4286/0.5 = 0.857
printf 'group,gpu_model,gpus,cap_w,tokens_per_s,power_w,task\na,H200,8,400,800,3200,ft\na,H200,8,700,1000,5600,ft\nb,H200,8,400,500,3200,pt\nb,H200,8,700,1000,5600,pt\n' >"$T/nodcp.csv"
for s in oracle equal moe-ft-weighted; do
  expect_status 0 "$PFI" allocate --cut 0.2 --strategy $s "$T/nodcp.csv"
  lacks "$T/err" "infeasible"
done
expect_error 1 "pfi-aware needs a predicted PFI: the table has no column 'dram_copy_product' for the in-sample fit (choose features with --features" \
  "$PFI" allocate --cut 0.2 --strategy pfi-aware "$T/nodcp.csv"
expect_error 1 "curve-aware needs predicted curves: the table has no column 'dram_copy_product'" "$PFI" allocate --cut 0.2 --strategy curve-aware "$T/nodcp.csv"
expect_error 1 "pfi-aware needs a predicted PFI: the table has no column 'mfu'" "$PFI" allocate --cut 0.2 --strategy pfi-aware --features mfu "$T/nodcp.csv"
# dcgm used to shed nothing here and exit 0 ("every job is at its floor", all uncapped)
expect_error 1 "dcgm weights each job by its dram_copy_product: the table has no column 'dram_copy_product'" \
  "$PFI" allocate --cut 0.2 --strategy dcgm --features power_frac "$T/nodcp.csv"
# with the column, dcgm sheds in its proportion (0.3 : 0.1 of 2240 W); a group without a value is named
sed -e '1s/$/,dram_copy_product/' -e '/^a,/s/$/,0.3/' -e '/^b,/s/$/,0.1/' "$T/nodcp.csv" >"$T/dcp.csv"
expect_status 0 "$PFI" allocate --cut 0.2 --strategy dcgm "$T/dcp.csv"
near "$(csv_field "$T/out" group a target_w)" 3920 1e-6
near "$(csv_field "$T/out" group b target_w)" 5040 1e-6
sed -e '/^b,/s/0\.1$//' "$T/dcp.csv" >"$T/dcp1.csv"
expect_error 1 "dcgm: 1 of 2 jobs have no finite, positive dram_copy_product to weight their share by: 'b' (H200): dram_copy_product nan" \
  "$PFI" allocate --cut 0.2 --strategy dcgm "$T/dcp1.csv"

# --- --pfi measured: pfi-aware weighted by each group's own Eq. 1 PFI:
# shed ∝ P_max / T_max x PFI, i.e. 2240 W as 2.143 : 0.857 = 1600 : 640
expect_status 0 "$PFI" allocate --cut 0.2 --strategy pfi-aware --pfi measured "$T/nodcp.csv"
near "$(csv_field "$T/out" group a target_w)" 4000 1e-6
near "$(csv_field "$T/out" group b target_w)" 4960 1e-6
expect_status 0 "$PFI" allocate --cut 0.2 --strategy pfi-aware --pfi measured-robust "$T/nodcp.csv"   # robust = Eq. 1 on two points
near "$(csv_field "$T/out" group a target_w)" 4000 1e-6
# a group without a finite, positive PFI (no loss when capped; a gain) is named, never weighted 0
printf 'c,H200,8,400,1000,3200,ft\nc,H200,8,700,1000,5600,ft\nd,H200,8,400,1100,3200,ft\nd,H200,8,700,1000,5600,ft\n' | cat "$T/nodcp.csv" - >"$T/badpfi.csv"
expect_error 1 "--pfi measured (each group's Eq. 1 PFI): pfi-aware: 2 of 4 jobs have no finite, positive PFI to weight their share by: 'c' (H200): PFI nan; 'd' (H200): PFI nan" \
  "$PFI" allocate --cut 0.2 --strategy pfi-aware --pfi measured "$T/badpfi.csv"
expect_error 1 "2 of 4 jobs have no finite, positive PFI" "$PFI" allocate --cut 0.2 --strategy pfi-aware --pfi measured-robust "$T/badpfi.csv"
# ... in simulate too, for the whole pool even when a draw would miss them
expect_error 1 "--pfi measured (each group's Eq. 1 PFI): pfi-aware: 2 of 4 jobs" "$PFI" simulate --workloads 1 --jobs 1 --pfi measured "$T/badpfi.csv"
expect_error 1 "'cifar100/shufflenetv2/16/adam' (V100): PFI nan" "$PFI" allocate --cut 0.2 --strategy pfi-aware --pfi measured --objective normalized "$SRC/data/zeus/summary_power_v100.csv"
contains "$T/err" "11 of 68 jobs"
contains "$T/err" "and 8 more"

# --- simulate: the default set skips what the table cannot serve; named strategies must run
expect_status 0 "$PFI" simulate --workloads 3 --jobs 4 "$T/nodcp.csv"
for s in pfi-aware dcgm curve-aware closed-loop pfi-op; do contains "$T/err" "skipping $s: the table has no column 'dram_copy_product'"; done
lines "$T/out" $((2 * 4 * 41 + 1))
awk -F, 'NR>1 && $2!="oracle" && $2!="equal" && $2!="moe-ft-weighted" && $2!="safe-online" {exit 1}' "$T/out" || fail "simulate ran a strategy it skipped"; ok
expect_error 1 "dcgm weights each job by its dram_copy_product" "$PFI" simulate --workloads 3 --features power_frac --strategies oracle,equal,dcgm "$T/nodcp.csv"
expect_error 1 "pfi-aware needs a predicted PFI" "$PFI" simulate --workloads 3 --strategies all "$T/nodcp.csv"
expect_status 0 "$PFI" simulate --workloads 3 --jobs 4 --pfi measured --strategies oracle,equal,pfi-aware "$T/nodcp.csv"
contains "$T/err" "pfi-aware (measured PFI) recovers"

# --- decimals: the table shows what the CSV holds to 4 significant digits
# (Zeus's normalized throughput is ~1e-4..0.4; %.1f showed 0.0)
V="$SRC/data/zeus/summary_power_v100.csv"
expect_status 0 "$PFI" allocate --cut 0.2 --strategy equal --objective normalized "$V"
cp "$T/out" "$T/z.csv"
expect_status 0 "$PFI" allocate --cut 0.2 --strategy equal --objective normalized --format table "$V"
awk -F, 'NR>1 {print $9, $10, $11}' "$T/z.csv" >"$T/zc"
awk 'NR>1 {print $(NF-3), $(NF-2), $(NF-1)}' "$T/out" >"$T/zt"
paste -d' ' "$T/zc" "$T/zt" | awk '{ for (k = 1; k <= 3; k++) { c = $k; t = $(k + 3); d = c - t; if (d < 0) d = -d; if (d > 1e-3 * c) { print "table " t " vs csv " c; exit 1 } } }' \
  || fail "table throughput lacks 4 significant digits"; ok
# simulate's headline: the recovered throughput per job as the CSV has it, to 4 digits
expect_status 0 "$PFI" simulate --workloads 20 --objective normalized --features power_frac --target robust \
  --strategies oracle,equal,pfi-aware --scenario random "$SRC/data/zeus/summary_power_a40.csv" "$V"
h=$(sed -n 's/.*pfi-aware recovers \([-+0-9.e]*\) (normalized).*/\1/p' "$T/err")
c=$(awk -F, '$1=="random" && $2=="pfi-aware" && $3=="0.3" {print $7}' "$T/out")
near "$h" "$c" "$(awk -v c="$c" 'BEGIN{print (c < 0 ? -c : c) * 1e-3}')"

# --- usage
expect_error 2 "--pfi: 'oracle' is not predicted, measured or measured-robust" "$PFI" allocate --cut 0.3 --pfi oracle "$R"
expect_error 2 "--pfi: 'x' is not predicted" "$PFI" simulate --pfi x "$R"
expect_error 2 "--model predicts the PFI: it cannot be combined with --pfi measured" "$PFI" allocate --cut 0.3 --pfi measured --model "$T/m.json" "$R"
expect_error 2 "--model predicts the PFI: it cannot be combined with --pfi measured-robust" "$PFI" simulate --pfi measured-robust --model "$T/m.json" "$R"
expect_error 2 "--strategies: unknown strategy 'best'" "$PFI" simulate --strategies best "$R"
expect_error 2 "--sla-mix" "$PFI" simulate --sla-mix 1,2 "$R"
expect_error 2 "give exactly one of --cut and --target-w" "$PFI" allocate "$R"
expect_error 2 "--strategy: 'magic'" "$PFI" allocate --cut 0.3 --strategy magic "$R"
done_ok
