#!/usr/bin/env bash
# Runs on a lent GPU machine, from the repository's root, with `.dev` and
# `.gl` (made by scripts/gpu-machine/pack.sh) carried: the moments kernel's
# variants with the card kept busy (benches/gpu/variants.rs), then the
# whole GPU bench, with the card's clocks and power logged each second
# (nvidia-smi dmon: read only, nothing is set). About 3 minutes on an
# H200. Everything goes to $OUT; the variants' tables last on stdout.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
. scripts/gpu-machine/common.sh
unpack_loaders
unpack_bundle
nvidia-smi -L
nvidia-smi dmon -s pc -d 1 > "$OUT/dmon.txt" 2>&1 &
DMON=$!
cd /tmp || exit 1
CASES=${CASES:-65536x256,1048576x16,1048576x128}
TAPESTRY_GPU_BENCH_VARIANTS=only TAPESTRY_GPU_BENCH_CASES=$CASES timeout 200 \
  $B/bin/gpu-bench --bench > "$OUT/variants.txt" 2>&1
echo "variants rc $?"
if [ -z "${VARIANTS_ONLY:-}" ]; then
  TAPESTRY_GPU_BENCH_CASES=${BENCH_CASES:-65536x256,1048576x16} timeout 200 \
    $B/bin/gpu-bench --bench --warm-up-time 1 --measurement-time 2 > "$OUT/gpu.txt" 2>&1
  echo "bench rc $?"
  sed -n '/^adapter:/,$p' "$OUT/gpu.txt" | head -12
fi
kill $DMON 2>/dev/null
grep -v '^#' "$OUT/dmon.txt" | awk '{print $NF}' | sort -n | uniq -c | sort -k2 -n | tail -8 | tr '\n' ' '; echo " (last column of dmon, the SM clock in MHz: seconds at each)"
grep -A12 '^moments kernel variants' "$OUT/variants.txt"
