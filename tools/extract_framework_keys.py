#!/usr/bin/env python3
"""Extracts the names each target framework accepts, at a stated version, into
configs/framework_keys/*.txt: the lists tests/planner/test_export_names.cpp checks every export
against (a flag or key sixfold writes that the framework does not define fails the test).

Inputs are git checkouts of the frameworks (the project's `fetch` mirrors are bare repositories:
the files are read with `git show TAG:PATH`, nothing is imported or run):

    python3 tools/extract_framework_keys.py \
        --megatron /work/.mirror/NVIDIA+Megatron-LM/repo --megatron-tag v0.15.3 \
        --deepspeed /work/.mirror/microsoft+DeepSpeed/repo --deepspeed-tag v0.16.4 \
        --torchtitan /work/.mirror/pytorch+torchtitan/repo --torchtitan-tag v0.2.2

What is read:
- Megatron-LM: every '--flag' string of megatron/training/arguments.py (that version declares
  each flag with add_argument; later ones generate some from dataclasses, which this would miss).
- DeepSpeed: top-level keys = the string constants of deepspeed/runtime/constants.py (a superset:
  it also holds nested names); `bf16.*` / `fp16.*` = its BFLOAT16_* / FP16_* constants;
  `zero_optimization.*` = the fields and aliases of DeepSpeedZeroConfig
  (deepspeed/runtime/zero/config.py); `activation_checkpointing.*` = the ACT_CHKPT_* constants of
  deepspeed/runtime/activation_checkpointing/config.py.
- torchtitan: `section.key` for every field of every dataclass JobConfig holds, and
  `section.table.key` for the dataclasses nested in them (quantize.linear.float8.*)
  (torchtitan/config/job_config.py).
"""
import argparse
import ast
import re
import subprocess
import sys
from pathlib import Path


def show(repo, tag, path):
    return subprocess.run(["git", "--git-dir", repo, "show", f"{tag}:{path}"], check=True,
                          capture_output=True, text=True).stdout


def commit_of(repo, tag):
    out = subprocess.run(["git", "--git-dir", repo, "log", "-1", "--format=%H %cs", tag], check=True,
                         capture_output=True, text=True).stdout.split()
    return out[0], out[1]


def string_constants(source):
    """NAME -> value for module-level NAME = 'string' assignments."""
    found = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    found[t.id] = node.value.value
    return found


def megatron(repo, tag):
    text = show(repo, tag, "megatron/training/arguments.py")
    return sorted(set(re.findall(r"""['"](--[a-z0-9][a-z0-9-]*)['"]""", text)))


def deepspeed(repo, tag):
    keys = set()
    consts = string_constants(show(repo, tag, "deepspeed/runtime/constants.py"))
    identifier = re.compile(r"^[a-z][a-z0-9_]*$")
    for name, value in consts.items():
        if name.endswith("_DEFAULT") or not identifier.match(value):
            continue
        keys.add(value)
        for section, prefix in (("bf16", "BFLOAT16_"), ("fp16", "FP16_")):
            if name.startswith(prefix):
                keys.add(f"{section}.{value}")
    zero = ast.parse(show(repo, tag, "deepspeed/runtime/zero/config.py"))
    for node in ast.walk(zero):
        if isinstance(node, ast.ClassDef) and node.name == "DeepSpeedZeroConfig":
            for item in node.body:
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    keys.add("zero_optimization." + item.target.id)
                    if isinstance(item.value, ast.Call):
                        for kw in item.value.keywords:
                            if kw.arg == "alias" and isinstance(kw.value, ast.Constant):
                                keys.add("zero_optimization." + kw.value.value)
    keys.add("zero_optimization")
    ac = string_constants(show(repo, tag, "deepspeed/runtime/activation_checkpointing/config.py"))
    keys.add(ac["ACT_CHKPT"])
    for name, value in ac.items():
        if name.startswith("ACT_CHKPT_") and not name.endswith("_DEFAULT") and identifier.match(value):
            keys.add(f"{ac['ACT_CHKPT']}.{value}")
    return sorted(keys)


def torchtitan(repo, tag):
    tree = ast.parse(show(repo, tag, "torchtitan/config/job_config.py"))
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}

    def fields(cls):
        for item in cls.body:
            if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                yield item.target.id, item.annotation

    # Nested sections (quantize.linear.float8) are dataclasses held by a section's fields: their
    # fields are keys of the nested TOML table, and the holding field is kept as a name too.
    def walk(prefix, cls):
        for key, annotation in fields(cls):
            yield f"{prefix}.{key}"
            name = annotation.id if isinstance(annotation, ast.Name) else None
            if name in classes:
                yield from walk(f"{prefix}.{key}", classes[name])

    keys = []
    for section, annotation in fields(classes["JobConfig"]):
        name = annotation.id if isinstance(annotation, ast.Name) else None
        if name not in classes:
            continue
        keys += walk(section, classes[name])
    return sorted(set(keys))


def write(out_dir, name, framework, repo_name, tag, repo, source, keys):
    commit, date = commit_of(repo, tag)
    path = out_dir / name
    with open(path, "w") as f:
        f.write(f"# {framework} at {tag} ({repo_name} {commit}, {date}).\n")
        f.write(f"# Source: {source}\n")
        f.write("# Made by tools/extract_framework_keys.py; one name per line. Checked against by\n")
        f.write("# tests/planner/test_export_names.cpp.\n")
        for k in keys:
            f.write(k + "\n")
    print(f"{path}: {len(keys)} names", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--megatron", required=True)
    ap.add_argument("--megatron-tag", required=True)
    ap.add_argument("--deepspeed", required=True)
    ap.add_argument("--deepspeed-tag", required=True)
    ap.add_argument("--torchtitan", required=True)
    ap.add_argument("--torchtitan-tag", required=True)
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent.parent / "configs" / "framework_keys"))
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    write(out, "megatron-lm.txt", "Megatron-LM command-line flags", "NVIDIA/Megatron-LM", a.megatron_tag, a.megatron,
          "megatron/training/arguments.py, every '--flag' string", megatron(a.megatron, a.megatron_tag))
    write(out, "deepspeed.txt", "DeepSpeed config keys", "microsoft/DeepSpeed", a.deepspeed_tag, a.deepspeed,
          "deepspeed/runtime/constants.py, runtime/zero/config.py (DeepSpeedZeroConfig fields and aliases), "
          "runtime/activation_checkpointing/config.py", deepspeed(a.deepspeed, a.deepspeed_tag))
    write(out, "torchtitan.txt", "torchtitan job-config keys (section.key)", "pytorch/torchtitan", a.torchtitan_tag,
          a.torchtitan, "torchtitan/config/job_config.py, the fields of each JobConfig section and of the tables nested in it",
          torchtitan(a.torchtitan, a.torchtitan_tag))


if __name__ == "__main__":
    main()
