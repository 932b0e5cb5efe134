#!/usr/bin/env bash
# Runs sixfold from a fresh checkout: installs what is missing, builds, then runs the binary with
# the given arguments. With no arguments: `sixfold plan` on the built-in default scenario.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# Only the binary: a first plan should not wait for the test build.
bash "$root/tools/setup.sh" sixfold
if [ $# -eq 0 ]; then set -- plan --scenario default; fi
exec "${SIXFOLD_BUILD_DIR:-$root/build}/sixfold" "$@"
