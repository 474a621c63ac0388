#!/usr/bin/env python3
"""Renders the README's element-wise speed table from `ffnrt bench --csv`.

Usage: tools/bench_table.py bench.csv
Each cell is the op's GB/s over the copy kernel's GB/s of the same storage
type on the same device in the same run (x_copy); the copy kernels' own
GB/s head the table.
"""
import csv
import sys

rows = list(csv.DictReader(open(sys.argv[1])))
size = max(int(r["elements"]) for r in rows)
rows = [r for r in rows if int(r["elements"]) == size]
backends = [b for b in ("opencl", "vulkan") if any(r["backend"] == b for r in rows)]
precisions = ["f32", "f16", "bf16", "f16a"]
cols = [(b, p) for b in backends for p in precisions
        if any(r["backend"] == b and r["precision"] == p for r in rows)]
cell = {(r["backend"], r["precision"], r["op"], r["direction"]): r for r in rows}
names = {"opencl": "PoCL", "vulkan": "lavapipe"}

print(f"| {size >> 20}M elements | " + " | ".join(f"{names[b]} {p}" for b, p in cols) + " |")
print("|---|" + "---|" * len(cols))
copies = []
for b, p in cols:
    r = cell.get((b, "f16" if p == "f16a" else p, "copy", "fwd"))
    copies.append(f"{float(r['gbps']):.2f} GB/s" if r else "")
print("| copy kernel | " + " | ".join(copies) + " |")
ops = []
for r in rows:
    key = (r["op"], r["direction"])
    if r["op"] != "copy" and key not in ops:
        ops.append(key)
for op, direction in ops:
    vals = []
    for b, p in cols:
        r = cell.get((b, p, op, direction))
        vals.append(f"{float(r['copy_ratio']):.2f}" if r else "")
    label = op + ("'" if direction == "bwd" else "")
    print(f"| {label} | " + " | ".join(vals) + " |")
