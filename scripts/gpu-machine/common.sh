# Sourced by the scripts that run on a lent GPU machine (run.sh,
# kernels.sh, readers.sh), from the repository's root with `.dev` (and,
# for the GPU, `.gl`) carried, as scripts/gpu-machine/pack.sh made them.

# Decompresses an .xz file to stdout (python3 where the machine has no xz).
unxz_to() {
  if command -v xz >/dev/null; then xz -dc "$1"; else
    python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), sys.stdout.buffer)" "$1"
  fi
}

# Unpacks the binaries and their libraries into $B (/tmp/b).
unpack_bundle() {
  B=/tmp/b; mkdir -p $B
  unxz_to .dev/b.tar.xz | tar -xf - -C $B
  export LD_LIBRARY_PATH=$B/lib
}

# Unpacks the Vulkan loader and points it at the NVIDIA driver.
unpack_loaders() {
  for f in .gl/*.deb; do dpkg -x "$f" /; done
  ldconfig
  export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
}

# One `info --stats` read of $f by binary BIN on the first K cores, with
# the environment ENV... (`stats_read BIN LABEL K [ENV...]`): the read's
# line goes to stdout and $S, its phases to $OUT/phases.txt.
stats_read() {
  local bin=$1 label=$2 k=$3; shift 3
  env RAYON_NUM_THREADS=$k "$@" taskset -c 0-$((k-1)) timeout 120 $bin info $f --stats 2>&1 >/dev/null | grep -E '^(read|phases)' > "$OUT/last.txt"
  echo "$(basename $f) k=$k $label: $(grep '^read' "$OUT/last.txt" | sed 's/ (the whole process)//')" | tee -a $S
  { grep '^phases' "$OUT/last.txt"; echo "  ($(basename $f) k=$k $label)"; } >> "$OUT/phases.txt"
}
