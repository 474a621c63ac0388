#!/usr/bin/env python3
"""ffnrt's training step against PyTorch's (run by tests/peer_torch.sh).

For a small gated layer (SwiGLU, no bias) and a dense GELU layer (exact
GELU, biases): the same float32 initial weights, inputs and targets go to
tests/torch_train_step (ffnrt, on each backend's device 0) and to PyTorch in
float64 (the reference), and both take STEPS steps of: forward, MSE loss
(mean over every element), backward, torch.optim.AdamW (lr 1e-3, betas
0.9/0.999, eps 1e-8, weight decay 0.01). Compared normwise, per step and
per parameter:
  the loss of each step (before its update):   |L - L_ref| / |L_ref| <= 1e-6
  each parameter's total update w - w0:        ||dw - dw_ref|| / ||dw_ref|| <= 1e-4
The update is compared, not the weights (which moved by about lr*steps, so
a wrong update would hide in them). Why these bounds: ffnrt accumulates in
fp32 (forward and backward within ~1e-6 of the double result), and Adam's
first steps are close to lr*sign(g), so an fp32 gradient moves an update
only where |g| is near fp32 noise; measured on PoCL and lavapipe: at
most 3e-8 (loss) and 2.1e-6 (updates), so the bounds leave 30x and 50x. A wrong rule (lr 1% off, no bias correction, weight decay
coupled, the gate and value halves swapped, tanh GELU for exact) is 1e-2
or more.

Usage: peer_torch.py TORCH_TRAIN_STEP [BACKEND ...]  (default opencl vulkan)
Exit 0 when every comparison holds; 1 otherwise. A backend without a device
fails unless FFNRT_TEST_ALLOW_MISSING=1.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

STEPS = 3
LR = 1e-3
WD = 0.01
LOSS_BOUND = 1e-6
UPDATE_BOUND = 1e-4

# kind, d_model, hidden, tokens, bias
LAYERS = [("swiglu", 64, 96, 16, False), ("gelu", 64, 128, 16, True)]
GLU_GATE = {"swiglu": torch.nn.functional.silu}
ACT = {"gelu": torch.nn.functional.gelu}


def make_inputs(kind, d, h, t, bias, seed):
    gen = torch.Generator().manual_seed(seed)
    up = 2 * h if kind in GLU_GATE else h

    def u(*shape, scale=1.0):  # float32 values, kept as float64 for the reference
        return ((torch.rand(*shape, generator=gen, dtype=torch.float64) * 2 - 1) * scale).float().double()

    v = {"x": u(t, d), "target": u(t, d), "w_up": u(up, d, scale=d ** -0.5), "w_down": u(d, h, scale=h ** -0.5)}
    if bias:
        v["b_up"] = u(up, scale=0.1)
        v["b_down"] = u(d, scale=0.1)
    return v


def reference(kind, h, v):
    """STEPS steps in float64: each step's loss and the parameters after."""
    params = {k: v[k].clone().requires_grad_(True) for k in ("w_up", "b_up", "w_down", "b_down") if k in v}
    opt = torch.optim.AdamW(list(params.values()), lr=LR, betas=(0.9, 0.999), eps=1e-8, weight_decay=WD)
    F = torch.nn.functional
    losses = []
    for _ in range(STEPS):
        opt.zero_grad()
        u = F.linear(v["x"], params["w_up"], params.get("b_up"))
        if kind in GLU_GATE:  # gate rows first (ffnrt_ffn_weights' w_gate_value)
            z = GLU_GATE[kind](u[:, :h]) * u[:, h:]
        else:
            z = ACT[kind](u)
        y = F.linear(z, params["w_down"], params.get("b_down"))
        loss = F.mse_loss(y, v["target"])
        losses.append(loss.item())
        loss.backward()
        opt.step()
    return losses, {k: p.detach() for k, p in params.items()}


def main(argv):
    if len(argv) < 1:
        print(__doc__)
        return 2
    exe, backends = argv[0], argv[1:] or ["opencl", "vulkan"]
    allow_missing = os.environ.get("FFNRT_TEST_ALLOW_MISSING") == "1"
    fail = 0
    print("torch %s; %d steps of AdamW (lr %g, wd %g); bounds: loss %g, updates %g normwise"
          % (torch.__version__, STEPS, LR, WD, LOSS_BOUND, UPDATE_BOUND))
    for li, (kind, d, h, t, bias) in enumerate(LAYERS):
        v = make_inputs(kind, d, h, t, bias, seed=li + 1)
        ref_losses, ref_params = reference(kind, h, v)
        name = "%s %dx%d t%d%s" % (kind, d, h, t, " bias" if bias else "")
        with tempfile.TemporaryDirectory() as tmp:
            for k, a in v.items():
                a.float().numpy().astype("<f4").tofile(os.path.join(tmp, k))
            for be in backends:
                run = subprocess.run([exe, be, tmp, kind, str(d), str(h), str(t), str(int(bias)), str(STEPS), str(LR)],
                                     capture_output=True, text=True)
                if run.returncode == 77:
                    msg = "%s on %s: no device (%s)" % (name, be, run.stderr.strip())
                    if allow_missing:
                        print("skip: %s; allowed by FFNRT_TEST_ALLOW_MISSING" % msg)
                    else:
                        print("FAIL: %s" % msg)
                        fail = 1
                    continue
                if run.returncode != 0:
                    print("FAIL: %s on %s: exit %d\n%s%s" % (name, be, run.returncode, run.stdout, run.stderr))
                    fail = 1
                    continue
                with open(os.path.join(tmp, be + ".loss")) as f:
                    losses = [float(line) for line in f]
                worst = max(abs(a - b) / abs(b) for a, b in zip(losses, ref_losses)) if len(losses) == STEPS else 1
                ok = worst <= LOSS_BOUND
                print("%s: %s on %s: losses %s (torch %s), worst relative error %.2e"
                      % ("ok" if ok else "FAIL", name, be, " ".join("%.9g" % l for l in losses),
                         " ".join("%.9g" % l for l in ref_losses), worst))
                fail |= not ok
                for k, ref in ref_params.items():
                    got = torch.from_numpy(np.fromfile(os.path.join(tmp, be + "." + k), dtype="<f4")).double()
                    dref = (ref - v[k]).reshape(-1)
                    err = ((got - v[k].reshape(-1)) - dref).norm().item() / dref.norm().item()
                    ok = err <= UPDATE_BOUND
                    print("%s: %s on %s: %s update after %d steps, normwise error %.2e"
                          % ("ok" if ok else "FAIL", name, be, k, STEPS, err))
                    fail |= not ok
    return fail


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
