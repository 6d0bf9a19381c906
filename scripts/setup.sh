#!/usr/bin/env bash
# Installs the system packages tapestry needs on Debian/Ubuntu (root or sudo):
# the OTF2 library, tools and Python writer (feature `otf2` and its tests),
# libclang for the generated OTF2 bindings, software Vulkan (lavapipe) and a
# virtual display for the GPU and window work, xdotool to drive the window in
# tests, ffmpeg for videos; pyarrow (pip) for the cache's interoperability test;
# Open MPI for `tapestry reduce` (feature `mpi`) and its tests.
set -euo pipefail
PACKAGES="pkg-config libclang-dev libopen-trace-format2-dev otf2-tools python3-otf2 \
mesa-vulkan-drivers libvulkan1 xvfb xauth libxkbcommon-x11-0 libxcursor1 libxi6 libxrandr2 libx11-xcb1 \
xdotool ffmpeg python3-pip libopenmpi-dev openmpi-bin"
if ! command -v apt-get >/dev/null 2>&1; then
    echo "setup: no apt-get here; install the equivalents of: $PACKAGES" >&2
    exit 0
fi
# pyarrow (tests/cache.rs reads the columnar cache with it, as users do
# with pandas, polars or DuckDB): Debian 12 has no package, so pip, into the
# interpreter the tests call (TAPESTRY_PYTHON or python3)
install_pyarrow() {
    local py="${TAPESTRY_PYTHON:-python3}"
    if command -v "$py" >/dev/null 2>&1 && ! "$py" -c 'import pyarrow' >/dev/null 2>&1; then
        "$py" -m pip install --quiet --break-system-packages pyarrow >/dev/null 2>&1 \
            || "$py" -m pip install --quiet pyarrow >/dev/null
    fi
}
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
missing=""
for p in $PACKAGES; do
    dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
if [ -z "$missing" ]; then
    install_pyarrow
    exit 0
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
install_pyarrow
