#!/usr/bin/env bash
# Runs on a lent GPU machine, from the repository's root, with `.dev` and
# `.gl` (made by scripts/gpu-machine/pack.sh) carried: the GPU bench, the
# readers at 1 to 16 cores, OTF2 against otf2-print, analyze on the GPU and
# the CPU end to end, the cache, and `mpirun ... reduce` at 1 to 16
# processes. About 6 minutes on a 16-core machine with an H200; the figures
# go to $OUT (summary.txt last). SMALL=1 shrinks every input, for a dry run
# here (the bundle unpacked in /tmp/dev/b). SKIP_MPI=1 leaves out the MPI
# runs (about a minute), SKIP_GPU_BENCH=1 the GPU bench (about 2 minutes);
# P_REPS sets the Paraver trace's repetitions (128: 1.52 GB; 256: the
# issue's 3.06 GB).
set -u
S0=$EPOCHREALTIME
el() { awk "BEGIN{printf \"[%6.1f s] \", $EPOCHREALTIME-$S0}"; echo "$*"; }
wall() { local s=$EPOCHREALTIME; "$@"; local rc=$?; WALL=$(awk "BEGIN{printf \"%.3f\", $EPOCHREALTIME-$s}"); return $rc; }
R=$PWD
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
SUM=$OUT/summary.txt
say() { echo "$*" | tee -a $SUM; }
. scripts/gpu-machine/common.sh

if [ -z "${SMALL:-}" ]; then
  unxz_to .dev/ompi.tar.xz | tar --skip-old-files -xf - -C / 2>&1 | tail -3
  unpack_loaders
  unpack_bundle
  P_REPS=${P_REPS:-128}; C_REPS=1000; L_REPS=32; CASES='65536x256,1048576x16 1048576x128'; GT=200
else
  B=/tmp/dev/b; P_REPS=2; C_REPS=16; L_REPS=2; CASES=4096x16; GT=20
fi
T=$B/bin/tapestry
NC=$(nproc)
say "== machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2), $(free -g | awk '/Mem:/{print $2}') GiB"
nvidia-smi -L 2>&1 | tee -a $SUM
el setup done

# 1. GPU kernels against the CPU path
el gpu bench
[ -n "${SKIP_GPU_BENCH:-}" ] && CASES=
for c in $CASES; do
  (cd /tmp && TAPESTRY_GPU_BENCH_CASES=$c timeout $GT $B/bin/gpu-bench --bench --warm-up-time 1 --measurement-time 3 >> $OUT/gpu.txt 2>&1)
  echo "gpu bench $c rc $?" | tee -a $OUT/gpu.txt >> $SUM
  sed -n '/^adapter:/,$p' $OUT/gpu.txt | tail -22 >> $SUM
  el "gpu bench $c"
done

# 2. inputs
W=/tmp/w; mkdir -p $W; cd $W
el synth
$T synth bcast -p 65536 --reps $P_REPS -o b.prv | tail -1 | tee -a $SUM
$T synth bcast -p 1024 --reps $C_REPS -o c.json | tail -1 | tee -a $SUM
$T synth bcast -p 65536 --reps $L_REPS -o p.trf | tail -1 | tee -a $SUM
O=$B/otf2-ring/traces.otf2

# 3. readers at 1..all cores (info --stats: read time, MB/s, peak)
el readers
say "== readers: info --stats (pinned to the first k cores), with the read's phases"
for f in b.prv c.json p.trf $O; do
  for k in 1 2 4 8 16; do
    [ $k -le $NC ] || continue
    RAYON_NUM_THREADS=$k TAPESTRY_OTF2_IN_PROCESS=1 taskset -c 0-$((k-1)) timeout 120 $T info $f --stats 2>&1 >/dev/null | grep -E '^(read|phases)' > $OUT/last-read.txt
    say "$(basename $f) in-memory k=$k: $(grep '^read' $OUT/last-read.txt | tail -1)"
    grep '^phases' $OUT/last-read.txt | tail -1 >> $OUT/phases.txt
    echo "  ($(basename $f) k=$k)" >> $OUT/phases.txt
  done
  for k in 1 16; do
    [ $k -le $NC ] || continue
    line=$(RAYON_NUM_THREADS=$k taskset -c 0-$((k-1)) timeout 120 $T info $f --stats --stream 2>&1 >/dev/null | grep '^read' | tail -1)
    say "$(basename $f) --stream k=$k: $line"
  done
done

# 4. OTF2 whole commands against otf2-print (one core)
el otf2
say "== otf2: whole runs, seconds"
for i in 1 2; do
  wall taskset -c 0 $B/bin/otf2-print $O > /dev/null; say "otf2-print 1 core: $WALL"
  for k in 1 16; do
    wall env RAYON_NUM_THREADS=$k taskset -c 0-$((k-1)) $T info $O > /dev/null; say "tapestry info (native) k=$k: $WALL"
    wall env RAYON_NUM_THREADS=$k TAPESTRY_OTF2_LIBRARY=1 taskset -c 0-$((k-1)) $T info $O > /dev/null; say "tapestry info (library, helper) k=$k: $WALL"
    wall env RAYON_NUM_THREADS=$k taskset -c 0-$((k-1)) $T info $O --stream > /dev/null; say "tapestry info --stream k=$k: $WALL"
  done
done

# 5. GPU against CPU end to end on the Paraver trace, the cache
el e2e
say "== analyze b.prv end to end, seconds (all cores)"
for a in "moments" "field --bins 64"; do
  n=$(echo $a | cut -d' ' -f1)
  wall $T analyze b.prv $a -o $n-cpu.npy > /dev/null 2>&1; say "$a cpu: $WALL"
  wall $T analyze b.prv $a --gpu -o $n-gpu.npy > $OUT/e2e-$n.txt 2>&1; say "$a gpu: $WALL ($(grep '^GPU' $OUT/e2e-$n.txt | tail -1))"
  wall $T analyze b.prv $a --stream -o $n-str.npy > /dev/null 2>&1; say "$a --stream: $WALL"
  cmp -s $n-cpu.npy $n-gpu.npy && say "$a: gpu == cpu bit for bit" || say "$a: gpu differs from cpu (bytes)"
done
wall $T convert b.prv -o b.tapestry > /dev/null 2>&1; say "convert: $WALL"
for i in 1 2 3; do wall $T info b.tapestry > /dev/null; say "info on the cache: $WALL"; done
say "the cache: $(du -sh b.tapestry | cut -f1), the trace: $(du -sh b.prv | cut -f1)"
wall $T analyze b.tapestry moments --gpu -o m-cache-gpu.npy > /dev/null 2>&1; say "moments gpu from the cache: $WALL"
wall $T analyze b.tapestry moments -o m-cache-cpu.npy > /dev/null 2>&1; say "moments cpu from the cache: $WALL"
rm -rf b.tapestry

# 6. MPI reduce at 1..16 processes (one thread each) against the stream
# (SKIP_MPI=1 leaves it out)
el mpi
[ -n "${SKIP_MPI:-}" ] && { el done; echo; echo "===== SUMMARY"; cat $SUM; exit 0; }
MPI="orterun --allow-run-as-root --oversubscribe --bind-to core --mca pml ob1 --mca btl self,vader -x RAYON_NUM_THREADS=1 -x LD_LIBRARY_PATH"
say "== reduce field --bins 64: seconds (stream at 1 and all threads, then mpirun -n k)"
for f in b.prv c.json p.trf $O; do
  b=$(basename $f)
  wall env RAYON_NUM_THREADS=1 $T analyze $f field --bins 64 --stream -o s1.npy > /dev/null 2>&1; say "$b stream 1 thread: $WALL"
  wall $T analyze $f field --bins 64 --stream -o sa.npy > /dev/null 2>&1; say "$b stream $NC threads: $WALL"
  for k in 1 2 4 8 16; do
    [ $k -le $NC ] || continue
    wall timeout 120 $MPI -n $k $T reduce $f field --bins 64 -o r$k.npy > $OUT/mpi-last.txt 2>&1; rc=$?
    same=$(cmp -s r$k.npy s1.npy && echo "== stream" || echo "DIFFERS rc=$rc")
    say "$b reduce -n $k: $WALL $same"
  done
done
el done
echo; echo "===== SUMMARY"; cat $SUM
