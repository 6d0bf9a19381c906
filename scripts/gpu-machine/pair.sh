#!/usr/bin/env bash
# Runs on a lent machine, from the repository's root, with `.dev` carried
# (pack.sh's bundle, and .dev/old.xz: another build's stripped binary, xz):
# the bundle's binary ("new") against that build ("base"), turn about on
# the same inputs after a warm-up read of each: a pair at each core count
# of PAIRS (16 16 16 8 by default), base first, on each input of FILES
# (b.prv p.trf c.json otf2 by default; `info --stats`, pinned with
# taskset). About 2 minutes on 16 cores. Output to $OUT/pair.txt (phases:
# $OUT/phases.txt). SMALL=1: the bundle unpacked in /tmp/dev/b, for a dry
# run here.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
. scripts/gpu-machine/common.sh
if [ -n "${SMALL:-}" ]; then B=/tmp/dev/b; export LD_LIBRARY_PATH=$B/lib; else unpack_bundle; fi
T=$B/bin/tapestry
BASE=/tmp/base-tapestry; unxz_to .dev/old.xz > $BASE; chmod +x $BASE
W=/tmp/w; mkdir -p $W; cd $W || exit 1
S=$OUT/pair.txt
$T synth bcast -p 65536 --reps ${P_REPS:-256} -o b.prv | tail -1 | tee -a $S
$T synth bcast -p 1024 --reps ${C_REPS:-1000} -o c.json | tail -1 | tee -a $S
$T synth bcast -p 65536 --reps ${L_REPS:-32} -o p.trf | tail -1 | tee -a $S
O=$B/otf2-ring/traces.otf2
sync
for f in ${FILES:-b.prv p.trf c.json otf2}; do
  [ "$f" = otf2 ] && f=$O
  stats_read $T warm-up 16 > /dev/null
  for k in ${PAIRS:-16 16 16 8}; do stats_read $BASE base $k; stats_read $T new $k; done
done
