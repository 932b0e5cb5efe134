#!/usr/bin/env python3
"""Convert NVIDIA's DGX Cloud Benchmarking recipes' measured step times into a validation-format CSV.

NVIDIA/dgxc-benchmarking publishes, per pre-training recipe, the layout it runs (TP, PP, CP, VP, EP,
micro-batch, global batch, layers) and the training step time it measured on H100 GPUs from 8 to
2,304, in BF16 and FP8, under its "Expected Performance" heading. sixfold uses them as an
out-of-source spot check (bench/spot_checks/README.md): nothing is fitted to them.

Usage:
    python3 tools/import_dgxc_benchmarks.py --repo <dgxc-benchmarking checkout> --commit <commit> > OUT.csv

Release v25.03 (commit 1b9bb6b) ran every recipe read here in the NeMo 24.12 container (its
README.md's table and each recipe's setup.sh: nvcr.io/nvidia/nemo:24.12, Megatron-Core 0.10), so the
rows say framework megatron-lm, dated 2024-12. Each recipe's NeMo configuration in the same commit
(RECIPES[...]["config"], read with the overrides its configure.sh passes) states what the tables do
not: activation recompute (`activations_checkpoint_granularity`), sequence parallelism, TP comm
overlap (`ub_tp_comm_overlap`), DP overlap (`optim.overlap_grad_sync`), the distributed optimizer
(zero 1) and the dtype it reduces gradients in (`optim.grad_sync_dtype`, the project's
`grad_reduce_dtype` column; data/validation/README.md); the script reads them and stops if a configuration no longer says what it expects. The
attention kernel is left to the validator (NVTE_FUSED_ATTN=1 in configure.sh is its Megatron default).
"""
from __future__ import annotations

import argparse
import csv
import re
import subprocess
import sys

import yaml

# Model shapes (the built-in zoo's, configs/models): layers, hidden, ffn, heads, kv_heads, vocab,
# and for MoE experts, top-k and the expert FFN. Grok-1: hf xai-org/grok-1 config (64 layers, hidden
# 6144, 48 heads, 8 KV heads, 8 experts top-2 of FFN 32768, vocab 131072).
RECIPES = [
    # file, model label in the tables, shape, sequence length (None: per row, from the layout table),
    # the recipe's NeMo configuration and the overrides its configure.sh passes on the command line.
    ("llama3.1/README_8b.md", "Llama 3.1 8b", dict(layers=32, hidden=4096, ffn=14336, heads=32, kv_heads=8, vocab=128256), 8192,
     dict(yaml="llama3.1/llama3.1_8b.yaml")),
    ("llama3.1/README_70b.md", "Llama 3.1 70b", dict(layers=80, hidden=8192, ffn=28672, heads=64, kv_heads=8, vocab=128256), 8192,
     dict(yaml="llama3.1/llama3.1_70b.yaml")),
    ("llama3.1/README_405b.md", "Llama 3.1 405b", dict(layers=126, hidden=16384, ffn=53248, heads=128, kv_heads=8, vocab=128256), 8192,
     dict(yaml="llama3.1/llama3.1_405b.yaml")),
    ("nemotron/README_15b.md", "Nemotron4 15b", dict(layers=32, hidden=6144, ffn=24576, heads=48, kv_heads=8, vocab=256000), 4096,
     dict(yaml="nemotron/nemotron4-15b-synth.yaml", overrides={"ub_tp_comm_overlap": True, "sequence_parallel": True})),
    ("nemotron/README_340b.md", "Nemotron4 340b", dict(layers=96, hidden=18432, ffn=73728, heads=96, kv_heads=8, vocab=256000), 4096,
     dict(yaml="nemotron/nemotron4-340b-synth.yaml", overrides={"ub_tp_comm_overlap": True, "sequence_parallel": True})),
    # NeMo's GPT-3 uses the GPT-2 BPE vocabulary (50,257), as row M1 of data/validation.
    ("nemo_megatron/README_175b.md", "NeMo Megatron", dict(layers=96, hidden=12288, ffn=49152, heads=96, kv_heads=96, vocab=50257), 2048,
     dict(yaml="nemo_megatron/gpt3_175b_hydra.yaml")),
    # Grok-1's shape with the recipe's tokenizer (meta-llama/Meta-Llama-3-70B: 128,256 entries) and
    # gated GELU experts (activation fast-geglu); its experts are padded to capacity factor 1.0
    # (moe_pad_expert_input_to_capacity), so every expert computes the same number of tokens.
    ("grok1/README_314b.md", "Grok 1 314b", dict(layers=64, hidden=6144, ffn="", heads=48, kv_heads=8, vocab=128256,
                                                 experts=8, topk=2, moe_ffn=32768), None,
     dict(yaml="grok1/grok1_314b.yaml", overrides={"ub_tp_comm_overlap": True, "sequence_parallel": True})),
]
RECOMPUTE = {None: "none", "selective": "selective", "full": "full"}
COLUMNS = ("id,source,layers,hidden,ffn,heads,kv_heads,vocab,seq,experts,topk,moe_ffn,gpu,gpus,gpus_per_node,dp,tp,"
           "pp,vpp,cp,ep,sp,zero,micro_batch,global_batch,recompute,dtype,tflops_hw,tflops_model,mfu_pct,"
           "tokens_per_gpu_s,iter_s,peak_mem_gib,framework,framework_date,attention,dp_overlap,tp_overlap,notes,"
           "grad_reduce_dtype,etp").split(",")


def cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def number(text: str):
    t = text.strip().rstrip("%")
    if t.lower() in ("", "n/a", "na"):
        return None
    return float(t) if "." in t else int(t)


def layout_table(lines: list[str]) -> dict[int, dict]:
    """The per-scale layout table some recipes print (| GPUs | SeqLen | Layers | TP | ...)."""
    out = {}
    for i, line in enumerate(lines):
        if not line.startswith("| GPUs"):
            continue
        head = [h.lower() for h in cells(line)]
        for row in lines[i + 2:]:
            if not row.startswith("|"):
                break
            vals = dict(zip(head, cells(row)))
            out[int(vals["gpus"])] = {k: number(v) for k, v in vals.items()}
        break
    return out


def tables(lines: list[str], label: str):
    """Yield (dtype, header params, [(gpus, gbs or None)], {row name: [values]}) per measured table."""
    for i, line in enumerate(lines):
        if not line.startswith("| " + label):
            continue
        head = cells(line)
        m = re.match(re.escape(label) + r"\s+(BF16|FP8)\s*(?:\((.*)\))?$", head[0])
        if not m:
            continue
        params = {}
        for kv in (m.group(2) or "").split(","):
            if "=" in kv:
                k, v = kv.split("=")
                params[k.strip().upper()] = int(v)
        scales = []
        for h in head[1:]:
            g = re.search(r"(\d+)x? H100 GPUs", h)
            b = re.search(r"GBS=(\d+)", h)
            scales.append((int(g.group(1)), int(b.group(1)) if b else None))
        rows = {}
        for row in lines[i + 2:]:
            if not row.startswith("|"):
                break
            c = cells(row)
            rows[c[0]] = [number(v) for v in c[1:1 + len(scales)]]
        yield m.group(1).lower(), params, scales, rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repo", required=True, help="a git checkout of NVIDIA/dgxc-benchmarking")
    ap.add_argument("--commit", required=True)
    ap.add_argument("--release", default="v25.03", help="the release the commit is (for the source column)")
    args = ap.parse_args()
    out = csv.DictWriter(sys.stdout, fieldnames=COLUMNS, lineterminator="\n")
    out.writeheader()
    n = 0
    def show(path: str) -> str:
        return subprocess.run(["git", "-C", args.repo, "show", f"{args.commit}:{path}"], check=True,
                              capture_output=True, text=True).stdout

    for path, label, shape, seq, config in RECIPES:
        model = yaml.safe_load(show(config["yaml"]))["model"]
        model.update(config.get("overrides", {}))
        granularity = model.get("activations_checkpoint_granularity")
        if granularity not in RECOMPUTE or model.get("activations_checkpoint_method") is not None:
            sys.exit(f"import_dgxc_benchmarks: {config['yaml']}: recompute granularity {granularity!r} "
                     f"method {model.get('activations_checkpoint_method')!r} not understood")
        optim = model.get("optim", {})
        if optim.get("name") not in ("distributed_fused_adam", "mcore_distributed_optim"):
            sys.exit(f"import_dgxc_benchmarks: {config['yaml']}: optimizer {optim.get('name')!r} is no distributed optimizer")
        sync = optim.get("grad_sync_dtype")
        if sync not in (None, "bf16", "fp32"):
            sys.exit(f"import_dgxc_benchmarks: {config['yaml']}: grad_sync_dtype {sync!r} not understood")
        facts = dict(recompute=RECOMPUTE[granularity], dp_overlap=1 if optim.get("overlap_grad_sync") else 0,
                     grad_reduce_dtype=sync or "",
                     # unstated: Megatron-Core's default, the TP size (the validator's fill)
                     etp=model.get("expert_tensor_parallel_size") or "",
                     tp_overlap=1 if model.get("ub_tp_comm_overlap") else 0, sp=bool(model.get("sequence_parallel")))
        lines = show(path).splitlines()
        layouts = layout_table(lines)
        found = False
        for dtype, params, scales, rows in tables(lines, label):
            found = True
            step = rows.get("Training step time (seconds per step)")
            if not step:
                sys.exit(f"import_dgxc_benchmarks: {path}: table '{label} {dtype}' has no step time row")
            for j, (gpus, gbs) in enumerate(scales):
                if step[j] is None:
                    continue
                lay = dict(params)
                per = layouts.get(gpus, {})
                for k in ("TP", "PP", "CP", "EP", "VP", "MBS", "GBS", "SEQLEN", "LAYERS"):
                    if per.get(k.lower()) is not None:
                        lay[k] = per[k.lower()]
                for name, key in (("Layers", "LAYERS"), ("GBS", "GBS"), ("PP", "PP"), ("VP", "VP")):
                    if name in rows:
                        if rows[name][j] is None:
                            lay.pop(key, None)
                        else:
                            lay[key] = rows[name][j]
                if gbs is not None:
                    lay["GBS"] = gbs
                tp, pp, cp = lay.get("TP", 1), lay.get("PP", 1), lay.get("CP", 1)
                if gpus % (tp * pp * cp):
                    sys.exit(f"import_dgxc_benchmarks: {path}: {gpus} GPUs do not divide by tp*pp*cp = {tp * pp * cp}")
                n += 1
                r = dict.fromkeys(COLUMNS, "")
                r.update({k: shape.get(k, "") for k in ("hidden", "ffn", "heads", "kv_heads", "vocab", "experts", "topk", "moe_ffn")})
                r.update(id=f"DX{n}", layers=lay.get("LAYERS", shape["layers"]), seq=lay.get("SEQLEN", seq),
                         gpu="h100-sxm-80g", gpus=gpus, gpus_per_node=8, dp=gpus // (tp * pp * cp), tp=tp, pp=pp,
                         vpp=lay.get("VP", 1) if pp > 1 else 1, cp=cp, ep=lay.get("EP", 1),
                         sp=1 if tp > 1 and facts["sp"] else 0, zero=1, micro_batch=lay.get("MBS", 1),
                         global_batch=lay["GBS"], recompute=facts["recompute"], dtype=dtype, iter_s=step[j],
                         framework="megatron-lm", framework_date="2024-12", dp_overlap=facts["dp_overlap"],
                         tp_overlap=facts["tp_overlap"] if tp > 1 else "", grad_reduce_dtype=facts["grad_reduce_dtype"],
                         etp=facts["etp"] if shape.get("experts") else "")
                r["source"] = (f"NVIDIA/dgxc-benchmarking {path} @{args.commit} ({args.release}, NeMo 24.12 container) "
                               f"\u00b7 {label} {dtype.upper()}, {gpus}x H100")
                notes = ["training step time of the README's table (the last of 50 steps)"]
                if r["layers"] != shape["layers"]:
                    notes.append(f"proxy config: {r['layers']} of the model's {shape['layers']} layers")
                notes.append(f"recompute, sp, comm overlap and the distributed optimizer from {config['yaml']}"
                             + (" with configure.sh's overrides" if config.get("overrides") else "")
                             + "; attention kernel not stated")
                r["notes"] = "; ".join(notes)
                out.writerow(r)
        if not found:
            sys.exit(f"import_dgxc_benchmarks: {path} @{args.commit}: no '{label}' table")
    print(f"import_dgxc_benchmarks: {n} rows", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
