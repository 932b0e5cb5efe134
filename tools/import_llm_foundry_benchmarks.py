#!/usr/bin/env python3
"""Convert llm-foundry's published MPT training benchmarks into a validation-format CSV.

MosaicML's llm-foundry (Apache-2.0) publishes measured throughput of its MPT models trained with
Composer's PyTorch FSDP in scripts/train/benchmarking/README.md: per model, sequence length, GPU
count and GPU, the MFU, HFU and tokens/s/GPU with the micro-batch, gradient accumulation, global
batch, sharding strategy and activation checkpointing. sixfold uses them as an out-of-source spot
check (bench/spot_checks/README.md): nothing is fitted to them.

Usage:
    git -C <llm-foundry checkout> show <commit>:scripts/train/benchmarking/README.md > README.md
    python3 tools/import_llm_foundry_benchmarks.py --readme README.md --commit <commit> > OUT.csv

Model shapes are those of scripts/train/yamls/pretrain/mpt-<size>.yaml (d_model, n_heads, n_layers,
expansion_ratio 4, vocab 50368). Each table's date is when its section entered the README (git log
-S on its heading), which decides the flash-attention kernel the validator prices, except where the
sweep that made a table names its kernel (FLASH2_SWEEPS).
"""
from __future__ import annotations

import argparse
import csv
import sys

# mpt-<size>.yaml: n_layers, d_model, n_heads (llm-foundry commit 8c8dd48).
SHAPES = {"125m": (12, 768, 12), "350m": (24, 1024, 16), "760m": (24, 1536, 12), "1b": (24, 2048, 16),
          "3b": (32, 2560, 20), "7b": (32, 4096, 32), "13b": (40, 5120, 40), "30b": (48, 7168, 56),
          "70b": (80, 8192, 64)}
GPUS = {"h100_80gb": "h100-sxm-80g", "a100_80gb": "a100-sxm-80g", "a100_40gb": "a100-sxm-40g"}
# Heading prefix -> (yyyy-mm the section entered the README, the commit that added it, whether
# Composer's FSDP mixed precision DEFAULT reduced gradients in bf16 at that commit's Composer pin).
# Composer's get_mixed_precision: PURE reduces in the training precision in every version; DEFAULT
# did too (reduce_dtype = precision in v0.13, None = the bf16 param_dtype in v0.14-v0.16.3) until
# v0.16.4 (commit d745fcb1b, 2023-10-10, "patch default") made it fp32. llm-foundry's setup.py pins
# composer >=0.15.0,<0.16 at ef350d9e6 (the A100 tables), >=0.16.4 at b2a43a147 and >=0.17.2 at
# 5e85bd62d (the H100 tables).
SECTION_DATES = [
    ("H100 80GB BF16 (Large Scale", "2024-01", "5e85bd62d", False),
    ("H100 80GB BF16", "2023-10", "b2a43a147", False),
    ("H100 80GB FP8", "2023-10", "b2a43a147", False),
    ("A100 80GB with 1600 Gbps", "2023-07", "ef350d9e6", True),
    ("A100 40GB with 1600 Gbps", "2023-07", "ef350d9e6", True),
]
# Tables whose sweep ran FlashAttention-2 for some models, before llm-foundry's default install moved
# to flash-attn 2 (v0.6.0, 2024-03): heading prefix -> those models. The large-scale H100 table came
# from scripts/train/benchmarking/sweep.py of the same commit (5e85bd62d, 2024-01-06): it installs
# '.[gpu-flash2]' (flash-attn 2.4.2, setup.py) and passes '--attn_impl flash' for 1b, 3b, 7b and
# 70b, '--attn_impl triton' (the Triton kernel, priced as the codebase's default) for 13b and 30b.
FLASH2_SWEEPS = {"H100 80GB BF16 (Large Scale": {"1b", "3b", "7b", "70b"}}
COLUMNS = ("id,source,layers,hidden,ffn,heads,kv_heads,vocab,seq,experts,topk,moe_ffn,gpu,gpus,gpus_per_node,dp,tp,"
           "pp,vpp,cp,ep,sp,zero,micro_batch,global_batch,recompute,dtype,tflops_hw,tflops_model,mfu_pct,"
           "tokens_per_gpu_s,iter_s,peak_mem_gib,framework,framework_date,attention,dp_overlap,tp_overlap,grad_reduce_dtype,"
           "notes").split(",")


def section_date(heading: str):
    for prefix, date, commit, default_bf16_reduce in SECTION_DATES:
        if heading.startswith(prefix):
            return date, commit, default_bf16_reduce
    return None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--readme", required=True)
    ap.add_argument("--commit", required=True, help="the llm-foundry commit the README was taken from")
    args = ap.parse_args()
    out = csv.DictWriter(sys.stdout, COLUMNS, lineterminator="\n")
    out.writeheader()
    # Rows are numbered LF1, LF2, ... in the README's order; the FP8 table's as LFP1, LFP2, ... so
    # that adding it (it was left out before 2026-12-07) renumbered none of the others.
    heading, n, n_fp8 = "", 0, 0
    for line in open(args.readme, encoding="utf-8"):
        if line.startswith("## "):
            heading = line[3:].strip()
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 20 or cells[0] not in SHAPES:
            continue
        dated = section_date(heading)
        if dated is None or cells[3] not in GPUS:  # a table of an unknown date or GPU is left out
            continue
        date, added, default_bf16_reduce = dated
        bf16_reduce = cells[15] == "PURE" or (cells[15] == "DEFAULT" and default_bf16_reduce)
        flash2 = any(heading.startswith(p) and cells[0] in models for p, models in FLASH2_SWEEPS.items())
        layers, hidden, heads = SHAPES[cells[0]]
        # Precision amp_fp8: Composer's TransformerEngine fp8 autocast of the te.Linear layers; its MFU
        # is counted against the fp8 peak (the table's "Model TFLOP" is MFU x 1979).
        fp8 = "fp8" in cells[14]
        if fp8:
            n_fp8 += 1
        else:
            n += 1
        out.writerow({
            "id": f"LFP{n_fp8}" if fp8 else f"LF{n}",
            "source": f"mosaicml/llm-foundry scripts/train/benchmarking/README.md @{args.commit[:9]} · {heading} "
                      f"(section added in {added}): {cells[0]}, seq {cells[1]}, {cells[2]} GPUs",
            "layers": layers, "hidden": hidden, "ffn": 4 * hidden, "heads": heads, "kv_heads": heads,
            "vocab": 50368, "seq": cells[1], "gpu": GPUS[cells[3]], "gpus": cells[2], "gpus_per_node": 8,
            "dp": cells[2], "tp": 1, "pp": 1, "cp": 1, "ep": 1, "sp": 0,
            "zero": 3 if cells[16] == "FULL_SHARD" else 2,
            "micro_batch": cells[7], "global_batch": cells[9],
            "recompute": "full" if cells[17] == "True" else "none",
            "dtype": "fp8" if fp8 else "bf16", "mfu_pct": cells[4], "tokens_per_gpu_s": cells[12],
            "framework": "llm-foundry", "framework_date": date, "attention": "flash-attention-2" if flash2 else "flash",
            "dp_overlap": 1, "grad_reduce_dtype": "bf16" if bf16_reduce else "fp32",
            "notes": f"precision {cells[14]}, FSDP mixed precision {cells[15]}, {cells[16]}; HFU {cells[5]}",
        })
    return 0


if __name__ == "__main__":
    sys.exit(main())
