#!/bin/sh
# test_predict.sh — `pfi stats`, `pfi fit` (with the ablation, out-of-sample
# sets and the curve predictor) and `pfi predict` on the reconstruction and
# on Zeus. The job-metadata row of the ablation must reproduce table 3: its
# inputs (arch, task, GPU count) and targets (table 6's PFIs) are the paper's.
. "$(dirname "$0")/lib.sh"
R="$T/recon.csv"
"$PFI" synth --summary -o "$R" || fail "synth"; ok
field() { awk -F, -v s="$2" -v st="$3" -v f="$4" -v c="$5" 'NR==1{for(i=1;i<=NF;i++)h[$i]=i;next} $h["subset"]==s && $h["statistic"]==st && $h["feature"]==f {print $h[c]; exit}' "$1"; }

# --- stats
expect_status 0 "$PFI" stats --only split=headline "$R"
cp "$T/out" "$T/stats.csv"
head -1 "$T/stats.csv" | grep -q '^section,subset,statistic,feature,value,n,p,q$' || fail "stats header"; ok
H=$(field "$T/stats.csv" "3 groups (df 2)" kruskal_wallis_H "" value); near "$H" 12.5 0.6
p=$(field "$T/stats.csv" "3 groups (df 2)" kruskal_wallis_H "" p); awk -v p="$p" 'BEGIN{exit !(p < 0.01)}' || fail "KW p $p"; ok
q=$(field "$T/stats.csv" "dense vs moe-ft" dunn_z "" q); awk -v q="$q" 'BEGIN{exit !(q < 0.05)}' || fail "dense vs moe-ft not significant"; ok
q=$(field "$T/stats.csv" "dense vs moe-pt" dunn_z "" q); awk -v q="$q" 'BEGIN{exit !(q > 0.05)}' || fail "dense vs moe-pt significant"; ok
rho=$(field "$T/stats.csv" all spearman_rho dram_copy_product value); awk -v r="$rho" 'BEGIN{exit !(r > 0.45 && r < 0.62)}' || fail "rho $rho"; ok
n=$(grep -c '^leverage,' "$T/stats.csv"); [ "$n" -eq 6 ] || fail "leverage rows $n"; ok
# BH q is never below p, and a median of 14 dense groups is reported
awk -F, '$1=="correlation" && $3=="spearman_rho" { if ($8 < $7 - 1e-12) exit 1 }' "$T/stats.csv" || fail "q < p"; ok
[ "$(field "$T/stats.csv" dense median_pfi "" n)" = 14 ] || fail "dense n"; ok
grep -q '^subgroup,all except moe-ft,' "$T/stats.csv" || fail "subgroup rows"; ok

# --- ablation: the job-metadata row is table 3's
expect_status 0 "$PFI" fit --ablation --train-where split=headline "$R"
cp "$T/out" "$T/abl.csv"
lines "$T/abl.csv" 8
row=$(grep '^"job_metadata' "$T/abl.csv" || grep '^job_metadata' "$T/abl.csv")
r2_in=$(echo "$row" | awk -F, '{print $3}'); loo=$(echo "$row" | awk -F, '{print $4}'); loco=$(echo "$row" | awk -F, '{print $7}')
near "$r2_in" 0.519 0.01
near "$loo" 0.310 0.01
near "$loco" -4.106 0.05
grep -q '^all_dcgm_metrics+job_metadata,16,' "$T/abl.csv" || fail "16-feature row"; ok

# --- fit, model file, out-of-sample, predict
expect_status 0 "$PFI" fit --train-where split=headline --eval-where split=validation --eval-where split=h100 --model "$T/m.json" "$R"
cp "$T/out" "$T/fit.csv"
contains "$T/fit.csv" "eval:split=h100"
contains "$T/m.json" '"kind": "pfi-ols"'
contains "$T/m.json" '"name": "dram_copy_product"'
contains "$T/m.json" '"clamp"'
contains "$T/m.json" '"loco"'
contains "$T/m.json" "reconstruction"
contains "$T/err" "pfi = "
expect_status 0 "$PFI" predict "$T/m.json" "$R"
cp "$T/out" "$T/pred.csv"
lines "$T/pred.csv" 36
# in-sample R^2 of the predictions equals fit's
r2=$(awk -F, 'NR>1 && $3=="headline" {n++; y[n]=$4; p[n]=$6; s+=$4} END{m=s/n; for(i=1;i<=n;i++){e+=(y[i]-p[i])^2; t+=(y[i]-m)^2}; printf "%.6f", 1-e/t}' "$T/pred.csv")
near "$r2" "$(awk -F, '$1=="in_sample"{print $3}' "$T/fit.csv")" 1e-5
awk -F, 'NR>1 && !($6 > 0) {exit 1}' "$T/pred.csv" || fail "non-positive prediction"; ok
# a feature outside the training range is warned about
contains "$T/err" "outside the training range"

# --- the curve predictor
expect_status 0 "$PFI" fit --curve --train-where split=headline --eval-where split=h100 --model "$T/c.json" "$R"
cp "$T/out" "$T/curve.csv"
contains "$T/c.json" '"kind": "curve"'
awk -F, '$1=="loo" && !($4 < 0.1 && $5 < 0.05) {exit 1}' "$T/curve.csv" || fail "curve LOO error too large"; ok
expect_status 0 "$PFI" predict "$T/c.json" "$R"
awk -F, 'NR>1 { k=$1","$2; if (k==last && ($6 < lt - 1e-9 || $7 < lp - 1e-9)) exit 1; if ($6 > 1 + 1e-9 || $7 > 1 + 1e-9) exit 1; last=k; lt=$6; lp=$7 }' "$T/out" \
  || fail "predicted curve not monotone or above 1"; ok

# --- Zeus: power_frac only, robust PFI, datasets as clusters, P100 and RTX 6000 held out
Z="$SRC/data/zeus"
expect_status 0 "$PFI" fit --target robust --features power_frac --cluster-by dataset \
  --train-where gpu_model=A40,V100 --eval-where gpu_model=P100 --eval-where gpu_model=RTX6000 \
  "$Z/summary_power_a40.csv" "$Z/summary_power_v100.csv" "$Z/summary_power_p100.csv" "$Z/summary_power_rtx6000.csv"
contains "$T/out" "eval:gpu_model=P100"
contains "$T/out" "eval:gpu_model=RTX6000"
contains "$T/err" "no finite robust target"
expect_status 0 "$PFI" stats --target robust --grouping dataset --key-feature power_frac "$Z/summary_power_v100.csv"
contains "$T/out" "kruskal_wallis_H"

# --- errors
expect_error 1 "feature 'dram_copy_product' is not a numeric column" "$PFI" fit "$Z/summary_power_v100.csv"
expect_error 2 "--target: 'median'" "$PFI" fit --target median "$R"
expect_error 2 "--target: 'x'" "$PFI" stats --target x "$R"
expect_error 2 "filter 'nosuch=1': no column 'nosuch'" "$PFI" fit --train-where nosuch=1 "$R"
printf '{"format_version": 1, "kind": "pfi-ols"}' >"$T/bad.json"
expect_error 1 "bad.json: 'features'" "$PFI" predict "$T/bad.json" "$R"
expect_error 1 "the table has no feature 'dram_copy_product'" "$PFI" predict "$T/m.json" "$Z/summary_power_v100.csv"
expect_error 2 "need a model file" "$PFI" predict "$T/m.json"
done_ok
