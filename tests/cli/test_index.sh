#!/bin/sh
# test_index.sh — `pfi index` end to end: Zeus traces, Eq. 1 against an
# independent awk computation, sub-grids, ratios, formats, atomic output,
# every bad-input case of the core issue, and usage errors.
. "$(dirname "$0")/lib.sh"
Z="$SRC/data/zeus"

# --- Zeus V100: one line per group with pfi, pfi_robust and verdict
expect_status 0 "$PFI" index --no-ci "$Z/summary_power_v100.csv"
cp "$T/out" "$T/v100.csv"
lines "$T/v100.csv" 69
head -1 "$T/v100.csv" | grep -q '^gpu_model,group,arch,task,model,split,gpus,n_runs,n_caps,cap_max_w,tokens_per_s_max,power_w_max,pfi,n_used,n_excluded,pfi_ci_lo,pfi_ci_hi,area,elasticity_a,elasticity_1_minus_a,elasticity_inv_a,elasticity_r2,pfi_noise_aware,n_noise_kept,pfi_robust,pfi_robust_lo,pfi_robust_hi,robust_n_fit,verdict,pfi_ci_verdict,pfi_ci_reason$' \
  || fail "index header changed"
ok
# Eq. 1 for one group computed independently from the raw trace
g="imagenet/resnet50/128/adadelta"
want=$(awk -F, '$1=="imagenet" && $2=="resnet50" && $3==128 && $4=="adadelta" {c[$5]=$5; t[$5]=1/$6; p[$5]=$7; if($5>m)m=$5}
  END{s=0;n=0; for(k in c) if(k<m && t[k]<t[m]) {s+=(1-p[k]/p[m])/(1-t[k]/t[m]); n++}; printf "%.9f", s/n}' "$Z/summary_power_v100.csv")
got=$(csv_field "$T/v100.csv" group "$g" pfi)
near "$got" "$want" 1e-8
# plain Eq. 1 on V100 spans the broken range the issue describes
min=$(awk -F, 'NR>1 && $13!="" {if(m==""||$13<m)m=$13} END{print m}' "$T/v100.csv")
max=$(awk -F, 'NR>1 && $13!="" {if($13>m)m=$13} END{print m}' "$T/v100.csv")
near "$min" -2.88 0.01
near "$max" 51.5 0.1

# --- robust estimate: finite and plausible for every power-bound group (A40, V100)
for gpu in a40 v100; do
  expect_status 0 "$PFI" index --no-ci "$Z/summary_power_$gpu.csv"
  awk -F, 'NR>1 {
      v=$29; r=$25; lo=$26
      if (v=="ok" || v=="noisy") { if (r=="" || r<=0.2 || r>50) { print "bad robust " $2 " " r; bad=1 } }
      else if (v=="non-positive-slope") { if (lo=="" || lo<=0) { print "no lower bound " $2; bad=1 } }
      else if (v=="not-power-bound") { if (r!="") { print "value for npb " $2; bad=1 } }
      else { print "verdict " v; bad=1 }
      if (v=="ok") nok++
    } END { if (nok < 30) { print "only " nok " ok groups"; bad=1 }; exit bad }' "$T/out" \
    || fail "robust estimates on $gpu"
  ok
done

# --- CI present, reproducible, ordered
expect_status 0 "$PFI" index --resamples 2000 --seed 7 "$Z/summary_power_a40.csv"
cp "$T/out" "$T/ci1.csv"
expect_status 0 "$PFI" index --resamples 2000 --seed 7 "$Z/summary_power_a40.csv"
cmp -s "$T/out" "$T/ci1.csv" || fail "same seed gave different output"
ok
awk -F, 'NR>1 && $13!="" && $16!="" { if (!($16 <= $17)) exit 1 }' "$T/ci1.csv" || fail "ci_lo > ci_hi"
ok

# --- the CI contains the estimate, or is empty with pfi_ci_verdict unstable and a reason
ci_invariant() { # FILE
  awk -F, 'NR==1{for(i=1;i<=NF;i++)h[$i]=i; next}
    { p=$h["pfi"]; lo=$h["pfi_ci_lo"]; hi=$h["pfi_ci_hi"]; v=$h["pfi_ci_verdict"]; why=$h["pfi_ci_reason"]
      if (v=="ok") { if (lo=="" || hi=="" || p+0 < lo+0 || p+0 > hi+0) { print "ok CI without the estimate: " $2; bad=1 } }
      else if (v=="unstable") { if (lo!="" || hi!="" || why=="") { print "unstable CI not empty or no reason: " $2; bad=1 } }
      else if (p!="" || lo!="" || hi!="") { print "no CI verdict: " $2; bad=1 } }
    END { exit bad }' "$1"
}
for gpu in a40 v100; do
  expect_status 0 "$PFI" index --resamples 2000 "$Z/summary_power_$gpu.csv"
  ci_invariant "$T/out" || fail "CI invariant on $gpu"; ok
done
# a 13-cap curve flat until its lowest caps (the shape of a real V100 ShuffleNet
# sweep): nine capped runs at T_max are excluded from Eq. 1; they used to
# re-enter the Monte Carlo with near-zero denominators, putting the whole
# interval above the estimate (10.30 with [10.51, 3322])
flat() { # FILE T_AT_200W
  { echo 'group,gpu_model,gpus,cap_w,tokens_per_s,power_w'
    echo 'flat,V100,1,100,700,100'; echo 'flat,V100,1,112.5,880,112'; echo 'flat,V100,1,125,985,124'
    for cp in 137.5:136 150:148 162.5:160 175:171 187.5:180 212.5:194 225:198 237.5:200; do
      echo "flat,V100,1,${cp%:*},1000,${cp#*:}"; done
    echo "flat,V100,1,200,$2,188"; echo 'flat,V100,1,250,1000,201'; } >"$1"
}
flat "$T/flat.csv" 1000
expect_status 0 "$PFI" index "$T/flat.csv"
ci_invariant "$T/out" || fail "CI invariant on the flat curve"; ok
[ "$(csv_field "$T/out" group flat pfi_ci_verdict)" = ok ] || fail "flat: CI verdict"; ok
[ "$(csv_field "$T/out" group flat n_excluded)" = 9 ] || fail "flat: n_excluded"; ok
pfi=$(csv_field "$T/out" group flat pfi); lo=$(csv_field "$T/out" group flat pfi_ci_lo)
hi=$(csv_field "$T/out" group flat pfi_ci_hi)
awk -v p="$pfi" -v l="$lo" -v h="$hi" 'BEGIN{exit !(l <= p && p <= h && h < 1.2 * p)}'   || fail "flat: CI [$lo, $hi] around $pfi"; ok
# the same with a used cap whose slowdown (0.01%) is inside its SEM (0.05%):
# that ratio has no bounded interval, so the CI is empty and says why
flat "$T/flat2.csv" 999.9
expect_status 0 "$PFI" index "$T/flat2.csv"
ci_invariant "$T/out" || fail "CI invariant on the unstable curve"; ok
[ "$(csv_field "$T/out" group flat pfi_ci_verdict)" = unstable ] || fail "flat2: CI verdict"; ok
contains "$T/out" "slowdown within noise at cap 200 W: a used cap had T_i >= T_max in"
expect_status 0 "$PFI" index --format table "$T/flat2.csv"
contains "$T/out" "unstable"
# a throughput SEM of 0 collapses the CI: warned, naming group and caps
printf 'group,gpu_model,gpus,cap_w,tokens_per_s,tokens_per_s_sem,power_w\nz,H200,8,700,1000,2,5000\nz,H200,8,600,980,0,4600\nz,H200,8,500,930,0,3800\n' >"$T/zsem.csv"
expect_status 0 "$PFI" index "$T/zsem.csv"
contains "$T/err" "warning: group 'z' (H200): throughput SEM is 0 at caps 500, 600 W"
expect_status 0 "$PFI" index --noise-floor 0.001 "$T/zsem.csv"
lacks "$T/err" "SEM is 0"

# --- sub-grid: a group lacking a listed cap is skipped with a warning
cat >"$T/s.csv" <<'CSV'
group,gpu_model,gpus,cap_w,tokens_per_s,power_w
a,H200,8,200,500,1600
a,H200,8,500,930,3800
a,H200,8,600,980,4600
a,H200,8,700,1000,5000
a,H200,8,300,700,2300
b,H200,8,300,700,2300
b,H200,8,700,1000,5000
CSV
expect_status 0 "$PFI" index --no-ci --caps 200,500,600,700 "$T/s.csv"
contains "$T/err" "group 'b' (H200) skipped: no run at cap 200 W"
lines "$T/out" 2
got=$(csv_field "$T/out" group a pfi)
want=$(awk 'BEGIN{printf "%.9f", ((1-1600/5000)/(1-0.5)+(1-3800/5000)/(1-0.93)+(1-4600/5000)/(1-0.98))/3}')
near "$got" "$want" 1e-8
# per-cap ratios, long format
expect_status 0 "$PFI" index --no-ci --ratios "$T/r.csv" "$T/s.csv"
lines "$T/r.csv" 6
contains "$T/r.csv" "gpu_model,group,cap_w,power_w,tokens_per_s,power_frac,tokens_frac,ratio,used"
got=$(awk -F, '$2=="a" && $3==200 {print $8}' "$T/r.csv")
near "$got" 1.36 1e-9

# --- formats
expect_status 0 "$PFI" index --no-ci --json "$T/s.csv"
contains "$T/out" '"verdict": "ok"'
head -c1 "$T/out" | grep -q '\[' || fail "json is not an array"; ok
expect_status 0 "$PFI" index --no-ci --format table "$T/s.csv"
contains "$T/out" "verdict"
expect_status 0 "$PFI" index --no-ci --format csv -o "$T/o.csv" "$T/s.csv"
contains "$T/o.csv" "gpu_model,group"
[ ! -s "$T/out" ] || fail "stdout not empty with -o"; ok

# --- bad input: one-line error naming file, line and column; exit 1; no output file
bad() { # NAME CONTENT EXPECTED
  printf '%b' "$2" >"$T/$1.csv"
  rm -f "$T/never.csv"
  expect_error 1 "$3" "$PFI" index -o "$T/never.csv" "$T/$1.csv"
  [ ! -e "$T/never.csv" ] || fail "partial output left for $1"
  ls "$T" | grep -q 'never.csv.tmp' && fail "temp file left for $1"
  ok
}
H='group,gpu_model,gpus,cap_w,tokens_per_s,power_w\n'
bad missing 'group,gpu_model,gpus,cap_w,tokens_per_s\na,H,8,700,1\n' "missing.csv:1: missing required column 'power_w'"
bad duphdr 'group,gpu_model,gpus,cap_w,tokens_per_s,power_w,power_w\n' "duphdr.csv:1: duplicate column 'power_w'"
bad nan "${H}a,H,8,700,100,5000\na,H,8,600,nan,4000\n" "nan.csv:3: column 'tokens_per_s': not a number"
bad inf "${H}a,H,8,700,100,inf\n" "inf.csv:2: column 'power_w': not a number"
bad neg "${H}a,H,8,700,-100,5000\n" "neg.csv:2: column 'tokens_per_s': negative value"
bad text "${H}a,H,eight,700,100,5000\n" "text.csv:2: column 'gpus': not a number"
bad empty '' "empty.csv: empty file (no header)"
bad hdronly "$H" "hdronly.csv: header only, no data rows"
bad short "${H}a,H,8,700,100\n" "short.csv:2: expected 6 fields, found 5"
bad crlfnan "group,gpu_model,gpus,cap_w,tokens_per_s,power_w\r\na,H,8,700,100,5000\r\na,H,8,600,,4000\r\n" "crlfnan.csv:3: column 'tokens_per_s': missing required value"
# CRLF line endings are fine
printf 'group,gpu_model,gpus,cap_w,tokens_per_s,power_w\r\na,H,8,700,100,5000\r\na,H,8,600,98,4750\r\n' >"$T/crlf.csv"
expect_status 0 "$PFI" index --no-ci "$T/crlf.csv"
got=$(csv_field "$T/out" group a pfi); near "$got" 2.5 1e-9
# a group without a capped point: documented rule (warning, verdict too-few-points)
printf '%b' "${H}a,H,8,700,100,5000\nb,H,8,700,100,5000\nb,H,8,600,98,4750\n" >"$T/nocap.csv"
expect_status 0 "$PFI" index --no-ci "$T/nocap.csv"
contains "$T/err" "group 'a' (H) has no capped run"
got=$(csv_field "$T/out" group a verdict); [ "$got" = "too-few-points" ] || fail "verdict $got"; ok
# a 2 GB line: error after the 1 MiB record limit, without reading it all
(printf 'group,gpu_model,gpus,cap_w,tokens_per_s,power_w\n'; head -c 2147483648 /dev/zero | tr '\0' x) \
  | "$PFI" index - >"$T/out" 2>"$T/err"
[ $? -eq 1 ] || fail "2 GB line not rejected"; ok
contains "$T/err" "(stdin):2: record longer than 1048576 bytes"
# binary garbage
head -c 4096 /dev/urandom >"$T/garbage.csv"
"$PFI" index "$T/garbage.csv" >"$T/out" 2>"$T/err"; rc=$?
[ $rc -eq 1 ] || fail "garbage gave exit $rc"; ok
# missing file
expect_error 1 "nosuch.csv: cannot open" "$PFI" index "$T/nosuch.csv"

# --- usage errors: exit 2
expect_error 2 "unknown option" "$PFI" index --frobnicate "$T/s.csv"
expect_error 2 "--format: 'xml'" "$PFI" index --format xml "$T/s.csv"
expect_error 2 "--caps" "$PFI" index --caps 200,abc "$T/s.csv"
expect_error 2 "no sweep table" "$PFI" index
expect_error 2 "unknown command 'indx'" "$PFI" indx
expect_status 0 "$PFI" help index
contains "$T/out" "usage: pfi index"
expect_status 0 "$PFI" --version
contains "$T/out" "pfi 0."
done_ok
