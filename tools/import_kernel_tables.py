#!/usr/bin/env python3
"""Convert NVIDIA aiconfigurator-core's measured kernel tables into sixfold's kernel tables.

aiconfigurator-core (Apache-2.0, https://pypi.org/project/aiconfigurator-core/) ships parquet
tables of GEMM, prefill ("context") attention and NCCL collective latencies measured on real GPUs.
This script reads the ones a training cost model can use and writes one compact YAML file per
device under configs/kernel_tables/ (format: docs/kernel-tables.md). The C++ side
(simulator/kernel_tables.cpp) loads those files; Python runs only here, never at run time.

Usage:
    pip download aiconfigurator-core==0.12.0 --no-deps   # the wheel; unzip it anywhere
    python3 tools/import_kernel_tables.py --data <unzipped>/aiconfigurator_core/systems/data

Deterministic: the same parquet files give byte-identical output. The conversion date written
into each file is --date, or, when omitted, the date already recorded in the existing output file
(today's date only for a new file), so a re-run does not change a file whose data did not change.
Needs pandas and pyarrow.
"""
from __future__ import annotations

import argparse
import datetime
import hashlib
import itertools
import math
import os
import re
import sys

import pandas as pd

PACKAGE = "aiconfigurator-core"
PACKAGE_VERSION = "0.12.0"
LICENCE = "Apache-2.0"
PACKAGE_ROOT = "aiconfigurator_core/systems/data"  # where the parquet files sit inside the wheel

# What to take for each device, and why.
#  GEMM: TRT-LLM's PyTorch flow ("torch_flow"): bf16 is torch.nn.functional.linear, i.e. cuBLASLt,
#        the library training frameworks use (Megatron/TE, torchtitan); fp8 is per-tensor-scaled
#        fp8 through the same flow. It is also the one "provenance: collected" (not "legacy") GEMM
#        set in the package for Hopper/Blackwell. fp8_block (DeepSeek-style block scaling) and
#        weight-only int formats are inference formats and are left out.
#  Attention: the prefill kernel closest to what training runs: FlashAttention-2 (vLLM's fork,
#        vllm_flash_attn) on A100, FlashAttention-3 (vllm_flash_attn_fa3) on H100/H200; no
#        FlashAttention build is measured on Blackwell, so TRT-LLM's own FMHA (torch_flow).
#  NCCL: the folder whose name matches the NCCL version in its rows (some folders hold rows
#        labelled with another version), nccl_dtype half.
DEVICES = [
    {
        "name": "a100-sxm", "folder": "a100_sxm",
        "gemm": ("gemm/trtllm/1.0.0", "torch_flow"),
        "attention": ("attention/vllm/0.14.0", "vllm_flash_attn"),
        "nccl": "comm/nccl/2.27.3",
    },
    {
        "name": "h100-sxm", "folder": "h100_sxm",
        "gemm": ("gemm/trtllm/1.3.0rc20", "torch_flow"),
        "attention": ("attention/vllm/0.24.0", "vllm_flash_attn_fa3"),
        "nccl": "comm/nccl/2.29.2",
    },
    {
        "name": "h200-sxm", "folder": "h200_sxm",
        "gemm": ("gemm/trtllm/1.3.0rc20", "torch_flow"),
        "attention": ("attention/vllm/0.24.0", "vllm_flash_attn_fa3"),
        "nccl": "comm/nccl/2.29.2",
    },
    {
        "name": "b200-sxm", "folder": "b200_sxm",
        "gemm": ("gemm/trtllm/1.3.0rc20", "torch_flow"),
        "attention": ("attention/trtllm/1.3.0rc20", "torch_flow"),
        "nccl": "comm/nccl/2.29.2",
    },
    {
        "name": "gb200", "folder": "gb200",
        "gemm": ("gemm/trtllm/1.3.0rc20", "torch_flow"),
        "attention": ("attention/trtllm/1.3.0rc20", "torch_flow"),
        "nccl": "comm/nccl/2.29.2",
    },
]

# sixfold dtype name -> the gemm_dtype in the parquet files.
GEMM_DTYPES = [("bf16", "bfloat16"), ("fp8", "fp8")]

# nccl-tests' names are also sixfold's (docs/kernel-tables.md).
COLLECTIVES = ["all_reduce", "all_gather", "reduce_scatter", "alltoall"]
NCCL_DTYPE = ("half", 2)  # (nccl_dtype in the parquet, bytes per element)

# Training attention: forward+backward speed of the flash-attention kernels training frameworks ran,
# as their authors measured them (aiconfigurator measures inference forwards only). Read off the bar
# labels of the charts in the Dao-AILab/flash-attention README, assets/flash2_a100_fwd_bwd_benchmark.png
# and flash2_h100_fwd_bwd_benchmark.png (added in commit 4f285b3, "FlashAttention-2 release",
# 2023-07-17; the benchmark of the FlashAttention-2 paper, arXiv 2307.08691, section 4.1). Each chart
# has a bar for FlashAttention (1.x) and FlashAttention-2. Setting: hidden dimension 2048 (16 heads of
# 128 or 32 of 64), batch 16k/seqlen, bf16/fp16; TFLOP/s count forward+backward as 3.5x the forward
# FLOPs (4*b*s^2*h*d, halved when causal; benchmarks/benchmark_flash_attention.py, flops()). None: the
# label is hidden behind the chart legend. Keyed by the table file's device: the H100 SXM5 chart also
# prices H200 (same GH100 SMs and clocks; the kernel is compute-bound).
FA_SEQ = [512, 1024, 2048, 4096, 8192, 16384]
FA_FWD_BWD_TFLOPS = {
    "A100 80GB SXM4": [
        ("flash-attention-1", False, 64, [91, 92, 104, 108, 110, 110]),
        ("flash-attention-1", False, 128, [76, 72, 76, 80, 82, 83]),
        ("flash-attention-1", True, 64, [58, 70, 77, 87, 92, 97]),
        ("flash-attention-1", True, 128, [55, 62, 69, 76, 80, 83]),
        ("flash-attention-2", False, 64, [132, None, 162, 171, 175, 176]),
        ("flash-attention-2", False, 128, [None, None, 187, 196, 201, 203]),
        ("flash-attention-2", True, 64, [88, 119, 140, 156, 165, 171]),
        ("flash-attention-2", True, 128, [99, 133, 155, 173, 182, 189]),
    ],
    "H100 80GB SXM5": [
        ("flash-attention-1", False, 64, [157, 159, 161, 161, 166, 168]),
        ("flash-attention-1", False, 128, [127, 127, 128, 131, 137, 139]),
        ("flash-attention-1", True, 64, [104, 123, 136, 138, 149, 156]),
        ("flash-attention-1", True, 128, [98, 109, 108, 126, 135, 137]),
        ("flash-attention-2", False, 64, [215, 254, 274, 288, 294, 296]),
        ("flash-attention-2", False, 128, [248, 294, 320, 326, 335, 338]),
        ("flash-attention-2", True, 64, [141, 192, 232, 257, 273, 284]),
        ("flash-attention-2", True, 128, [163, 221, 265, 294, 308, 328]),
    ],
}
FA_CHART_OF_DEVICE = {"a100-sxm": "A100 80GB SXM4", "h100-sxm": "H100 80GB SXM5", "h200-sxm": "H100 80GB SXM5"}
# Forward over backward FLOP rate of one kernel: FlashAttention-2 on H100 SXM5, head dim 128, no
# causal mask, sequence 16k: forward 370 TFLOP/s, backward 322 (FlashAttention-3 paper, Shah et al.
# 2024, arXiv 2407.08608, figures 5 and 6, bar labels); the same figures give 1.15 for FlashAttention-3
# (648 / 561) and cuDNN (595 / 516). Consistent with the chart above: 3.5 / (1/370 + 2.5/322) = 334
# against the measured 338 forward+backward.
FORWARD_BACKWARD_RATE_RATIO = 1.15


def fmt(x: float) -> str:
    """Four significant digits, never an exponent (the loader reads plain decimals)."""
    s = f"{x:.4g}"
    if "e" in s:
        s = str(int(round(float(s)))) if x >= 1 else f"{x:.6f}"
    return s


def sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def source_block(data_root: str, folder: str, sub: str, file: str, df: pd.DataFrame,
                 kernel_source: str, indent: str) -> list[str]:
    path = os.path.join(data_root, folder, sub, file)
    meta = os.path.join(data_root, folder, sub, "collection_meta.yaml")
    provenance = "unknown"
    if os.path.exists(meta):
        m = re.search(r"^provenance:\s*(\S+)", open(meta).read(), re.M)
        provenance = m.group(1) if m else provenance
    framework = df["framework"].iloc[0] if "framework" in df else "unknown"
    version = df["version"].iloc[0] if "version" in df else sub.rstrip("/").split("/")[-1]
    device = df["device"].iloc[0] if "device" in df else "unknown"
    return [
        f"{indent}file: {PACKAGE_ROOT}/{folder}/{sub}/{file}",
        f"{indent}sha256: {sha256(path)}",
        f'{indent}device: "{device}"',
        f"{indent}framework: {framework}",
        f'{indent}version: "{version}"',
        f"{indent}kernel_source: {kernel_source}",
        f"{indent}collection_provenance: {provenance}  # collection_meta.yaml: collected = measured by this release, legacy = carried over",
    ]


def block_list(values, per_line: int, indent: str) -> list[str]:
    """A long list of numbers as one YAML block string, per_line values a line, comma-separated:
    sixfold reads it (simulator/kernel_tables.cpp, read_numbers) in a quarter of the time yaml-cpp
    takes for a flow sequence of as many scalars. An empty list stays a flow sequence."""
    vals = list(values)
    if not vals:
        return ["[]"]
    return ["|"] + [f"{indent}{', '.join(vals[i:i + per_line])}" for i in range(0, len(vals), per_line)]


def gemm_training_m(m: int) -> bool:
    # The package measures m (tokens) at every multiple of 16 and at m+1 beside most of them (and
    # at 3, 5, 6, ...), which prices inference padding. Training token counts are multiples of 16;
    # keeping powers of two and multiples of 16 halves the table.
    return m % 16 == 0 or (m & (m - 1)) == 0


def fill_gemm_holes(lat: dict, M, N, K):
    """Cells missing from the measured set get the FLOP rate of their nearest measured neighbour
    along k, then n, then m (time scaled by the FLOP ratio), or, where none of the three axes
    holds one, the measured cell fewest grid steps away: constant efficiency, the same rule
    the loader uses outside the grid. Only measured cells serve as neighbours: a filled cell
    must not seed the next one, or one memory-bound cell (k = 32) spreads its FLOP rate along a
    whole unmeasured row. Returns the filled flat indices."""
    measured = frozenset(lat)
    filled = []
    axes = [(2, K), (1, N), (0, M)]
    for im, m in enumerate(M):
        for in_, n in enumerate(N):
            for ik, k in enumerate(K):
                if (m, n, k) in lat:
                    continue
                idx = [im, in_, ik]
                found = None
                for axis, values in axes:
                    for dist in range(1, len(values)):
                        for j in (idx[axis] - dist, idx[axis] + dist):
                            if 0 <= j < len(values):
                                cell = [M[idx[0]], N[idx[1]], K[idx[2]]]
                                cell[axis] = values[j]
                                if tuple(cell) in measured:
                                    found = tuple(cell)
                                    break
                        if found:
                            break
                    if found:
                        break
                if not found:
                    # A corner whose three axes hold no measured cell (m, n and k all at the
                    # grid's edge): the measured cell fewest grid steps away.
                    best = None
                    for cell in measured:
                        d = (abs(M.index(cell[0]) - im) + abs(N.index(cell[1]) - in_) +
                             abs(K.index(cell[2]) - ik))
                        if best is None or (d, cell) < best:
                            best = (d, cell)
                    if best is None:
                        raise SystemExit(f"GEMM cell {(m, n, k)} has no measured neighbour")
                    found = best[1]
                fm, fn, fk = found
                lat[(m, n, k)] = lat[found] * (m * n * k) / (fm * fn * fk)
                filled.append((im * len(N) + in_) * len(K) + ik)
    return filled


def gemm_section(data_root: str, dev: dict) -> list[str]:
    sub, kernel = dev["gemm"]
    df = pd.read_parquet(os.path.join(data_root, dev["folder"], sub, "gemm_perf.parquet"))
    df = df[df["kernel_source"] == kernel]
    out = ["gemm:", "  source:"]
    out += source_block(data_root, dev["folder"], sub, "gemm_perf.parquet", df, kernel, "    ")
    out += [
        "  # C[m,n] = A[m,k] B[k,n] as torch.nn.functional.linear runs it (m tokens, k in-features, n",
        "  # out-features); latency_us[(i_m * len(n) + i_n) * len(k) + i_k], microseconds, 4 significant",
        "  # digits. m keeps the measured multiples of 16 and powers of two (the package's m+1 shapes",
        "  # price inference padding). filled: flat indices not measured, given the FLOP rate of the",
        "  # nearest measured cell along k, then n, then m (a corner with none: the measured cell",
        "  # fewest grid steps away); filled cells never seed other filled cells.",
        "  tables:",
    ]
    for name, data_dtype in GEMM_DTYPES:
        g = df[df["gemm_dtype"] == data_dtype]
        if g.empty:
            continue
        g = g[g["m"].map(gemm_training_m)]
        # Repeated measurements of a shape (none in 0.12.0) would be reduced to their median.
        g = g.groupby(["m", "n", "k"], as_index=False)["latency"].median()
        M = sorted(int(x) for x in g["m"].unique())
        N = sorted(int(x) for x in g["n"].unique())
        K = sorted(int(x) for x in g["k"].unique())
        lat = {(int(r.m), int(r.n), int(r.k)): float(r.latency) * 1000.0 for r in g.itertuples()}  # ms -> us
        filled = fill_gemm_holes(lat, M, N, K)
        values = [fmt(lat[c]) for c in itertools.product(M, N, K)]
        out += [f"    - dtype: {name}", f"      data_dtype: {data_dtype}"]
        out += [f"      m: [{', '.join(map(str, M))}]", f"      n: [{', '.join(map(str, N))}]",
                f"      k: [{', '.join(map(str, K))}]"]
        fl = block_list([str(i) for i in filled], 24, "        ")
        out += [f"      filled: {fl[0]}"] + fl[1:]
        fl = block_list(values, len(K), "        ")
        out += [f"      latency_us: {fl[0]}"] + fl[1:]
    return out


def attention_section(data_root: str, dev: dict) -> list[str]:
    sub, kernel = dev["attention"]
    df = pd.read_parquet(os.path.join(data_root, dev["folder"], sub, "context_attention_perf.parquet"))
    if "window_size" not in df:
        df["window_size"] = 0
    df = df[(df["kernel_source"] == kernel) & (df["attn_dtype"] == "bfloat16") &
            (df["kv_cache_dtype"] == "bfloat16") & (df["window_size"] == 0)]
    keys = ["head_dim", "num_heads", "num_key_value_heads", "isl", "batch_size"]
    df = df.groupby(keys, as_index=False)["latency"].median()  # vLLM 0.14.0 on A100 repeats some shapes
    B = sorted(int(x) for x in df["batch_size"].unique())
    S = sorted(int(x) for x in df["isl"].unique())
    out = ["attention:", "  source:"]
    out += source_block(data_root, dev["folder"], sub, "context_attention_perf.parquet",
                        pd.read_parquet(os.path.join(data_root, dev["folder"], sub, "context_attention_perf.parquet")).head(1),
                        kernel, "    ")
    out += [
        "  # Prefill (context) attention forward as an inference engine runs it: causal over the whole",
        "  # sequence, bf16 Q/K/V and KV cache, no sliding window, beam 1. One series per measured",
        "  # (head_dim, heads, kv_heads). For seq[i] the batches batch[0:counts[i]] were measured (the",
        "  # package stops at a token budget), their latencies in order in latency_us (microseconds, 4",
        "  # significant digits).",
        "  causal: true",
        "  direction: forward",
        f"  batch: [{', '.join(map(str, B))}]",
        f"  seq: [{', '.join(map(str, S))}]",
        "  series:",
    ]
    dropped = 0
    for (hd, h, kv), g in df.groupby(["head_dim", "num_heads", "num_key_value_heads"]):
        cell = {(int(r.isl), int(r.batch_size)): float(r.latency) * 1000.0 for r in g.itertuples()}
        counts, values = [], []
        for s in S:
            c = 0
            while c < len(B) and (s, B[c]) in cell:
                c += 1
            dropped += sum(1 for b in B[c:] if (s, b) in cell)  # measured beyond a hole
            counts.append(c)
            values += [fmt(cell[(s, b)]) for b in B[:c]]
        if not values:
            continue
        out += [f"    - head_dim: {hd}", f"      heads: {h}", f"      kv_heads: {kv}",
                f"      counts: [{', '.join(map(str, counts))}]"]
        fl = block_list(values, 17, "        ")
        out += [f"      latency_us: {fl[0]}"] + fl[1:]
    if dropped:
        out.append(f"  # {dropped} measurements beyond a gap in the batch axis were left out")
    return out


def training_attention_section(dev: dict) -> list[str]:
    chart = FA_CHART_OF_DEVICE.get(dev["name"])
    if not chart:
        return []
    out = [
        "# Training attention: forward+backward speed of the flash-attention kernels training frameworks",
        "# ran, measured by their authors (not by aiconfigurator, which measures inference forwards).",
        "training_attention:",
        "  source: >-",
        "    Dao-AILab/flash-attention README, assets/flash2_a100_fwd_bwd_benchmark.png and",
        "    assets/flash2_h100_fwd_bwd_benchmark.png (commit 4f285b3, 2023-07-17), the benchmark of",
        "    Dao 2023, FlashAttention-2, arXiv 2307.08691, section 4.1; bar labels read off the charts",
        f'  chart_gpu: "{chart}"',
        "  setting: hidden 2048 (heads = 2048 / head_dim), batch = 16384 / seq, bf16",
        "  flop_convention: forward 4*b*s^2*h*d (halved when causal), backward 2.5x forward, fwd+bwd 3.5x forward",
        f"  forward_backward_rate_ratio: {FORWARD_BACKWARD_RATE_RATIO}",
        "  forward_backward_rate_ratio_source: >-",
        "    FlashAttention-3 paper (Shah et al. 2024, arXiv 2407.08608) figures 5 and 6, H100 SXM5, head",
        "    dim 128, no causal mask, seq 16k: FlashAttention-2 forward 370 / backward 322 TFLOP/s,",
        "    FlashAttention-3 648 / 561, cuDNN 595 / 516",
        f"  seq: [{', '.join(map(str, FA_SEQ))}]",
        "  series:  # tflops_fwd_bwd: null where the label is hidden behind the legend",
    ]
    for kernel, causal, hd, vals in FA_FWD_BWD_TFLOPS[chart]:
        v = ", ".join("null" if x is None else str(x) for x in vals)
        out.append(f"    - {{kernel: {kernel}, causal: {str(causal).lower()}, head_dim: {hd}, tflops_fwd_bwd: [{v}]}}")
    return out


def nccl_section(data_root: str, dev: dict) -> list[str]:
    sub = dev["nccl"]
    df = pd.read_parquet(os.path.join(data_root, dev["folder"], sub, "nccl_perf.parquet"))
    dtype, width = NCCL_DTYPE
    df = df[df["nccl_dtype"] == dtype]
    df = df.groupby(["op_name", "num_gpus", "message_size"], as_index=False)["latency"].median()
    out = ["collectives:", "  source:"]
    out += source_block(data_root, dev["folder"], sub, "nccl_perf.parquet",
                        pd.read_parquet(os.path.join(data_root, dev["folder"], sub, "nccl_perf.parquet")).head(1),
                        "NCCL", "    ")
    out += [
        f"  # NCCL inside one NVLink domain, nccl_dtype {dtype}. message_bytes is nccl-tests' size (the",
        f"  # whole buffer: the all_gather output, the reduce_scatter input) = the package's message_size",
        f"  # (elements) x {width}; latency_us in microseconds, 4 significant digits.",
        "  series:",
    ]
    for op in COLLECTIVES:
        for gpus in sorted(int(x) for x in df["num_gpus"].unique()):
            g = df[(df["op_name"] == op) & (df["num_gpus"] == gpus)].sort_values("message_size")
            if g.empty:
                continue
            sizes = ", ".join(str(int(x) * width) for x in g["message_size"])
            lats = ", ".join(fmt(float(x) * 1000.0) for x in g["latency"])
            out += [f"    - collective: {op}", f"      gpus: {gpus}",
                    f"      message_bytes: [{sizes}]", f"      latency_us: [{lats}]"]
    return out


def existing_date(path: str):
    if not os.path.exists(path):
        return None
    m = re.search(r"^  converted: (\d{4}-\d{2}-\d{2})", open(path).read(), re.M)
    return m.group(1) if m else None


def main() -> int:
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", required=True, help="aiconfigurator_core/systems/data of the unzipped wheel")
    ap.add_argument("--out", default=os.path.join(here, "..", "configs", "kernel_tables"))
    ap.add_argument("--date", help="conversion date YYYY-MM-DD (default: the one in the existing file)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for dev in DEVICES:
        path = os.path.join(args.out, dev["name"] + ".yaml")
        date = args.date or existing_date(path) or datetime.date.today().isoformat()
        lines = [
            f"# Measured kernel prices of {dev['name']}: generated by tools/import_kernel_tables.py, do not edit.",
            "# Format, units and interpolation rules: docs/kernel-tables.md. The data are NVIDIA's",
            f"# ({PACKAGE} {PACKAGE_VERSION}, licence {LICENCE}); this file is a converted subset.",
            "schema_version: 1",
            f"device: {dev['name']}",
            "provenance:",
            f"  package: {PACKAGE}",
            f'  package_version: "{PACKAGE_VERSION}"',
            f"  licence: {LICENCE}",
            "  copyright: NVIDIA CORPORATION & AFFILIATES (SPDX headers of the package's collection_meta.yaml)",
            f"  obtained_with: pip download {PACKAGE}=={PACKAGE_VERSION} --no-deps",
            f"  converted: {date}",
            "  converter: tools/import_kernel_tables.py",
        ]
        lines += gemm_section(args.data, dev)
        lines += attention_section(args.data, dev)
        lines += training_attention_section(dev)
        lines += nccl_section(args.data, dev)
        text = "\n".join(lines) + "\n"
        with open(path, "w") as f:
            f.write(text)
        print(f"{path}: {len(text) / 1024:.0f} KiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
