#!/usr/bin/env bash
# The test command: formatting, lints, every test (unit, integration, real
# traces in ../shared/traces, OTF2 natively and through the official
# library), and a
# build of the benchmarks.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -d ../shared/traces ]; then
    echo "warning: ../shared/traces is missing; the real-trace tests will fail" >&2
fi
cargo fmt --check
# without the OTF2 library: the native OTF2 decoder alone
cargo clippy --release --all-targets -- -D warnings
cargo clippy --release --all-targets --features otf2 -- -D warnings
cargo clippy --release --all-targets --features otf2,mpi -- -D warnings
cargo bench --no-run --features otf2,mpi
TAPESTRY_REQUIRE_GPU=1 cargo test --release --features otf2,mpi
