#!/usr/bin/env bash
# Installs the system packages tapestry needs on Debian/Ubuntu (root or sudo):
# the OTF2 library, tools and Python writer (feature `otf2` and its tests),
# libclang for the generated OTF2 bindings, software Vulkan (lavapipe) and a
# virtual display for the GPU and window work, xdotool to drive the window in
# tests, ffmpeg for videos.
set -euo pipefail
PACKAGES="pkg-config libclang-dev libopen-trace-format2-dev otf2-tools python3-otf2 \
mesa-vulkan-drivers libvulkan1 xvfb xauth libxkbcommon-x11-0 libxcursor1 libxi6 libxrandr2 libx11-xcb1 \
xdotool ffmpeg"
if ! command -v apt-get >/dev/null 2>&1; then
    echo "setup: no apt-get here; install the equivalents of: $PACKAGES" >&2
    exit 0
fi
missing=""
for p in $PACKAGES; do
    dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
if [ -z "$missing" ]; then
    exit 0
fi
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
