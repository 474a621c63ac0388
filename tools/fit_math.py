#!/usr/bin/env python3
"""Fits the polynomial / rational coefficients used in shaders/math.inc.

    python3 tools/fit_math.py        (needs numpy and mpmath; ~1 min)

Method: near-minimax fits by Lawson's iteratively reweighted least squares on a
dense grid, with the target evaluated by mpmath at 30 digits. Coefficients are
then rounded to fp32 one at a time, low order first, re-fitting the remaining
free ones after each rounding so that the rounding errors are compensated.
The script prints the '#define' lines for math.inc and the relative error of
the rounded approximation (exact arithmetic, i.e. approximation error only).

Fits:
  EXPQ  : expm1(r) ~= r + r^2 * Q(r),  |r| <= ln2/2 (+ slack).  Q has degree 4.
          exp(r) is then 1 + r*(1 + r*Q(r)).
  ERF   : erf(z) ~= z + z * S(z^2),  |z| <= 0.5.  S(0) ~= 2/sqrt(pi) - 1.
  ERFCX : erfcx(z) = exp(z^2) erfc(z) ~= Q(z) / (Q(z) + z*(sqrt(pi)*Q(z) + T(z)))
          on z in [0, 10.5], Q(0) = 1, Q degree 5, T degree 4.  This is the
          rational P/Q with P = Q + z*T, written so that the Horner rounding
          errors of Q and T are damped by the factor (P/Q)/(sqrt(pi) z + P/Q)
          for large z (same Q in numerator and denominator), and so that
          1 - R = z*(sqrt(pi) Q + T)/D can be formed without cancellation for
          small z.  sqrt(pi) is used as its fp32 value, as in the kernel.
  GELU  : the same for erfcx(w/sqrt2) in w = |x| (constant sqrt(pi/2)), so that
          GELU needs no rounded argument x/sqrt2.
"""
import numpy as np
import mpmath as mp

mp.mp.dps = 30


def f32(v):
    return float(np.float32(v))


def lawson(A, y, ws, iters):
    """min over c of max_i |ws_i * (A c - y)_i| (approximately)."""
    lw = np.ones(len(y)) / len(y)
    cs = np.abs(A).max(0)
    cs[cs == 0] = 1
    for _ in range(iters):
        sw = np.sqrt(lw) * ws
        c, *_ = np.linalg.lstsq(A / cs * sw[:, None], y * sw, rcond=None)
        c = c / cs
        err = np.abs(ws * (A @ c - y))
        lw = lw * err + 1e-300
        lw /= lw.sum()
    return c


def fit_linear_rounded(A, y, ws, iters=300):
    """Lawson fit, then round coefficient j to fp32 and refit j+1.. ."""
    n = A.shape[1]
    fixed = []
    for j in range(n):
        yr = y - (A[:, :j] @ np.array(fixed) if j else 0)
        c = lawson(A[:, j:], yr, ws, iters)
        fixed.append(f32(c[0]))
    return np.array(fixed)


def fit_expq(deg=4, half=0.3466 + 0.003):
    r = np.linspace(-half, half, 6001)
    r = r[np.abs(r) > 1e-5]
    em1 = np.array([float(mp.expm1(mp.mpf(v))) for v in r])
    q = (em1 - r) / r**2
    ws = r**2 / em1            # error of expm1 relative to expm1
    A = np.stack([r**j for j in range(deg + 1)], 1)
    c = fit_linear_rounded(A, q, ws)
    rel = np.abs((r + r**2 * (A @ c)) / em1 - 1).max()
    return c, rel


def fit_erf(deg=4, zmax=0.5 + 0.002):
    z = np.linspace(1e-4, zmax, 4001)
    f = np.array([float(mp.erf(mp.mpf(v))) for v in z])
    s = f / z - 1
    ws = z / f                 # relative error of erf
    A = np.stack([z**(2 * j) for j in range(deg + 1)], 1)
    c = fit_linear_rounded(A, s, ws)
    rel = np.abs((z + z * (A @ c)) / f - 1).max()
    return c, rel


def fit_erfcx(n=5, mt=4, zmax=10.5, outer=30, inner=20, scale=1):
    """scale != 1: fit erfcx(scale*w) in w (GELU: scale = 1/sqrt(2))."""
    sc = mp.mpf(scale)
    zmax = float(zmax / sc)
    z = np.concatenate([np.linspace(0, 1, 2000), np.linspace(1, zmax, 3000)])
    z = z.astype(np.float32).astype(np.float64)
    f = np.array([float(mp.exp((sc * v)**2) * mp.erfc(sc * v)) for v in z])
    sp = f32(mp.sqrt(mp.pi) * sc)
    G = 1 / f - sp * z         # want  z*T(z) - (G-1)*(Q(z)-1) = G-1
    At = np.stack([z**(j + 1) for j in range(mt + 1)], 1)
    Aq = np.stack([z**j for j in range(1, n + 1)], 1)
    A0 = np.concatenate([At, -(G - 1)[:, None] * Aq], 1)
    N = A0.shape[1]

    def solve(fixed, outer_it):
        free = [i for i in range(N) if i not in fixed]
        qprev = np.ones_like(z)
        lw = np.ones(len(z)) / len(z)
        full = np.zeros(N)
        for _ in range(outer_it):
            for _ in range(inner):
                w = np.sqrt(lw) / (qprev * (sp * z + G))
                b = (G - 1).copy()
                for i, v in fixed.items():
                    b -= A0[:, i] * v
                A = A0[:, free]
                cs = np.abs(A).max(0)
                c, *_ = np.linalg.lstsq(A / cs * w[:, None], b * w, rcond=None)
                full[free] = c / cs
                for i, v in fixed.items():
                    full[i] = v
                T = np.polyval(full[:mt + 1][::-1], z)
                Q = 1 + Aq @ full[mt + 1:]
                R = Q / (Q + z * (sp * Q + T))
                err = np.abs(R / f - 1)
                lw = lw * err + 1e-300
                lw /= lw.sum()
            qprev = Q
        return full, err.max()

    full, e0 = solve({}, outer)
    fixed = {}
    for i in range(N):
        if i:
            full, _ = solve(fixed, 8)
        fixed[i] = f32(full[i])
    full, rel = solve(fixed, 1)
    return full[:mt + 1], full[mt + 1:], e0, rel


def main():
    out = []
    c, rel = fit_expq()
    out.append("/* expm1(r) = r + r^2 Q(r), |r| <= ln2/2: rel err 2^%.1f */" % np.log2(rel))
    out += ["#define FFN_C_EXPQ%d %.9ef" % (j, v) for j, v in enumerate(c)]
    c, rel = fit_erf()
    out.append("/* erf(z) = z + z S(z^2), |z| <= 0.5: rel err 2^%.1f */" % np.log2(rel))
    out += ["#define FFN_C_ERFS%d %.9ef" % (j, v) for j, v in enumerate(c)]
    t, q, e0, rel = fit_erfcx()
    out.append("/* erfcx(z) = Q/(Q + z (sqrt(pi) Q + T)), z in [0,10.5]: rel err 2^%.1f"
               " (2^%.1f before rounding) */" % (np.log2(rel), np.log2(e0)))
    out += ["#define FFN_C_ERFCX_T%d %.9ef" % (j, v) for j, v in enumerate(t)]
    out += ["#define FFN_C_ERFCX_Q%d %.9ef" % (j + 1, v) for j, v in enumerate(q)]
    t, q, e0, rel = fit_erfcx(scale=1 / mp.sqrt(2))
    out.append("/* erfcx(w/sqrt2) = Q/(Q + w (sqrt(pi/2) Q + T)), w in [0,14.85]: rel err 2^%.1f"
               " (2^%.1f before rounding) */" % (np.log2(rel), np.log2(e0)))
    out += ["#define FFN_C_GELU_T%d %.9ef" % (j, v) for j, v in enumerate(t)]
    out += ["#define FFN_C_GELU_Q%d %.9ef" % (j + 1, v) for j, v in enumerate(q)]
    print("\n".join(out))


if __name__ == "__main__":
    main()
