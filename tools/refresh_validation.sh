#!/usr/bin/env bash
# Refreshes the project's copy of the measured validation runs (data/validation/) from a folder of
# the same files (the team's shared validation set), given as the argument. Tests and `sixfold
# validate` read only the copy, so a fresh clone with nothing beside it is complete.
# Usage: tools/refresh_validation.sh FOLDER
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [ $# -ne 1 ]; then
  echo "usage: tools/refresh_validation.sh FOLDER (the shared validation set: CSV files and README.md)" >&2
  exit 2
fi
from=$1
[ -d "$from" ] || { echo "refresh_validation: no folder $from" >&2; exit 2; }
shopt -s nullglob
files=("$from"/*.csv "$from"/README.md)
[ ${#files[@]} -gt 1 ] || { echo "refresh_validation: no CSV files in $from" >&2; exit 1; }
mkdir -p "$root/data/validation"
for f in "${files[@]}"; do
  install -m 0644 "$f" "$root/data/validation/$(basename "$f")"
  echo "refreshed data/validation/$(basename "$f")"
done
