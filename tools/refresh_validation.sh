#!/usr/bin/env bash
# Refreshes the project's copy of the measured validation runs (data/validation/) from the
# shared set beside the checkout (../shared/validation, or the folder given as $1). Tests and
# `sixfold validate` read only the copy, so a fresh clone with nothing beside it is complete.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
from=${1:-$root/../shared/validation}
[ -d "$from" ] || { echo "refresh_validation: no folder $from" >&2; exit 2; }
shopt -s nullglob
files=("$from"/*.csv "$from"/README.md)
[ ${#files[@]} -gt 1 ] || { echo "refresh_validation: no CSV files in $from" >&2; exit 1; }
mkdir -p "$root/data/validation"
for f in "${files[@]}"; do
  install -m 0644 "$f" "$root/data/validation/$(basename "$f")"
  echo "refreshed data/validation/$(basename "$f")"
done
