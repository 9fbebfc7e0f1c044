#!/bin/sh
# test_ingest.sh — `pfi ingest` on hand-made traces with known answers
# (tests/tools/mktrace.c): phases and top-10% aggregation (dips must not
# move the result), the three telemetry formats agreeing, multi-host power
# sums, tar streams (ustar, pax, GNU long names, run.json not first), and
# every bad-input case of the ingest issue. Throughput by the paper's rule
# (--throughput-agg top10) throughout: mktrace's answers are top-10% means;
# the default, the loop's own rate, is test_protocol's (throughput_rate)
# and test_steplog_torch's.
. "$(dirname "$0")/lib.sh"
: "${TOOLS:?}"
MK="$TOOLS/mktrace"

val() { csv_field "$1" group test-group "$2"; }
expect_from() { grep "^$2=" "$1" | cut -d= -f2; }

# --- known answers, prometheus text
"$MK" "$T/r/a" >"$T/a.exp" || fail mktrace; ok
expect_status 0 "$PFI" ingest --throughput-agg top10 "$T/r/a"
cp "$T/out" "$T/a.csv"
near "$(val "$T/a.csv" power_w)" "$(expect_from "$T/a.exp" expect_power_w)" 1e-6
near "$(val "$T/a.csv" tokens_per_s)" "$(expect_from "$T/a.exp" expect_tokens_per_s)" 1e-6
near "$(val "$T/a.csv" DCGM_FI_DEV_SM_CLOCK)" "$(expect_from "$T/a.exp" expect_sm_clock)" 1e-6
near "$(val "$T/a.csv" dram_copy_product)" "$(expect_from "$T/a.exp" expect_dram_copy_product)" 1e-9
near "$(val "$T/a.csv" n_samples)" 360 0
near "$(val "$T/a.csv" gpus)" 8 0
near "$(val "$T/a.csv" cap_w)" 700 0
near "$(val "$T/a.csv" mfu)" 0.41 1e-9
[ "$(val "$T/a.csv" arch)" = moe ] || fail "arch"; ok
[ "$(val "$T/a.csv" seq_len)" = 4096 ] || fail "metadata column seq_len"; ok
head -1 "$T/a.csv" | grep -q '^group,gpu_model,gpus,cap_w,tokens_per_s,tokens_per_s_sem,power_w,power_w_sem,arch,task,model,split,mfu,mfu_sem,tflops,' || fail "ingest header"; ok

# --- the eval and checkpoint dips do not move the top-10% result ...
"$MK" "$T/r/b" --no-dips >"$T/b.exp"
expect_status 0 "$PFI" ingest --throughput-agg top10 "$T/r/b"
[ "$(val "$T/out" power_w)" = "$(val "$T/a.csv" power_w)" ] || fail "dips moved power_w"; ok
[ "$(val "$T/out" tokens_per_s)" = "$(val "$T/a.csv" tokens_per_s)" ] || fail "dips moved tokens_per_s"; ok
# ... but they do move a plain mean
expect_status 0 "$PFI" ingest --throughput-agg top10 --agg mean "$T/r/a"; m_dips=$(val "$T/out" power_w)
expect_status 0 "$PFI" ingest --throughput-agg top10 --agg mean "$T/r/b"; m_clean=$(val "$T/out" power_w)
awk -v a="$m_dips" -v b="$m_clean" 'BEGIN{exit !(a < b - 10)}' || fail "mean not lowered by dips ($m_dips vs $m_clean)"; ok
expect_status 0 "$PFI" ingest --throughput-agg top10 --agg median "$T/r/a"
near "$(val "$T/out" power_w)" 4348 1e-6  # median: 15 dip scrapes, then 34 of each residue 0-5 ... (hand count)

# --- three formats give the same values on the columns they share
"$MK" "$T/r/q" --format query_range >/dev/null
"$MK" "$T/r/n" --format nvidia-smi >/dev/null
"$MK" "$T/r/s" --timestamps >/dev/null
expect_status 0 "$PFI" ingest --throughput-agg top10 "$T/r/q"; cp "$T/out" "$T/q.csv"
expect_status 0 "$PFI" ingest --throughput-agg top10 "$T/r/n"; cp "$T/out" "$T/n.csv"
expect_status 0 "$PFI" ingest --throughput-agg top10 "$T/r/s"; cp "$T/out" "$T/s.csv"
for col in power_w tokens_per_s DCGM_FI_DEV_GPU_UTIL DCGM_FI_DEV_SM_CLOCK DCGM_FI_DEV_MEM_CLOCK \
           DCGM_FI_DEV_FB_USED DCGM_FI_DEV_MEM_COPY_UTIL DCGM_FI_DEV_ENFORCED_POWER_LIMIT n_samples; do
  a=$(val "$T/a.csv" $col)
  near "$(val "$T/q.csv" $col)" "$a" 1e-6
  near "$(val "$T/n.csv" $col)" "$a" 1e-6
  near "$(val "$T/s.csv" $col)" "$a" 1e-6
done
near "$(val "$T/q.csv" dram_copy_product)" "$(val "$T/a.csv" dram_copy_product)" 1e-9
# nvidia-smi has no profiling metrics: no such columns
lacks "$T/n.csv" DCGM_FI_PROF_DRAM_ACTIVE
# the header nvidia-smi really prints names the clocks canonically
# (clocks.current.sm, clocks.current.memory): the clock columns still arrive
"$MK" "$T/smi/nc" --format nvidia-smi >/dev/null
sed -i '1s/clocks\.sm/clocks.current.sm/; 1s/clocks\.mem/clocks.current.memory/' "$T"/smi/nc/tel-*.csv
grep -q 'clocks.current.memory \[MHz\]' "$T/smi/nc/tel-0.csv" || fail "header not rewritten"; ok
expect_status 0 "$PFI" ingest --throughput-agg top10 "$T/smi/nc"
near "$(val "$T/out" DCGM_FI_DEV_SM_CLOCK)" "$(val "$T/a.csv" DCGM_FI_DEV_SM_CLOCK)" 1e-6
near "$(val "$T/out" DCGM_FI_DEV_MEM_CLOCK)" "$(val "$T/a.csv" DCGM_FI_DEV_MEM_CLOCK)" 1e-6

# --- multi-host: power is summed across hosts however the GPUs are spread
"$MK" "$T/r/h1" --hosts 1 --gpus-per-host 8 >/dev/null
"$MK" "$T/r/h4" --hosts 4 --gpus-per-host 2 >/dev/null
expect_status 0 "$PFI" ingest --throughput-agg top10 "$T/r/h1"; near "$(val "$T/out" power_w)" 4748 1e-6
expect_status 0 "$PFI" ingest --throughput-agg top10 "$T/r/h4"; near "$(val "$T/out" power_w)" 4748 1e-6
"$MK" "$T/r/h2x2" --hosts 2 --gpus-per-host 2 >"$T/h2x2.exp"
expect_status 0 "$PFI" ingest --throughput-agg top10 "$T/r/h2x2"
near "$(val "$T/out" power_w)" "$(expect_from "$T/h2x2.exp" expect_power_w)" 1e-6
near "$(val "$T/out" gpus)" 4 0

# --- --root finds run directories, sorted
expect_status 0 "$PFI" ingest --throughput-agg top10 --root "$T/r"
lines "$T/out" 9

# --- tar streams: GNU tar's own order (run.json not necessarily first), pax, GNU long names
long="$T/t/a-run-directory-whose-name-is-long-enough-to-need-more-than-the-100-bytes-of-a-ustar-name-field-for-sure"
mkdir -p "$T/t"; cp -r "$T/r/a" "$long"
(cd "$T/r" && tar --format=ustar -cf "$T/a-ustar.tar" a)
(cd "$T/t" && tar --format=pax -cf "$T/a-pax.tar" "$(basename "$long")")
(cd "$T/t" && tar --format=gnu -cf "$T/a-gnu.tar" "$(basename "$long")")
tar tf "$T/a-gnu.tar" | head -1 | grep -q 'for-sure/$' || fail "long name not in the GNU archive"; ok
for fmt in ustar pax gnu; do
  "$PFI" ingest --throughput-agg top10 - <"$T/a-$fmt.tar" >"$T/out" 2>"$T/err" || { cat "$T/err"; fail "tar $fmt"; }
  ok
  near "$(val "$T/out" power_w)" 4748 1e-6
  near "$(val "$T/out" tokens_per_s)" 20100 1e-6
done
# run.json last: its files are buffered until it arrives
(cd "$T/r/a" && tar -cf "$T/last.tar" tel-0.prom tel-1.prom steps.jsonl run.json)
expect_status 0 "$PFI" ingest --throughput-agg top10 "$T/last.tar"
near "$(val "$T/out" power_w)" 4748 1e-6
# several runs in one stream
(cd "$T/r" && tar -cf "$T/two.tar" a b)
expect_status 0 "$PFI" ingest --throughput-agg top10 - <"$T/two.tar"
lines "$T/out" 3
# a truncated stream and garbage
head -c 300000 "$T/two.tar" >"$T/trunc.tar"
expect_error 1 "truncated tar stream" "$PFI" ingest --throughput-agg top10 "$T/trunc.tar"
head -c 10000 /dev/urandom >"$T/garbage.tar"
expect_error 1 "not a tar header" "$PFI" ingest --throughput-agg top10 "$T/garbage.tar"
: >"$T/empty.tar"
expect_error 1 "empty input" "$PFI" ingest --throughput-agg top10 "$T/empty.tar"

# --- bad input
fault() { # NAME EXPECTED-SUBSTRING [extra mktrace args]
  n=$1; sub=$2; shift 2
  "$MK" "$T/f/$n" --fault "$n" "$@" >/dev/null
  expect_error 1 "$sub" "$PFI" ingest --throughput-agg top10 -o "$T/never.csv" "$T/f/$n"
  [ ! -e "$T/never.csv" ] || fail "partial output for $n"; ok
}
fault backwards "tel-0.prom:"
contains "$T/err" "timestamps go backwards"
fault notrain "no training phase"
fault overlap "the step log has no samples in the training phase"
fault nots "sample without a timestamp"
fault gpus "run.json says 9 GPUs but the telemetry has 8"
fault nan "steps.jsonl:51:"
# a GPU that disappears mid-run: its bins are dropped with a warning; the run is still usable
"$MK" "$T/f/vanish" --fault vanish >/dev/null
expect_status 0 "$PFI" ingest --throughput-agg top10 "$T/f/vanish"
contains "$T/err" "scrape intervals dropped"
n=$(val "$T/out" n_samples); awk -v n="$n" 'BEGIN{exit !(n > 100 && n < 360)}' || fail "vanish n_samples $n"; ok
# a truncated last line is skipped with a warning
"$MK" "$T/f/truncate" --fault truncate >/dev/null
expect_status 0 "$PFI" ingest --throughput-agg top10 "$T/f/truncate"
contains "$T/err" "truncated last line ignored"
# the enforced limit must match the manifest's cap
"$MK" "$T/f/cap" --enforced 650 >/dev/null
expect_error 1 "enforced power limit 650.0 W in the telemetry but cap_w 700 W" "$PFI" ingest --throughput-agg top10 "$T/f/cap"
expect_status 0 "$PFI" ingest --throughput-agg top10 --no-cap-check "$T/f/cap"
# a rule whose input column is absent is skipped with one warning per run,
# naming the rule and the column; never silently
dropcol() { # DIR FIELD: remove one column from each nvidia-smi file of a run
  for f in "$1"/tel-*.csv; do cut -d, -f"$2" --complement "$f" >"$f.x" && mv "$f.x" "$f"; done
}
expect_status 0 "$PFI" ingest --throughput-agg top10 "$T/r/n"
lacks "$T/err" "skipped"
"$MK" "$T/nolim/a" --format nvidia-smi --cap 450 --enforced 500 >/dev/null
expect_error 1 "enforced power limit 500.0 W in the telemetry but cap_w 450 W" "$PFI" ingest --throughput-agg top10 "$T/nolim/a"
dropcol "$T/nolim/a" 5  # enforced.power.limit: a run labelled 450 W that ran at 500 W
cp -r "$T/nolim/a" "$T/nolim/b"
expect_status 0 "$PFI" ingest --throughput-agg top10 --root "$T/nolim"
[ "$(grep -c 'warning: run .*: cap check skipped: no power-limit column' "$T/err")" -eq 2 ] \
  || { cat "$T/err"; fail "one cap-check warning per run"; }; ok
contains "$T/err" "nolim/a: cap check skipped"
contains "$T/err" "enforced.power.limit"
lacks "$T/err" "warm-up"
expect_status 0 "$PFI" ingest --throughput-agg top10 --no-cap-check "$T/nolim/a"
lacks "$T/err" "cap check skipped"
"$MK" "$T/nofb" --format nvidia-smi >/dev/null
dropcol "$T/nofb" 10  # memory.used
expect_status 0 "$PFI" ingest --throughput-agg top10 "$T/nofb"
[ "$(grep -c 'warning: run .*nofb: warm-up rule skipped: no framebuffer-used column (DCGM_FI_DEV_FB_USED; nvidia-smi memory.used)' "$T/err")" -eq 1 ] \
  || { cat "$T/err"; fail "one warm-up warning"; }; ok
# missing, empty and garbage files
"$MK" "$T/f/miss" >/dev/null; rm "$T/f/miss/tel-1.prom"
expect_error 1 "tel-1.prom: cannot open" "$PFI" ingest --throughput-agg top10 "$T/f/miss"
"$MK" "$T/f/empty" >/dev/null; : >"$T/f/empty/tel-0.prom"; : >"$T/f/empty/tel-1.prom"
expect_error 1 "no GPU power telemetry" "$PFI" ingest --throughput-agg top10 "$T/f/empty"
"$MK" "$T/f/bin" >/dev/null; head -c 5000 /dev/urandom >"$T/f/bin/tel-0.prom"
"$PFI" ingest --throughput-agg top10 "$T/f/bin" >"$T/out" 2>"$T/err"; [ $? -eq 1 ] || fail "garbage telemetry accepted"; ok
grep -q 'tel-0.prom:' "$T/err" || fail "garbage error names no file: $(cat "$T/err")"; ok
"$MK" "$T/f/json" >/dev/null; echo '{"group": "x", "gpus": 8,' >"$T/f/json/run.json"
expect_error 1 "run.json:2:" "$PFI" ingest --throughput-agg top10 "$T/f/json"
"$MK" "$T/f/malformed" >/dev/null
sed -i '100s/.*/DCGM_FI_DEV_POWER_USAGE{gpu="0",UUID="GPU-0000" 500/' "$T/f/malformed/tel-0.prom"
expect_error 1 "tel-0.prom:100: expected ',' or '}' in label set" "$PFI" ingest --throughput-agg top10 "$T/f/malformed"
"$MK" "$T/f/qr" --format query_range >/dev/null; printf '{"status":"error"}' >"$T/f/qr/tel-0.json"
expect_error 1 "field 'status' is not \"success\"" "$PFI" ingest --throughput-agg top10 "$T/f/qr"
expect_error 1 "tel-0.json: larger than 104857 bytes" "$PFI" ingest --throughput-agg top10 --max-query-range-mb 0.1 "$T/r/q"
"$MK" "$T/f/smi" --format nvidia-smi >/dev/null; sed -i '5s/^[^,]*/2026-13-45 99:00:00/' "$T/f/smi/tel-0.csv"
expect_error 1 "tel-0.csv:5: column 'timestamp'" "$PFI" ingest --throughput-agg top10 "$T/f/smi"
expect_error 2 "--agg: 'max'" "$PFI" ingest --throughput-agg top10 --agg max "$T/r/a"
expect_error 2 "--agg: 'rate' is not top10, mean or median" "$PFI" ingest --agg rate "$T/r/a"
expect_error 2 "--throughput-agg: 'fast' is not rate, top10, mean or median" "$PFI" ingest --throughput-agg fast "$T/r/a"
expect_error 2 "no run directory" "$PFI" ingest --throughput-agg top10
mkdir -p "$T/nothing/here"
expect_error 1 "no run directory (run.json) below it" "$PFI" ingest --throughput-agg top10 --root "$T/nothing"
done_ok
