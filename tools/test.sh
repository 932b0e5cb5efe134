#!/usr/bin/env bash
# Runs the whole test suite from a fresh checkout: installs what is missing, builds, runs CTest.
# GPU tests (label gpu) report as skipped where no GPU is present.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SIXFOLD_SETUP_TEST_TOOLS=1 bash "$root/tools/setup.sh"
cd "${SIXFOLD_BUILD_DIR:-$root/build}"
ctest --output-on-failure -j "$(nproc)" --timeout 900
