#!/usr/bin/env python3
"""PyTorch's CPU training step as the bench's peer (bench/peer_torch.c).

Given layers as KIND:DxH:T[:bias] (KIND an ffnrt activation name for a
dense layer, down(act(up x + b_up)) + b_down, or a GLU kind name for a
gated one, down(act(gate x) * (value x))), builds the same FFN as ffnrt's
bench does and times the same training step as its train rows
(bench/bench_ffn.c, train_row):

  forward (keeping what backward needs), backward of y against a fixed
  random dy (dx and every weight gradient; no loss, as the train rows),
  torch.optim.AdamW step (lr 1e-5, betas 0.9/0.999, eps 1e-8, weight
  decay 0: ffnrt's FFNRT_OPTIMIZER_DESC_INIT with the row's lr).

ffnrt's conventions (include/ffnrt.h): weights [out, in] (torch's
F.linear); a gated layer's stacked up matrix is [2*hidden, d_model], gate
rows first; GELU exact (gelu) or tanh form (gelu_tanh); SwiGLU's Swish
has beta 1 (SiLU). The step runs with torch.set_num_threads(os.cpu_count()),
one warm-up step, then repeated steps until --runs MAX or, once MIN are
done, the --budget seconds (as bench_measure); the median host time.

Prints one JSON line first ({"torch": VERSION, "threads": N, "python":
PATH, "blas": the BLAS library its products run in}), then
one JSON line a layer ({"layer": ..., "runs": ..., "median_ns": ...}), or
{"absent": REASON} and exit 3 when torch cannot be imported, or
{"layer": ..., "skip": REASON} for a layer it cannot build. Only f32.
"""
import json
import os
import statistics
import sys
import time


def parse_layer(spec):
    parts = spec.split(":")
    if len(parts) not in (3, 4) or (len(parts) == 4 and parts[3] != "bias"):
        raise ValueError("layer %r is not KIND:DxH:T[:bias]" % spec)
    d, h = (int(v) for v in parts[1].lower().split("x"))
    return parts[0], d, h, int(parts[2]), len(parts) == 4


def activation(torch, name):
    F = torch.nn.functional
    acts = {
        "relu": F.relu,
        "gelu": lambda v: F.gelu(v),
        "gelu_tanh": lambda v: F.gelu(v, approximate="tanh"),
        "silu": F.silu,
        "swish": F.silu,  # beta 1, ffnrt's default
        "sigmoid": torch.sigmoid,
        "tanh": torch.tanh,
    }
    return acts.get(name)


GLU_GATE = {"glu": "sigmoid", "reglu": "relu", "geglu": "gelu", "geglu_tanh": "gelu_tanh", "swiglu": "silu"}


class Layer:
    """The FFN as plain tensors (leaves with requires_grad)."""

    def __init__(self, torch, kind, d, h, bias, dtype, gen):
        self.torch = torch
        self.gated = kind in GLU_GATE
        self.act = activation(torch, GLU_GATE[kind] if self.gated else kind)
        if self.act is None:
            raise ValueError("no such activation or GLU kind in the peer: %s" % kind)
        self.h = h
        up_rows = 2 * h if self.gated else h

        def param(*shape, scale):
            t = (torch.rand(*shape, generator=gen, dtype=torch.float64) * 2 - 1) * scale
            return t.to(dtype).requires_grad_(True)

        self.w_up = param(up_rows, d, scale=d ** -0.5)
        self.w_down = param(d, h, scale=h ** -0.5)
        self.b_up = param(up_rows, scale=0.1) if bias else None
        self.b_down = param(d, scale=0.1) if bias else None

    def params(self):
        return [p for p in (self.w_up, self.b_up, self.w_down, self.b_down) if p is not None]

    def forward(self, x):
        F = self.torch.nn.functional
        u = F.linear(x, self.w_up, self.b_up)
        if self.gated:  # gate rows first
            z = self.act(u[..., : self.h]) * u[..., self.h :]
        else:
            z = self.act(u)
        return F.linear(z, self.w_down, self.b_down)


def blas_library(torch):
    """The BLAS library torch's matrix products run in, as mapped: Debian's
    torch (BLAS_INFO=generic) calls libblas.so.3, the reference BLAS unless
    an optimized one (libopenblas0-pthread) provides that alternative."""
    torch.ones(8, 8) @ torch.ones(8, 8)
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                path = line.split()[-1]
                if "blas" in os.path.basename(path).lower() or "mkl" in path.lower():
                    real = os.path.realpath(path)
                    return real[len("/usr/lib/"):] if real.startswith("/usr/lib/") else real
    except OSError:
        pass
    return "unknown"


def main(argv):
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", nargs=2, type=int, default=[5, 20], metavar=("MIN", "MAX"))
    ap.add_argument("--budget", type=float, default=2.0, help="seconds a layer, once MIN runs are done")
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--lr", type=float, default=1e-5)
    ap.add_argument("--dtype", default="f32")
    ap.add_argument("--threads", type=int, default=0, help="0: os.cpu_count()")
    ap.add_argument("layers", nargs="*", help="KIND:DxH:T[:bias], e.g. swiglu:512x1376:64, gelu:768x3072:64")
    args = ap.parse_args(argv)
    try:
        import torch
    except Exception as e:  # ImportError, or a broken install
        print(json.dumps({"absent": "%s cannot import torch (%s)" % (sys.executable, e)}), flush=True)
        return 3
    threads = args.threads or os.cpu_count() or 1
    torch.set_num_threads(threads)
    print(json.dumps({"torch": torch.__version__, "threads": torch.get_num_threads(), "python": sys.executable,
                      "blas": blas_library(torch)}), flush=True)
    if args.dtype != "f32":
        for spec in args.layers:
            print(json.dumps({"layer": spec, "skip": "the peer runs f32 only"}), flush=True)
        return 0
    lo, hi = args.runs
    for spec in args.layers:
        try:
            kind, d, h, t, bias = parse_layer(spec)
            gen = torch.Generator().manual_seed(args.seed)
            layer = Layer(torch, kind, d, h, bias, torch.float32, gen)
        except ValueError as e:
            print(json.dumps({"layer": spec, "skip": str(e)}), flush=True)
            continue
        x = (torch.rand(t, d, generator=gen, dtype=torch.float64) * 2 - 1).float().requires_grad_(True)
        dy = (torch.rand(t, d, generator=gen, dtype=torch.float64) * 2 - 1).float()
        opt = torch.optim.AdamW(layer.params(), lr=args.lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0)

        def step():
            opt.zero_grad(set_to_none=True)  # ffnrt's backward overwrites its gradients
            x.grad = None
            y = layer.forward(x)
            y.backward(dy)  # dx and every weight gradient
            opt.step()

        for _ in range(args.warmup):
            step()
        times = []
        start = time.perf_counter()
        while len(times) < hi and (len(times) < lo or time.perf_counter() - start < args.budget):
            t0 = time.perf_counter_ns()
            step()
            times.append(time.perf_counter_ns() - t0)
        print(json.dumps({"layer": spec, "runs": len(times), "median_ns": statistics.median(times),
                          "min_ns": min(times), "max_ns": max(times)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
