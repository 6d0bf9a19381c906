#!/usr/bin/env bash
# The test command: formatting, lints, every test (unit, integration, real
# traces in ../shared/traces), and a build of the benchmarks.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -d ../shared/traces ]; then
    echo "warning: ../shared/traces is missing; the real-trace tests will fail" >&2
fi
cargo fmt --check
cargo clippy --release --all-targets -- -D warnings
cargo bench --no-run
cargo test --release
