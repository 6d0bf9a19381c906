#!/usr/bin/env bash
# Packs what a lent GPU machine (no Rust toolchain, no network) needs to
# measure tapestry there, into .dev/ (git-ignored): the stripped release
# binary and `gpu` bench executable, otf2-print, the shared libraries they
# link, the Vulkan loader packages (.gl/), Open MPI's files, and the OTF2
# archive of `cargo bench --bench otf2`; notrim.so for arenas.sh. Then
# `scripts/gpu-machine/run.sh` (or readers.sh, kernels.sh, scaling.sh,
# arenas.sh, pair.sh) runs there with `.dev` (and `.gl`) carried.
set -euo pipefail
cd "$(dirname "$0")/../.."
grep -qx '/.dev/' .git/info/exclude 2>/dev/null || echo /.dev/ >> .git/info/exclude
grep -qx '/.gl/' .git/info/exclude 2>/dev/null || echo /.gl/ >> .git/info/exclude
B=$(mktemp -d)
mkdir -p "$B/bin" "$B/lib" .dev .gl
cargo build --release --features otf2,mpi
bench=$(cargo bench --bench gpu --no-run --features otf2,mpi 2>&1 | sed -n 's/.*Executable .*(\(.*\))/\1/p' | tail -1)
cp target/release/tapestry "$B/bin/"
cp "$bench" "$B/bin/gpu-bench"
cp "$(command -v otf2-print)" "$B/bin/"
strip "$B/bin/tapestry" "$B/bin/gpu-bench"
for f in "$B"/bin/*; do ldd "$f"; done | awk '/=>/{print $3}' | sort -u |
    grep -v -E 'libc\.so|libm\.so|libgcc_s|ld-linux|libpthread|libdl|librt' |
    xargs -r cp -L -t "$B/lib/"
if [ ! -f "$B/otf2-ring/traces.otf2" ]; then
    /usr/bin/python3 tests/data/write_otf2_large.py "$B/otf2-ring" 64 8000
fi
tar -C "$B" -cf - . | xz -3 -T0 > .dev/b.tar.xz
# a malloc_trim that does nothing, for arenas.sh to preload
printf 'int malloc_trim(unsigned long pad) { (void)pad; return 0; }\n' |
    gcc -O2 -shared -fPIC -x c -o .dev/notrim.so -
# Open MPI and what its components link, mirrored from this machine's paths
pkgs="libopenmpi3 openmpi-bin openmpi-common libpmix2 libhwloc15 libhwloc-plugins
      libevent-core-2.1-7 libevent-pthreads-2.1-7 libevent-2.1-7 libucx0 libfabric1
      libibverbs1 libnl-3-200 libnl-route-3-200 librdmacm1 libmunge2 libpsm-infinipath1
      libpsm2-2 libxnvctrl0 libltdl7 libnuma1 ibverbs-providers"
for p in $pkgs; do
    # a package that is not installed lists nothing
    { dpkg -L "$p" 2>/dev/null || true; } | grep -v -E '/doc/|/man/|/lintian/' |
        while read -r f; do if [ -f "$f" ]; then echo "${f#/}"; fi; done
done | sort -u > "$B/ompi-files"
tar -C / -cf - -T "$B/ompi-files" | xz -3 -T0 > .dev/ompi.tar.xz
# the Vulkan loader (the machine has the NVIDIA driver's ICD, not the loader)
mkdir -p /tmp/amd64/partial
o='-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64'
# shellcheck disable=SC2086
apt-get $o update >/dev/null
# shellcheck disable=SC2086
(cd .gl && apt-get $o download libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2)
rm -rf "$B"
ls -la .dev .gl
