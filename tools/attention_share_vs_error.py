#!/usr/bin/env python3
# Analysis only (never at run time): how a spot-check file's tokens/s error varies with the share of
# the step sixfold prices as attention. Usage: python3 tools/attention_share_vs_error.py (needs numpy).
# For each llm-foundry spot-check row: the predicted attention share of the step (validate --explain
# --json) against the row's tokens/s error; per GPU family, the correlation and a least-squares line.
import csv, json, subprocess, sys
import numpy as np
f = "bench/spot_checks/llm_foundry_mpt.csv"
rows = list(csv.DictReader(open(f)))
out = []
for x in rows:
    j = json.loads(subprocess.run(["build/sixfold", "validate", f, "--explain", x["id"], "--json"],
                                  capture_output=True, text=True, check=True).stdout)
    c, tot = j["compute_by_op_class"], j["prediction"]["step_time_s"]
    out.append((x["gpu"][:8], x["attention"], c.get("attention", 0) / tot, j["error_pct"]["tokens_per_gpu_s"]))
for gpu in ("a100-sxm", "h100-sxm"):
    a = np.array([(s, e) for g, k, s, e in out if g == gpu and k == "flash"])
    slope, icpt = np.polyfit(a[:, 0], a[:, 1], 1)
    print(f"{gpu}: {len(a)} rows (attention 'flash'), corr {np.corrcoef(a[:,0], a[:,1])[0,1]:.2f}, "
          f"error = {icpt:.1f} + {slope:.1f} x attention share; attention implied {1/(1+slope/100):.2f}x faster than priced")
