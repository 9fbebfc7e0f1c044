#!/bin/sh
# test_slurm_map.sh — `pfi slurm-map` (issue 40): the SPANK plugin's own
# parser (src/slurm/gpu_map.c) answers an operator for each configuration,
# on a fake driver tree (/proc/driver/nvidia/gpus) whose minor order differs
# from its bus order: AutoDetect=nvml gives PCI bus-id order, nvidia (Slurm
# 24.11-25.05) the string order of /dev/nvidiaN, off gres.conf's Name= lines
# before its NodeName= lines (File=, Files=, MultipleFiles=; the kernel's
# /dev/null 1:3 and /dev/zero 1:5 stand in for GPUs); anything uncertain
# is one error line and exit 1; wrong use exit 2.
. "$SRC/tests/cli/lib.sh"
D="$T/gpus"
mkdir "$D"
gpu() { # BUS MINOR
  mkdir "$D/$1"
  printf 'Model: \t\t NVIDIA H100 80GB HBM3\nBus Location: \t %s\nDevice Minor: \t %s\nGPU Excluded:\t No\n' "$1" "$2" >"$D/$1/information"
}
gpu 0000:3b:00.0 5
gpu 0000:1a:00.0 10
gpu 0000:86:00.0 3
gpu 0000:5e:00.0 2
map() { "$PFI" slurm-map --gres-conf "$T/gres.conf" --node n01 --driver-dir "$D" "$@"; }

# nvml: bus order 1a, 3b, 5e, 86 -> minors 10, 5, 2, 3
printf 'AutoDetect=nvml\nName=gpu Type=h100 Count=4\n' >"$T/gres.conf"
expect_status 0 map --job-gpus 0-3 --format csv
printf 'slurm_index,minor,bus_id\n0,10,0000:1a:00.0\n1,5,0000:3b:00.0\n2,2,0000:5e:00.0\n3,3,0000:86:00.0\n' >"$T/want"
cmp -s "$T/out" "$T/want" || { diff "$T/want" "$T/out" >&2; fail "nvml: not PCI bus-id order"; }; ok
expect_error 1 "GPU 4 (--job-gpus): $T/gres.conf gives 4 GPUs for node n01 (AutoDetect nvml)" map --job-gpus 1,4
[ ! -s "$T/out" ] || fail "a refused map printed rows"; ok

# nvidia: /dev/nvidia10, /dev/nvidia2, /dev/nvidia3, /dev/nvidia5 in string order
printf 'AutoDetect=nvidia\n' >"$T/gres.conf"
expect_status 0 map --job-gpus 0,1 --slurm-version 24.11.1 --format csv
printf 'slurm_index,minor,bus_id\n0,10,0000:1a:00.0\n1,2,0000:5e:00.0\n' >"$T/want"
cmp -s "$T/out" "$T/want" || { diff "$T/want" "$T/out" >&2; fail "nvidia: not /dev/nvidiaN string order"; }; ok
expect_error 1 "AutoDetect=nvidia orders GPUs by Slurm version, which was not given" map --job-gpus 0
expect_error 1 "AutoDetect=nvidia with Slurm 25.11" map --job-gpus 0 --slurm-version 25.11
# the operator forces the mode, as the plugin's autodetect= does
expect_status 0 map --job-gpus 0 --autodetect nvml --format csv
contains "$T/out" "0,10,0000:1a:00.0"

# off: the Name= line comes first though it is second in the file; a
# node-specific AutoDetect=off wins over the global nvml
cat >"$T/gres.conf" <<'EOF'
AutoDetect=nvml
NodeName=n[01-02] AutoDetect=off
NodeName=n01 Name=gpu Files=/dev/zero
Name=gpu MultipleFiles=/dev/null,/dev/full
EOF
expect_status 0 map --job-gpus 0,1 --format csv
printf 'slurm_index,minor,bus_id\n0,3,0000:86:00.0\n1,5,0000:3b:00.0\n' >"$T/want"
cmp -s "$T/out" "$T/want" || { diff "$T/want" "$T/out" >&2; fail "off: not Name= lines before NodeName= lines"; }; ok

# what cannot be known for sure
printf 'Name=gpu File=/dev/null Shared=yes\n' >"$T/gres.conf"
expect_error 1 "$T/gres.conf:1: field 'Shared': not a gpu key pfi knows" map --job-gpus 0
printf 'Include /etc/slurm/gres.d/n01.conf\n' >"$T/gres.conf"
expect_error 1 "$T/gres.conf:1: field 'Include'" map --job-gpus 0
printf 'AutoDetect=nvml\n' >"$T/gres.conf"
expect_error 1 "$T/none: No such file or directory" "$PFI" slurm-map --gres-conf "$T/gres.conf" --node n01 --driver-dir "$T/none" --job-gpus 0
expect_error 1 "No such file or directory" "$PFI" slurm-map --gres-conf "$T/missing.conf" --job-gpus 0

# wrong use
expect_error 2 "--gres-conf FILE is required" "$PFI" slurm-map --job-gpus 0
expect_error 2 "--job-gpus LIST is required" "$PFI" slurm-map --gres-conf "$T/gres.conf"
expect_error 2 "--job-gpus '0,,1'" "$PFI" slurm-map --gres-conf "$T/gres.conf" --job-gpus 0,,1
expect_error 2 "--slurm-version '24'" "$PFI" slurm-map --gres-conf "$T/gres.conf" --job-gpus 0 --slurm-version 24
expect_error 2 "--autodetect" "$PFI" slurm-map --gres-conf "$T/gres.conf" --job-gpus 0 --autodetect rsmi
done_ok
