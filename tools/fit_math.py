#!/usr/bin/env python3
"""Fits the coefficients used in shaders/math.inc.

Run:  python3 tools/fit_math.py            (needs numpy and mpmath)

Each fit is a near-minimax fit obtained by Lawson-style iteratively reweighted
least squares on a dense grid, with the target function evaluated by mpmath at
high precision. The printed coefficients are rounded to fp32 (the value that
ends up in math.inc) and the script reports the relative error of the rounded
approximation, evaluated in double.

Fits:
  EXPQ   : Q(r) with expm1(r) ~= r + r^2 Q(r),   |r| <= ln2/2 (+ slack)
  ERFCX  : erfcx(z) = exp(z^2) erfc(z) ~= P(z)/Q(z),  z in [0, 10.5]
  ERF    : erf(z) ~= z * S(z^2),   |z| <= 0.5
"""
import numpy as np
import mpmath as mp

mp.mp.dps = 40


def f32(v):
    return float(np.float32(v))


def lawson_poly(xs, fs, ws, basis, iters=200):
    """min max |w_i (sum c_j basis_j(x_i) - f_i)|"""
    A = np.array([[b(x) for b in basis] for x in xs])
    lw = np.ones(len(xs)) / len(xs)
    for _ in range(iters):
        sw = np.sqrt(lw)
        c, *_ = np.linalg.lstsq(A * (sw * ws)[:, None], sw * ws * fs, rcond=None)
        err = np.abs(ws * (A @ c - fs))
        lw = lw * err
        lw /= lw.sum()
    return c, err.max()


def fit_expq(deg=4):
    h = 0.3466 + 0.002
    xs = np.linspace(-h, h, 4001)
    xs = xs[np.abs(xs) > 1e-4]
    f_em1 = np.array([float(mp.expm1(mp.mpf(x))) for x in xs])
    q = (f_em1 - xs) / xs**2
    # relative error of expm1: (r^2 dq)/expm1(r)
    ws = xs**2 / f_em1
    basis = [lambda x, j=j: x**j for j in range(deg + 1)]
    c, e = lawson_poly(xs, q, ws, basis)
    c32 = [f32(v) for v in c]
    approx = xs + xs**2 * np.polyval(c32[::-1], xs)
    rel = np.abs(approx / f_em1 - 1).max()
    return c32, rel


def fit_erf(deg=5, zmax=0.5):
    xs = np.linspace(1e-3, zmax + 0.002, 3001)
    f = np.array([float(mp.erf(mp.mpf(x))) for x in xs])
    s = f / xs
    ws = 1 / s
    basis = [lambda x, j=j: x**(2 * j) for j in range(deg + 1)]
    c, e = lawson_poly(xs, s, ws, basis)
    c32 = [f32(v) for v in c]
    approx = xs * np.polyval(c32[::-1], xs**2)
    rel = np.abs(approx / f - 1).max()
    return c32, rel


def fit_erfcx(m=5, n=6, zmax=10.5, iters=60):
    """P_m/Q_n (Q monic-normalised with q0 = 1) minimising relative error.
    Loeb iteration: linear least squares of (P - f Q)/(f Q_prev), reweighted."""
    xs = np.concatenate([np.linspace(0, 1, 1500), np.linspace(1, zmax, 3000)])
    f = np.array([float(mp.exp(mp.mpf(x)**2) * mp.erfc(mp.mpf(x))) for x in xs])
    sc = zmax  # work in t = z/sc for conditioning
    t = xs / sc
    Ap = np.stack([t**j for j in range(m + 1)], 1)
    Aq = np.stack([t**j for j in range(1, n + 1)], 1)
    qprev = np.ones_like(xs)
    lw = np.ones(len(xs)) / len(xs)
    for it in range(iters):
        for _ in range(30):
            w = np.sqrt(lw) / (f * qprev)
            A = np.concatenate([Ap, -f[:, None] * Aq], 1) * w[:, None]
            b = f * w
            c, *_ = np.linalg.lstsq(A, b, rcond=None)
            P = Ap @ c[:m + 1]
            Q = 1 + Aq @ c[m + 1:]
            err = np.abs(P / Q / f - 1)
            lw = lw * err
            lw /= lw.sum()
        qprev = Q
    cp = [c[j] / sc**j for j in range(m + 1)]
    cq = [1.0] + [c[m + j] / sc**j for j in range(1, n + 1)]
    cp32 = [f32(v) for v in cp]
    cq32 = [f32(v) for v in cq]
    approx = np.polyval(cp32[::-1], xs) / np.polyval(cq32[::-1], xs)
    rel = np.abs(approx / f - 1).max()
    return cp32, cq32, rel


if __name__ == "__main__":
    import sys
    c, rel = fit_expq(4)
    print("EXPQ  rel err %.3g (2^%.1f)" % (rel, np.log2(rel)))
    for j, v in enumerate(c):
        print("#define FFN_C_EXPQ%d %.9ef" % (j, v))
    c, rel = fit_erf(5)
    print("ERF   rel err %.3g (2^%.1f)" % (rel, np.log2(rel)))
    for j, v in enumerate(c):
        print("#define FFN_C_ERFS%d %.9ef" % (j, v))
    m, n = (int(sys.argv[1]), int(sys.argv[2])) if len(sys.argv) > 2 else (5, 6)
    cp, cq, rel = fit_erfcx(m, n)
    print("ERFCX P%d/Q%d rel err %.3g (2^%.1f)" % (m, n, rel, np.log2(rel)))
    for j, v in enumerate(cp):
        print("#define FFN_C_ERFCX_P%d %.9ef" % (j, v))
    for j, v in enumerate(cq):
        print("#define FFN_C_ERFCX_Q%d %.9ef" % (j, v))
