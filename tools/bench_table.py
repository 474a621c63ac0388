#!/usr/bin/env python3
"""Renders docs/speed.md's element-wise speed table from `ffnrt bench`'s CSV.

Usage: tools/bench_table.py bench-results/bench.csv [ELEMENTS]
       tools/bench_table.py --targets RUN1.csv [RUN2.csv ...]
Each cell is the op's GB/s over the copy kernel's GB/s of the same storage
type and size on the same device in the same run (the row's `ratio`); the
copy kernels' own GB/s head the table. ELEMENTS picks the size (default:
the largest size that has element-wise rows).

--targets renders issue 17's table from one or more runs of
`ffnrt bench --quick --only elementwise,peer --size 1M,4M --precision
f32,f16,bf16,f16a --dir fwd,bwd`: per device and op, the ratios its targets
name, each the median over the runs of a ratio taken within one run.
"""
import csv
import statistics
import sys


def targets(paths):
    runs = []
    for path in paths:
        rows = list(csv.DictReader(open(path)))
        runs.append({(r["backend"], r["dtype"], r["op"], r["dir"], int(r["size"])): r
                     for r in rows if r["group"] in ("elementwise", "limit") and r["op"] != "gemm"})
    m1, m4 = 1 << 20, 4 << 20

    def ratio(b, p, op, d, n):
        def get(run):
            r = run.get((b, p, op, d, n))
            return float(r["ratio"]) if r else None
        return get

    def speed(b, num, den):
        """elements a second of row num over row den, (dtype, op, dir, size) each"""
        def get(run):
            a, c = run.get((b,) + num), run.get((b,) + den)
            return float(c["median_ns"]) / float(a["median_ns"]) if a and c else None
        return get

    columns = [
        ("fwd f32 4M × copy", lambda b, op: ratio(b, "f32", op, "fwd", m4)),
        ("fwd f16 1M × copy", lambda b, op: ratio(b, "f16", op, "fwd", m1)),
        ("bwd f32 4M × copy", lambda b, op: ratio(b, "f32", op, "bwd", m4)),
        ("f16 ÷ f32 elem/s 1M", lambda b, op: speed(b, ("f16", op, "fwd", m1), ("f32", op, "fwd", m1))),
        ("f16 ÷ f32 4M", lambda b, op: speed(b, ("f16", op, "fwd", m4), ("f32", op, "fwd", m4))),
        ("bf16 ÷ f32 4M", lambda b, op: speed(b, ("bf16", op, "fwd", m4), ("f32", op, "fwd", m4))),
        ("f16' ÷ f32' 4M", lambda b, op: speed(b, ("f16", op, "bwd", m4), ("f32", op, "bwd", m4))),
        ("bwd ÷ fwd f32 4M", lambda b, op: speed(b, ("f32", op, "bwd", m4), ("f32", op, "fwd", m4))),
        ("f16a ÷ f16 1M", lambda b, op: speed(b, ("f16a", op, "fwd", m1), ("f16", op, "fwd", m1))),
    ]
    names = {"opencl": "PoCL", "vulkan": "lavapipe"}
    ops = []
    for run in runs:
        for (b, p, op, d, n) in run:
            if (b, op) not in ops and op not in ("copy", "host-copy"):
                ops.append((b, op))
    print("| op | " + " | ".join(c[0] for c in columns) + " |")
    print("|---|" + "---|" * len(columns))
    for b, op in ops:
        cells = []
        for _, make in columns:
            get = make(b, op)
            vals = [v for v in (get(run) for run in runs) if v is not None]
            cells.append(f"{statistics.median(vals):.2f}" if vals else "—")
        print(f"| {names.get(b, b)} {op} | " + " | ".join(cells) + " |")
    for b in ("opencl", "vulkan"):
        for p, n in (("f32", m4), ("f32", m1), ("f16", m1)):
            vals = [float(run[(b, p, "copy", "fwd", n)]["rate"]) for run in runs if (b, p, "copy", "fwd", n) in run]
            if vals:
                print(f"copy {names[b]} {p} {n >> 20}M: {statistics.median(vals):.1f} GB/s "
                      f"(runs: {', '.join(f'{v:.1f}' for v in vals)})")


if len(sys.argv) > 2 and sys.argv[1] == "--targets":
    targets(sys.argv[2:])
    sys.exit(0)

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
