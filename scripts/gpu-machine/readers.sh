#!/usr/bin/env bash
# Runs on a lent machine, from the repository's root, with `.dev` (made by
# scripts/gpu-machine/pack.sh) carried: `tapestry info --stats` on the
# inputs of run.sh at 1 to 16 cores, with the read's phases (what one
# thread does while the others wait, beside what all do). About 2
# minutes on 16 cores. FILES chooses among b.prv, c.json and p.trf (all
# by default); CORES among 1 2 4 8 16. Output to $OUT/readers.txt and
# stdout. TAPESTRY_CHROME_RANGES=1 reads c.json by one pipeline (ranges
# from 4 cores otherwise), for the two side by side.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
. scripts/gpu-machine/common.sh
unpack_bundle
T=$B/bin/tapestry
W=/tmp/w; mkdir -p $W; cd $W || exit 1
FILES=${FILES:-b.prv c.json p.trf}
case " $FILES " in *" b.prv "*) $T synth bcast -p 65536 --reps ${P_REPS:-128} -o b.prv | tail -1;; esac
case " $FILES " in *" c.json "*) $T synth bcast -p 1024 --reps ${C_REPS:-1000} -o c.json | tail -1;; esac
case " $FILES " in *" p.trf "*) $T synth bcast -p 65536 --reps ${L_REPS:-32} -o p.trf | tail -1;; esac
echo "transparent huge pages: $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null)"
NC=$(nproc)
for f in $FILES; do
  for k in ${CORES:-1 2 4 8 16}; do
    [ $k -le $NC ] || continue
    echo "== $f k=$k"
    RAYON_NUM_THREADS=$k taskset -c 0-$((k-1)) timeout 120 $T info $f --stats 2>&1 >/dev/null | grep -E '^(read|phases)'
  done
done | tee "$OUT/readers.txt"
