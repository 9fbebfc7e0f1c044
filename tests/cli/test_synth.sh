#!/bin/sh
# test_synth.sh — `pfi synth`: the text path (synth -> ingest, under the
# paper's protocol: --throughput-agg top10, as pfi reproduce runs it) gives the
# same sweep table as --summary, as a tar stream and as run directories;
# the reconstruction is labelled wherever it appears; --fleet; usage
# errors. In the plain build the whole raw set (~3 GB) is streamed through
# ingest without touching the disk; under sanitizers a reduced set.
. "$(dirname "$0")/lib.sh"

# --- round trip, reduced: the validation groups, 3 minutes of training
"$PFI" synth --summary --minutes 3 --split validation >"$T/sum.csv" || fail "summary"; ok
"$PFI" synth --tar - --minutes 3 --split validation | "$PFI" ingest --throughput-agg top10 - >"$T/ing.csv" 2>"$T/err" || { cat "$T/err"; fail "synth | ingest"; }
ok
cmp "$T/sum.csv" "$T/ing.csv" || { diff "$T/sum.csv" "$T/ing.csv" | head; fail "text path differs from --summary"; }
ok
lines "$T/sum.csv" 25   # 4 groups x 6 caps + header
contains "$T/sum.csv" "reconstruction calibrated to published tables"
head -1 "$T/sum.csv" | grep -q ',split,' || fail "no split column"; ok
grep -q ',validation,' "$T/sum.csv" || fail "split value"; ok
# same seed, same bytes; another seed, other numbers
"$PFI" synth --summary --minutes 3 --split validation >"$T/sum2.csv"
cmp -s "$T/sum.csv" "$T/sum2.csv" || fail "not deterministic"; ok
"$PFI" synth --summary --minutes 3 --split validation --seed 2 >"$T/sum3.csv"
! cmp -s "$T/sum.csv" "$T/sum3.csv" || fail "seed has no effect"; ok

# --- run directories
"$PFI" synth "$T/runs" --minutes 2 --group val-moe-ft-gemma4-26b-a4b-x8 || fail "synth OUTDIR"; ok
d="$T/runs/H200/val-moe-ft-gemma4-26b-a4b-x8/700W"
[ -f "$d/run.json" ] && [ -f "$d/steps.jsonl" ] || fail "run directory layout"; ok
ls "$d"/dcgm-*.prom >/dev/null || fail "no dcgm file"; ok
contains "$d/run.json" '"generator": "pfi synth: reconstruction calibrated to published tables"'
head -1 "$d"/dcgm-*.prom | grep -q '^# reconstruction calibrated to published tables' || fail "telemetry not labelled"; ok
grep -q 'DCGM_FI_DEV_POWER_USAGE{gpu="0",UUID="GPU-' "$d"/dcgm-*.prom || fail "dcgm-exporter label set"; ok
grep -q 'DCGM_FI_PROF_NVLINK_TX_BYTES' "$d"/dcgm-*.prom || fail "nvlink raw counters"; ok
grep -q 'DCGM_FI_DEV_ENFORCED_POWER_LIMIT' "$d"/dcgm-*.prom || fail "enforced limit"; ok
"$PFI" ingest --throughput-agg top10 --root "$T/runs" | sed "s|$T/runs/||" >"$T/dir.csv" || fail "ingest --root"; ok
"$PFI" synth --summary --minutes 2 --group val-moe-ft-gemma4-26b-a4b-x8 >"$T/dirsum.csv"
cmp "$T/dir.csv" "$T/dirsum.csv" || { diff "$T/dir.csv" "$T/dirsum.csv" | head -5; fail "directory path differs"; }
ok
# 16- and 32-GPU groups span hosts: one telemetry file per host, power summed
"$PFI" synth --summary --minutes 2 --group dense-pt-qwen32b-x32-seq4096-bs4 >"$T/x32.csv"
"$PFI" synth --tar - --minutes 2 --group dense-pt-qwen32b-x32-seq4096-bs4 | "$PFI" ingest --throughput-agg top10 - >"$T/x32i.csv"
cmp "$T/x32.csv" "$T/x32i.csv" || fail "multi-host round trip"; ok
p=$(awk -F, 'NR==2{print $7/$3}' "$T/x32.csv"); awk -v p="$p" 'BEGIN{exit !(p > 150 && p < 260)}' || fail "200 W run: $p W per GPU"; ok

# --- fleet: new jobs drawn from the calibrated families, telemetry included
"$PFI" synth --summary --minutes 2 --fleet 5 >"$T/fleet.csv" || fail "fleet"; ok
lines "$T/fleet.csv" 31
grep -c ',fleet,' "$T/fleet.csv" | grep -q '^30$' || fail "fleet split"; ok
"$PFI" index --no-ci "$T/fleet.csv" >"$T/fleet_idx.csv" || fail "index on fleet"; ok
lines "$T/fleet_idx.csv" 6

# --- usage
expect_error 2 "give exactly one of" "$PFI" synth
expect_error 2 "give exactly one of" "$PFI" synth "$T/x" --summary
expect_error 1 "not found" "$PFI" synth --summary --data "$T/nowhere"
expect_error 1 "no group matches" "$PFI" synth --summary --group no-such-group

# --- the whole raw set through ingest, streamed (plain build only)
if [ "${PFI_SANITIZED:-0}" != "1" ]; then
  start=$(date +%s.%N)
  "$PFI" synth --tar - | "$PFI" ingest --throughput-agg top10 - >"$T/full_ing.csv" 2>"$T/err" || { cat "$T/err"; fail "full set"; }
  end=$(date +%s.%N)
  ok
  "$PFI" synth --summary >"$T/full_sum.csv"
  cmp "$T/full_sum.csv" "$T/full_ing.csv" || fail "full set: text path differs from --summary"; ok
  lines "$T/full_sum.csv" 190
  echo "full raw set streamed through ingest in $(awk -v a="$start" -v b="$end" 'BEGIN{printf "%.1f", b-a}') s"
fi
done_ok
