#!/usr/bin/env bash
# The demo: synthesizes parallel workloads with the built-in simulator and
# describes them with `tapestry info`. Output goes to demo-out/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo build --release --features otf2
T=target/release/tapestry
OUT=demo-out
mkdir -p "$OUT"

echo "== Gaussian elimination, 64 processors, (CYCLIC,CYCLIC) distribution"
$T synth gauss -p 64 --n 1024 --dist cyclic2d -o "$OUT/gauss.prv"
$T synth gauss -p 64 --n 1024 --dist cyclic2d -o "$OUT/gauss.json"
$T info "$OUT/gauss.prv"

echo "== Gaussian elimination, (BLOCK,*): the shrinking active set leaves the first ranks idle"
$T synth gauss -p 16 --n 256 --dist block -o "$OUT/gauss-block.prv"
$T info "$OUT/gauss-block.prv" --locations 0

echo "== Hypercube broadcast and global sum, 16 nodes (PICL format, as ParaGraph reads)"
$T synth bcast -p 16 -o "$OUT/bcast.trf"
$T synth gsum -p 16 -o "$OUT/gsum.json"
$T info "$OUT/gsum.json" --locations 0

echo "== Data-parallel kernel with its element access tensor"
$T synth kernel -p 16 --width 64 --height 64 --steps 40 --tensor "$OUT/access.npy" -o "$OUT/kernel.prv"
$T info "$OUT/kernel.prv" --locations 0

echo "== 65,536 processors"
$T synth bcast -p 65536 --reps 2 -o "$OUT/bcast-64k.prv"
$T info "$OUT/bcast-64k.prv" --locations 4 --stats

echo "== Reduced while reading (--stream): the busy field of the Chrome trace, never holding its records"
$T analyze "$OUT/gauss.json" field --bins 64 --stream -o "$OUT/gauss-busy-stream.npy"
$T analyze "$OUT/gauss.json" field --bins 64 -o "$OUT/gauss-busy.npy"
cmp "$OUT/gauss-busy.npy" "$OUT/gauss-busy-stream.npy" && echo "the streamed field equals the in-memory one byte for byte"

echo "== Views rendered headless (PNG, glTF): the Kiviat tube of the kernel's remote accesses, the moment displays"
$T render "$OUT/kernel.prv" --view kiviat --quantity tensor:"$OUT/access.npy" --kinds remote --param width=20 --size 1280x720 -o "$OUT/kiviat.png"
$T render "$OUT/kernel.prv" --view kiviat --quantity tensor:"$OUT/access.npy" --kinds local --frames 8 --size 640x360 -o "$OUT/kiviat-slide.png"
$T render "$OUT/gauss-block.prv" --view moments --size 1280x720 -o "$OUT/moments.png" --save-view-state "$OUT/moments-view.json"
$T render "$OUT/gauss-block.prv" --view-state "$OUT/moments-view.json" -o "$OUT/moments-again.png"
cmp "$OUT/moments.png" "$OUT/moments-again.png" && echo "the view state reproduced moments.png byte for byte"
$T render "$OUT/gauss-block.prv" --view moments-3d --size 1280x720 -o "$OUT/moments-3d.png"
$T render "$OUT/gauss-block.prv" --view moments-3d -o "$OUT/moments-3d.glb"
$T render "$OUT/kernel.prv" --view displacement --quantity tensor:"$OUT/access.npy" --start 10 --size 1280x720 -o "$OUT/displacement.png"
$T render "$OUT/kernel.prv" --view scatter --quantity tensor:"$OUT/access.npy" --start 10 --size 1280x720 -o "$OUT/scatter.png"
$T analyze "$OUT/gauss-block.prv" moments --gpu -o "$OUT/moments-gpu.csv"

echo "== A real OTF2 trace (Score-P ping-pong), if ../shared is beside this checkout"
if [ -f ../shared/traces/ping-pong-otf2/traces.otf2 ]; then
    $T info ../shared/traces/ping-pong-otf2/traces.otf2 --locations 2
fi

echo "== Isosurfaces of a hardware counter over the 8x8x8 Blue Gene/P torus (Boxfish tables), one frame per code region"
if [ -f ../shared/traces/boxfish-bgpc/bgpc_meta.yaml ]; then
    $T info ../shared/traces/boxfish-bgpc/bgpc_meta.yaml
    $T render ../shared/traces/boxfish-bgpc/bgpc_meta.yaml --quantity netWrites --frames 10 --size 960x540 -o "$OUT/torus.png"
    $T analyze ../shared/traces/boxfish-bgpc/bgpc_meta.yaml isosurface --quantity netWrites --step 3 --mesh "$OUT/torus-region2.glb"
fi

echo "demo output in $OUT/"
if [ -n "${DISPLAY:-}" ] && [ -z "${CI:-}" ]; then
    echo "== The viewer window (close it to finish)"
    $T view "$OUT/gauss.prv" --output-dir "$OUT" || true
fi
