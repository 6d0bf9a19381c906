#!/usr/bin/env bash
# Runs on a lent machine, from the repository's root, with `.dev` (made by
# scripts/gpu-machine/pack.sh) carried: the readers at 1 to 16 cores with
# the read's phases (`info --stats`, pinned with taskset), k=16 twice, and
# k=16 with glibc's arenas held to tapestry's 4 shared ones
# (MALLOC_ARENA_MAX=4, against the arena a thread it takes for a large
# input). With .dev/old.xz (another build's stripped binary, xz), that
# build too, on 1 and 16 cores, for the two side by side on one machine.
# About 2 minutes on 16 cores. Output to $OUT/scaling.txt (phases:
# $OUT/phases.txt). SMALL=1: the bundle unpacked in /tmp/dev/b, for a dry
# run here. E_REPS sizes the inputs of hardware-counter events (e.prv,
# e.json: 2000 reps of 64 processors, about 150 and 200 MB).
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
R=$PWD
. scripts/gpu-machine/common.sh
if [ -n "${SMALL:-}" ]; then B=/tmp/dev/b; export LD_LIBRARY_PATH=$B/lib; else unpack_bundle; fi
T=$B/bin/tapestry
OLD=
if [ -f .dev/old.xz ]; then OLD=/tmp/old-tapestry; unxz_to .dev/old.xz > $OLD; chmod +x $OLD; fi
W=/tmp/w; mkdir -p $W; cd $W || exit 1
S=$OUT/scaling.txt
lscpu | grep -E '^(Model name|Core|Thread)' | tee -a $S
$T synth bcast -p 65536 --reps ${P_REPS:-256} -o b.prv | tail -1 | tee -a $S
$T synth bcast -p 1024 --reps ${C_REPS:-1000} -o c.json | tail -1 | tee -a $S
$T synth bcast -p 65536 --reps ${L_REPS:-32} -o p.trf | tail -1 | tee -a $S
# a Chrome trace of 65,536 threads: one pipeline (ranges would each hold
# every thread), its slices given to their threads on all threads
$T synth bcast -p 65536 --reps ${W_REPS:-10} -o w.json | tail -1 | tee -a $S
# mostly hardware-counter events and samples, as Extrae and Chrome traces
# with counters are (an older binary without --counters skips them)
E=
if $T synth bcast -p 64 --reps ${E_REPS:-2000} --counters 8 -o e.prv | tail -1 | tee -a $S | grep -q wrote; then E="e.prv"; fi
if $T synth bcast -p 64 --reps ${E_REPS:-2000} --counters 8 -o e.json | tail -1 | tee -a $S | grep -q wrote; then E="$E e.json"; fi
O=$B/otf2-ring/traces.otf2
for f in b.prv c.json w.json p.trf $E $O; do
  for k in 1 2 4 8 16; do stats_read $T new $k; done
  stats_read $T "new (again)" 16
  stats_read $T "new, 4 arenas" 16 MALLOC_ARENA_MAX=4
  if [ -n "$OLD" ] && [ "$f" != "$O" ]; then
    stats_read $OLD old 1
    stats_read $OLD old 16
  fi
done
