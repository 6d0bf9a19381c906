#!/usr/bin/env bash
# Runs on a lent machine, from the repository's root, with `.dev` (made by
# scripts/gpu-machine/pack.sh, with .dev/notrim.so: a malloc_trim that does
# nothing, to preload) carried: `info --stats` with the read's phases at 8
# and 16 cores under glibc's arena settings (tapestry's 4 shared arenas,
# MALLOC_ARENA_MAX=16 and 128) and with malloc_trim made a no-op, to tell
# what the shared arenas and the trims cost on 16 real cores. About 2
# minutes on 16 cores. Output to $OUT/arenas.txt (phases: $OUT/phases.txt).
# SMALL=1: the bundle unpacked in /tmp/dev/b, for a dry run here.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
. scripts/gpu-machine/common.sh
if [ -n "${SMALL:-}" ]; then B=/tmp/dev/b; export LD_LIBRARY_PATH=$B/lib; else unpack_bundle; fi
NOTRIM=$PWD/.dev/notrim.so
T=$B/bin/tapestry
S=$OUT/arenas.txt
W=/tmp/w; mkdir -p $W; cd $W || exit 1
lscpu | grep -E '^(Model name|Thread|Core|Socket|NUMA node\(s\)|L3)' | tee -a $S
echo "transparent huge pages: $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null)" | tee -a $S
$T synth bcast -p 65536 --reps ${P_REPS:-256} -o b.prv | tail -1
$T synth bcast -p 1024 --reps 1000 -o c.json | tail -1
$T synth bcast -p 65536 --reps 32 -o p.trf | tail -1
O=$B/otf2-ring/traces.otf2
for f in b.prv c.json p.trf $O; do
  stats_read $T "4 arenas" 16
  stats_read $T "4 arenas (again)" 16
  stats_read $T "16 arenas" 16 MALLOC_ARENA_MAX=16
  stats_read $T "128 arenas" 16 MALLOC_ARENA_MAX=128
  stats_read $T "4 arenas, no trim" 16 LD_PRELOAD=$NOTRIM
  stats_read $T "16 arenas, no trim" 16 MALLOC_ARENA_MAX=16 LD_PRELOAD=$NOTRIM
  stats_read $T "4 arenas" 8
  stats_read $T "16 arenas" 8 MALLOC_ARENA_MAX=16
  stats_read $T "16 arenas, no trim" 8 MALLOC_ARENA_MAX=16 LD_PRELOAD=$NOTRIM
done
