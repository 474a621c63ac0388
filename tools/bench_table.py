#!/usr/bin/env python3
"""Renders the README's element-wise speed table from `ffnrt bench`'s CSV.

Usage: tools/bench_table.py bench-results/bench.csv [ELEMENTS]
Each cell is the op's GB/s over the copy kernel's GB/s of the same storage
type and size on the same device in the same run (the row's `ratio`); the
copy kernels' own GB/s head the table. ELEMENTS picks the size (default:
the largest size that has element-wise rows).
"""
import csv
import sys

rows = list(csv.DictReader(open(sys.argv[1])))
ew = [r for r in rows if r["group"] == "elementwise"]
if not ew:
    sys.exit("no element-wise rows in " + sys.argv[1])
size = int(sys.argv[2]) if len(sys.argv) > 2 else max(int(float(r["size"])) for r in ew)
rows = [r for r in rows if r["group"] in ("elementwise", "limit") and r["shape"] == str(size)]
backends = [b for b in ("opencl", "vulkan") if any(r["backend"] == b for r in rows)]
precisions = ["f32", "f16", "bf16", "f16a"]
cols = [(b, p) for b in backends for p in precisions
        if any(r["backend"] == b and r["dtype"] == p and r["group"] == "elementwise" for r in rows)]
cell = {(r["backend"], r["dtype"], r["op"], r["dir"]): r for r in rows}
names = {"opencl": "PoCL", "vulkan": "lavapipe"}

label = f"{size >> 20}M" if size % (1 << 20) == 0 else str(size)
print(f"| {label} elements | " + " | ".join(f"{names[b]} {p}" for b, p in cols) + " |")
print("|---|" + "---|" * len(cols))
copies = []
for b, p in cols:
    r = cell.get((b, "f16" if p == "f16a" else p, "copy", "fwd"))
    copies.append(f"{float(r['rate']):.2f} GB/s" if r else "")
print("| copy kernel | " + " | ".join(copies) + " |")
ops = []
for r in rows:
    key = (r["op"], r["dir"])
    if r["group"] == "elementwise" and key not in ops:
        ops.append(key)
for op, direction in ops:
    vals = []
    for b, p in cols:
        r = cell.get((b, p, op, direction))
        vals.append(f"{float(r['ratio']):.2f}" if r else "")
    name = op + ("'" if direction == "bwd" else "")
    print(f"| {name} | " + " | ".join(vals) + " |")
