#include "reference_ffn.h"
#include "reference_grad.h"

#include <math.h>
#include <stdlib.h>

static double dot(const double *a, const double *b, int64_t n)
{
    double s = 0.0;
    for (int64_t i = 0; i < n; i++)
        s += a[i] * b[i];
    return s;
}

void ref_ffn(int gated, ffnrt_activation act, double alpha, double beta, int64_t d_model, int64_t hidden,
             int64_t tokens, const double *x, const double *w_in, const double *b_in, const double *w_value,
             const double *b_value, const double *w_out, const double *b_out, double *y)
{
    double *hid = malloc((size_t)(hidden > 0 ? hidden : 1) * sizeof *hid);
    if (!hid)
        abort();
    for (int64_t t = 0; t < tokens; t++) {
        const double *xt = x + t * d_model;
        for (int64_t r = 0; r < hidden; r++) {
            double g = dot(w_in + r * d_model, xt, d_model) + (b_in ? b_in[r] : 0.0);
            hid[r] = ref_forward(act, g, alpha, beta);
            if (gated)
                hid[r] *= dot(w_value + r * d_model, xt, d_model) + (b_value ? b_value[r] : 0.0);
        }
        for (int64_t r = 0; r < d_model; r++)
            y[t * d_model + r] = dot(w_out + r * hidden, hid, hidden) + (b_out ? b_out[r] : 0.0);
    }
    free(hid);
}

double ref_normwise_error(const float *y, const double *ref, int64_t n)
{
    double num = 0.0, den = 0.0;
    for (int64_t i = 0; i < n; i++) {
        if (!isfinite(y[i]))
            return INFINITY;
        double e = (double)y[i] - ref[i];
        num += e * e;
        den += ref[i] * ref[i];
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}
