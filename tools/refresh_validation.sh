#!/usr/bin/env bash
# Refreshes the project's copy of the measured validation runs (data/validation/) from a folder of
# the same files (the team's shared validation set), given as the argument. Tests and `sixfold
# validate` read only the copy, so a fresh clone with nothing beside it is complete.
# Columns the project added to its copy (data/validation/README.md, "Columns this project adds":
# `compile`, `ep_dispatcher`, `ep_overlap`, `fsdp_float8_all_gather`, `float8_recipe`, `grad_reduce_dtype`, `etp`,
# `dp_shard`: any column the copy has and the shared file lacks) are carried over by row id into the refreshed copy,
# placed where they were, and rows new to the copy leave them empty.
# Corrections the project made to shared cells (data/validation/corrections.csv: file, id, column,
# the shared value, the corrected value, the source) are applied again after the copy; a shared cell
# that no longer holds the value the correction was made against is left as shared, with a warning.
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
  to="$root/data/validation/$(basename "$f")"
  if [ "$(basename "$f")" = README.md ] && [ -f "$to" ]; then
    # The project's README documents its added columns after the shared text: keep that part.
    added=$(sed -n '/^## Columns this project adds/,$p' "$to")
    install -m 0644 "$f" "$to"
    [ -n "$added" ] && printf '\n%s\n' "$added" >>"$to"
  elif [ "${f##*.}" = csv ] && [ -f "$to" ]; then
    tmp=$(mktemp)
    python3 - "$to" "$f" "$tmp" <<'PY'
import csv, sys
old_path, new_path, out_path = sys.argv[1:]
old = list(csv.reader(open(old_path, newline="")))
new = list(csv.reader(open(new_path, newline="")))
if not new:
    sys.exit(f"refresh_validation: {new_path} is empty")
added = [c for c in old[0] if c not in new[0]] if old else []
if not added:  # nothing of the project's to keep: the shared file as it is
    open(out_path, "wb").write(open(new_path, "rb").read())
    sys.exit(0)
header = list(new[0])
if "id" not in header:
    sys.exit(f"refresh_validation: {new_path} has no 'id' column")
by_id = {r[old[0].index("id")]: dict(zip(old[0], r)) for r in old[1:]} if added else {}
for c in added:
    before = old[0][old[0].index(c) - 1]
    header.insert(header.index(before) + 1 if before in header else len(header), c)
out = [header]
for r in new[1:]:
    row = dict(zip(new[0], r))
    kept = by_id.get(row["id"], {})
    out.append([row.get(c, kept.get(c, "")) for c in header])
ending = "\r\n" if b"\r\n" in open(new_path, "rb").read(4096) else "\n"
with open(out_path, "w", newline="") as fh:
    csv.writer(fh, lineterminator=ending).writerows(out)
for c in added:
    n = sum(1 for r in out[1:] if r[header.index(c)] != "")
    print(f"  kept the project's column '{c}' ({n} rows set)")
PY
    install -m 0644 "$tmp" "$to"
    rm -f "$tmp"
  else
    install -m 0644 "$f" "$to"
  fi
  echo "refreshed data/validation/$(basename "$f")"
done
corrections="$root/data/validation/corrections.csv"
[ -f "$corrections" ] || exit 0
python3 - "$root/data/validation" "$corrections" <<'PY'
import csv, os, sys
folder, corrections = sys.argv[1:]
fixes = list(csv.DictReader(open(corrections, newline="")))
for name in sorted({f["file"] for f in fixes}):
    path = os.path.join(folder, name)
    if not os.path.exists(path):
        print(f"refresh_validation: warning: corrections.csv names {name}, which is not in the copy", file=sys.stderr)
        continue
    raw = open(path, "rb").read()
    rows = list(csv.reader(open(path, newline="")))
    header = rows[0]
    for f in (f for f in fixes if f["file"] == name):
        if f["column"] not in header:
            print(f"refresh_validation: warning: {name} has no column '{f['column']}' (correction of {f['id']})", file=sys.stderr)
            continue
        col = header.index(f["column"])
        hit = [r for r in rows[1:] if r[header.index("id")] == f["id"]]
        if not hit:
            print(f"refresh_validation: warning: {name} has no row {f['id']} (correction of '{f['column']}')", file=sys.stderr)
        elif hit[0][col] not in (f["shared_value"], f["value"]):
            print(f"refresh_validation: warning: {name} {f['id']} '{f['column']}' is now '{hit[0][col]}', not the "
                  f"'{f['shared_value']}' corrected to '{f['value']}': left as shared", file=sys.stderr)
        else:
            hit[0][col] = f["value"]
            print(f"  corrected {name} {f['id']} {f['column']}: {f['shared_value']} -> {f['value']}")
    ending = "\r\n" if b"\r\n" in raw[:4096] else "\n"
    with open(path, "w", newline="") as fh:
        csv.writer(fh, lineterminator=ending).writerows(rows)
PY
