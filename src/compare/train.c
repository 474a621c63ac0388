/* The seed's training protocol: each f32 candidate learns the same fixed
 * teacher from the same inputs, over several seeds, with the optimizer,
 * steps and stopping rule the sealed criteria fix; its quality is the
 * validation MSE relative to the teacher's mean square.
 *
 * The numbers come from measure.c's generator, by stream:
 *   the teacher's weights       (weight_seed, TEACHER, TEACHER + 1)
 *   the validation inputs       (weight_seed, VALIDATION)
 *   run k's student weights     (weight_seed + k, STUDENT + matrix)
 *   run k's inputs at step s    (weight_seed + k, STEPS + s)
 * so every candidate of a run sees the very same inputs and targets, the
 * validation set is no run's training data, and the split is a rule of
 * the seed, not of the device. The teacher is a SwiGLU layer of the gated
 * width without biases (SmolLM2's form).
 *
 * The task "gguf N" distils a real model's layer instead: the teacher is
 * layer N's FFN as the file holds it (block formats dequantized exactly by
 * the kernels), the inputs are rows of its token embedding table,
 * RMS-normalised as the model's blocks see them (eps 1e-5, without the
 * learned scale), split by row index: r % 10 == 8 validation, 9 held out,
 * the rest training. Run k's step s takes train rows from (k·104729 +
 * s·train_tokens) on, wrapping.
 *
 * A step is the training forward, the MSE and its gradient, the backward
 * and an AdamW step, all on the device, timed on the host clock. */
#include "compare_internal.h"
#include "ffnrt_gguf.h"
#include "lab.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { STREAM_TEACHER = 100, STREAM_VALIDATION = 200, STREAM_STUDENT = 300, STREAM_STEPS = 1000 };

typedef struct teacher {
    ffnrt_tensor *w_up, *w_down;
    ffnrt_ffn *layer;
    ffnrt_tensor *x_val, *t_val;
    double mean_square; /* of the teacher's validation outputs */
    /* The task "gguf N": the model, its embedding table and its split. */
    ffnrt_gguf *gguf;
    ffnrt_gguf_tensor_info emb;
    size_t row_bytes;
    int64_t rows, train_rows;
} teacher;

static void teacher_free(teacher *t)
{
    ffnrt_gguf_close(t->gguf);
    ffnrt_ffn_destroy(t->layer);
    ffnrt_tensor_destroy(t->w_up);
    ffnrt_tensor_destroy(t->w_down);
    ffnrt_tensor_destroy(t->x_val);
    ffnrt_tensor_destroy(t->t_val);
    memset(t, 0, sizeof *t);
}

/* A [rows, cols] f32 tensor of nn.Linear weights (fan_in cols) or of the
 * criteria's inputs (fan_in 0), from (seed, stream). */
static ffnrt_status numbers(ffnrt_comparison *cmp, uint64_t seed, uint64_t stream, int64_t rows, int64_t cols,
                            int64_t fan_in, ffnrt_tensor **out)
{
    size_t n = (size_t)(rows * (cols ? cols : 1));
    float *v = malloc((n ? n : 1) * sizeof *v);
    if (!v)
        return ffnrt_fail(&cmp->err, FFNRT_ERROR_OUT_OF_HOST_MEMORY, "ffnrt_compare_run: out of host memory");
    compare_rng r;
    compare_rng_seed(&r, seed, stream);
    if (fan_in)
        compare_fill_linear(&r, v, n, fan_in);
    else
        compare_fill_input(&r, &cmp->criteria, v, n);
    ffnrt_status st = compare_upload(cmp->ctx, FFNRT_DTYPE_F32, v, rows, cols, out, &cmp->err);
    free(v);
    return st;
}

/* Embedding row r, RMS-normalised, into out (d_model floats). */
static ffnrt_status embedding_row(const teacher *t, int64_t r, int64_t d, float *out, ffnrt_error *err)
{
    ffnrt_status st = ffnrt_dequantize(t->emb.format, (const unsigned char *)t->emb.data + (size_t)r * t->row_bytes,
                                       t->row_bytes, 1, d, out);
    if (st != FFNRT_OK)
        return ffnrt_fail(err, st, "token_embd.weight row %lld: %s", (long long)r, ffnrt_last_error_message());
    double sq = 0;
    for (int64_t i = 0; i < d; i++)
        sq += (double)out[i] * out[i];
    float scale = (float)(1.0 / sqrt(sq / (double)d + 1e-5));
    for (int64_t i = 0; i < d; i++)
        out[i] *= scale;
    return FFNRT_OK;
}

/* The split: training row i and validation row j of the table. */
static int64_t train_row(int64_t i) { return i / 8 * 10 + i % 8; }
static int64_t validation_row(int64_t j) { return j * 10 + 8; }

static uint64_t base_seed(const ffnrt_comparison *cmp) { return cmp->spec.weight_seed ? cmp->spec.weight_seed : 1; }

/* Fills a tensor with run k's inputs at step: fresh numbers of the
 * criteria's distribution, or the task's training rows. */
static ffnrt_status refill(ffnrt_comparison *cmp, const teacher *t, uint32_t k, uint32_t step, ffnrt_tensor *x,
                           float *host)
{
    ffnrt_status st = FFNRT_OK;
    if (!t->gguf) {
        compare_rng r;
        compare_rng_seed(&r, base_seed(cmp) + k, STREAM_STEPS + step);
        compare_fill_input(&r, &cmp->criteria, host, ffnrt_tensor_numel(x));
    } else {
        int64_t d = cmp->spec.d_model, n = ffnrt_tensor_dim(x, 0);
        for (int64_t i = 0; i < n && st == FFNRT_OK; i++) {
            int64_t at = (int64_t)(((uint64_t)k * 104729u + (uint64_t)step * (uint64_t)n + (uint64_t)i) % (uint64_t)t->train_rows);
            st = embedding_row(t, train_row(at), d, host + i * d, &cmp->err);
        }
    }
    return st == FFNRT_OK ? compare_called(cmp->ctx, ffnrt_tensor_write(x, host, ffnrt_tensor_bytes(x)), &cmp->err) : st;
}

/* The task "gguf N": the model's layer as the teacher, its embedding
 * table as the inputs, the validation rows into t->x_val. */
static ffnrt_status gguf_task(ffnrt_comparison *cmp, teacher *t)
{
    ffnrt_context *ctx = cmp->ctx;
    int64_t d = cmp->spec.d_model, v = cmp->criteria.validation_tokens;
    ffnrt_gguf_ffn layer;
    ffnrt_ffn_desc desc;
    ffnrt_ffn_weights w;
    if (!cmp->spec.gguf_path)
        return ffnrt_fail(&cmp->err, FFNRT_ERROR_INVALID_ARGUMENT,
                          "the task is \"gguf %lld\" but the spec names no GGUF file (gguf_path)",
                          (long long)cmp->criteria.task_layer);
    ffnrt_status st = ffnrt_gguf_open(cmp->spec.gguf_path, &t->gguf);
    if (st == FFNRT_OK)
        st = ffnrt_gguf_ffn_layer(t->gguf, cmp->criteria.task_layer, &layer);
    if (st == FFNRT_OK)
        st = ffnrt_gguf_ffn_desc(t->gguf, &layer, &desc, &w);
    if (st != FFNRT_OK)
        return ffnrt_fail(&cmp->err, st, "%s (the task's file %s)", ffnrt_last_error_message(), cmp->spec.gguf_path);
    if (desc.d_model != d) /* the figures first: a note may cut a long path */
        return ffnrt_fail(&cmp->err, FFNRT_ERROR_SHAPE_MISMATCH,
                          "d_model %lld, the candidates' %lld (give --d %lld): layer %lld of %s",
                          (long long)desc.d_model, (long long)d, (long long)desc.d_model,
                          (long long)cmp->criteria.task_layer, cmp->spec.gguf_path);
    st = compare_called(ctx, ffnrt_ffn_create(ctx, &desc, &w, &t->layer), &cmp->err);
    int64_t e = st == FFNRT_OK ? ffnrt_gguf_find_tensor(t->gguf, "token_embd.weight") : -1;
    if (st == FFNRT_OK && e < 0)
        st = ffnrt_fail(&cmp->err, FFNRT_ERROR_INVALID_FILE, "%s has no token_embd.weight", cmp->spec.gguf_path);
    if (st == FFNRT_OK)
        st = ffnrt_gguf_tensor_at(t->gguf, (size_t)e, &t->emb);
    if (st == FFNRT_OK && (t->emb.format == FFNRT_WEIGHT_FORMAT_COUNT || t->emb.n_dims != 2 || t->emb.ne[0] != d))
        st = ffnrt_fail(&cmp->err, FFNRT_ERROR_UNSUPPORTED, "%s: token_embd.weight is %s [%lld, %lld], not rows of %lld "
                        "in one of ffnrt's formats", cmp->spec.gguf_path, t->emb.type_name, (long long)t->emb.ne[0],
                        (long long)t->emb.ne[1], (long long)d);
    if (st == FFNRT_OK)
        st = ffnrt_weight_bytes(t->emb.format, 1, d, &t->row_bytes);
    t->rows = t->emb.ne[1];
    t->train_rows = t->rows / 10 * 8 + (t->rows % 10 < 8 ? t->rows % 10 : 8);
    if (st == FFNRT_OK && (t->rows / 10 < v || t->train_rows < 1))
        st = ffnrt_fail(&cmp->err, FFNRT_ERROR_INVALID_ARGUMENT, "%s: %lld embedding rows hold %lld validation rows, "
                        "fewer than validation_tokens = %lld", cmp->spec.gguf_path, (long long)t->rows,
                        (long long)(t->rows / 10), (long long)v);
    float *host = st == FFNRT_OK ? malloc((size_t)(v * d) * sizeof *host) : NULL;
    if (st == FFNRT_OK && !host)
        st = ffnrt_fail(&cmp->err, FFNRT_ERROR_OUT_OF_HOST_MEMORY, "ffnrt_compare_run: out of host memory");
    for (int64_t j = 0; j < v && st == FFNRT_OK; j++)
        st = embedding_row(t, validation_row(j), d, host + j * d, &cmp->err);
    if (st == FFNRT_OK)
        st = compare_upload(ctx, FFNRT_DTYPE_F32, host, v, d, &t->x_val, &cmp->err);
    free(host);
    return st;
}

static ffnrt_status teacher_make(ffnrt_comparison *cmp, teacher *t)
{
    ffnrt_context *ctx = cmp->ctx;
    int64_t d = cmp->spec.d_model, g = cmp->gated_hidden, v = cmp->criteria.validation_tokens;
    memset(t, 0, sizeof *t);
    ffnrt_status st = FFNRT_OK;
    if (cmp->criteria.task == FFNRT_TASK_GGUF) {
        st = gguf_task(cmp, t);
    } else {
        st = numbers(cmp, base_seed(cmp), STREAM_TEACHER, 2 * g, d, d, &t->w_up);
        if (st == FFNRT_OK)
            st = numbers(cmp, base_seed(cmp), STREAM_TEACHER + 1, d, g, g, &t->w_down);
        ffnrt_ffn_desc desc = FFNRT_FFN_DESC_INIT(FFNRT_FFN_GATED, d, g);
        ffnrt_ffn_weight_tensors w = {0};
        w.w_gate_value = t->w_up;
        w.w_out = t->w_down;
        if (st == FFNRT_OK)
            st = compare_called(ctx, ffnrt_ffn_create_from_tensors(ctx, &desc, &w, &t->layer), &cmp->err);
        if (st == FFNRT_OK)
            st = numbers(cmp, base_seed(cmp), STREAM_VALIDATION, v, d, 0, &t->x_val);
    }
    if (st == FFNRT_OK)
        st = compare_upload(ctx, FFNRT_DTYPE_F32, NULL, v, d, &t->t_val, &cmp->err);
    if (st == FFNRT_OK)
        st = compare_called(ctx, ffnrt_ffn_forward(t->layer, t->x_val, t->t_val), &cmp->err);
    float *host = st == FFNRT_OK ? malloc((size_t)(v * d) * sizeof *host) : NULL;
    if (st == FFNRT_OK && !host)
        st = ffnrt_fail(&cmp->err, FFNRT_ERROR_OUT_OF_HOST_MEMORY, "ffnrt_compare_run: out of host memory");
    if (st == FFNRT_OK)
        st = compare_called(ctx, ffnrt_tensor_read(t->t_val, host, (size_t)(v * d) * sizeof *host), &cmp->err);
    double sq = 0;
    for (int64_t i = 0; st == FFNRT_OK && i < v * d; i++)
        sq += (double)host[i] * host[i];
    free(host);
    t->mean_square = sq / (double)(v * d);
    if (st == FFNRT_OK && !(t->mean_square > 0))
        st = ffnrt_fail(&cmp->err, FFNRT_ERROR_INVALID_ARGUMENT,
                        "ffnrt_compare_run: the teacher's validation outputs are all zero: no quality to measure");
    if (st != FFNRT_OK)
        teacher_free(t);
    return st;
}

/* One run's figures. */
typedef struct run_figures {
    int finished;
    double val_rel_mse;
    uint32_t steps;
    double *step_ms; /* each step's host time (caller's array, train_steps long) */
    uint64_t bytes, skipped;
    double grad_norm_max, dead_fraction;
    uint32_t curve_points;
    uint32_t curve_step[FFNRT_COMPARE_MAX_CURVE];
    double curve[FFNRT_COMPARE_MAX_CURVE];
    char note[160];
} run_figures;

/* The student's tensors and its optimizer. */
typedef struct student {
    ffnrt_tensor *w_up, *w_down, *b_up, *b_down;
    ffnrt_tensor *g_up, *g_down, *gb_up, *gb_down;
    ffnrt_tensor *x, *y, *dy, *target, *y_val;
    ffnrt_ffn *layer;
    ffnrt_optimizer *opt;
    ffnrt_ffn_gradients grads;
} student;

static void student_free(student *s)
{
    ffnrt_optimizer_destroy(s->opt);
    ffnrt_ffn_destroy(s->layer);
    ffnrt_tensor *ts[] = {s->w_up, s->w_down, s->b_up, s->b_down, s->g_up, s->g_down, s->gb_up,
                          s->gb_down, s->x, s->y, s->dy, s->target, s->y_val};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
        ffnrt_tensor_destroy(ts[i]);
    memset(s, 0, sizeof *s);
}

static ffnrt_status student_make(ffnrt_comparison *cmp, const ffnrt_compare_result *r, uint64_t seed, student *s)
{
    ffnrt_context *ctx = cmp->ctx;
    const ffnrt_ffn_desc *desc = &r->desc;
    const ffnrt_compare_criteria *c = &cmp->criteria;
    int gated = desc->kind == FFNRT_FFN_GATED;
    int64_t d = desc->d_model, h = desc->hidden, up = gated ? 2 * h : h, t = c->train_tokens;
    memset(s, 0, sizeof *s);
    ffnrt_status st = numbers(cmp, seed, STREAM_STUDENT, up, d, d, &s->w_up);
    if (st == FFNRT_OK)
        st = numbers(cmp, seed, STREAM_STUDENT + 1, d, h, h, &s->w_down);
    if (st == FFNRT_OK && desc->bias)
        st = numbers(cmp, seed, STREAM_STUDENT + 2, up, 0, d, &s->b_up);
    if (st == FFNRT_OK && desc->bias)
        st = numbers(cmp, seed, STREAM_STUDENT + 3, d, 0, h, &s->b_down);
    ffnrt_tensor **zeros[] = {&s->g_up, &s->g_down, &s->x, &s->y, &s->dy, &s->target, &s->y_val};
    const int64_t shapes[][2] = {{up, d}, {d, h}, {t, d}, {t, d}, {t, d}, {t, d}, {c->validation_tokens, d}};
    for (size_t i = 0; i < sizeof zeros / sizeof zeros[0] && st == FFNRT_OK; i++)
        st = compare_upload(ctx, FFNRT_DTYPE_F32, NULL, shapes[i][0], shapes[i][1], zeros[i], &cmp->err);
    if (st == FFNRT_OK && desc->bias)
        st = compare_upload(ctx, FFNRT_DTYPE_F32, NULL, up, 0, &s->gb_up, &cmp->err);
    if (st == FFNRT_OK && desc->bias)
        st = compare_upload(ctx, FFNRT_DTYPE_F32, NULL, d, 0, &s->gb_down, &cmp->err);
    ffnrt_ffn_weight_tensors w = {0};
    if (gated) {
        w.w_gate_value = s->w_up, w.b_gate_value = s->b_up;
        s->grads.w_gate_value = s->g_up, s->grads.b_gate_value = s->gb_up;
    } else {
        w.w_in = s->w_up, w.b_in = s->b_up;
        s->grads.w_in = s->g_up, s->grads.b_in = s->gb_up;
    }
    w.w_out = s->w_down, w.b_out = s->b_down;
    s->grads.w_out = s->g_down, s->grads.b_out = s->gb_down;
    if (st == FFNRT_OK)
        st = compare_called(ctx, ffnrt_ffn_create_from_tensors(ctx, desc, &w, &s->layer), &cmp->err);
    ffnrt_optimizer_desc od = FFNRT_OPTIMIZER_DESC_INIT(FFNRT_OPTIMIZER_ADAMW);
    od.lr = (float)c->train_lr;
    od.weight_decay = (float)c->train_weight_decay;
    od.max_grad_norm = (float)c->train_max_grad_norm;
    if (st == FFNRT_OK)
        st = compare_called(ctx, ffnrt_optimizer_create(ctx, &od, &s->opt), &cmp->err);
    if (st == FFNRT_OK)
        st = compare_called(ctx, ffnrt_optimizer_add_ffn(s->opt, s->layer, &s->grads), &cmp->err);
    return st;
}

/* The validation loss over the teacher's mean square. */
static ffnrt_status evaluate(ffnrt_comparison *cmp, student *s, const teacher *t, double *rel)
{
    double mse = NAN;
    ffnrt_status st = compare_called(cmp->ctx, ffnrt_ffn_forward(s->layer, t->x_val, s->y_val), &cmp->err);
    if (st == FFNRT_OK)
        st = compare_called(cmp->ctx, ffnrt_loss_mse(cmp->ctx, s->y_val, t->t_val, 1.0f, NULL, &mse), &cmp->err);
    *rel = mse / t->mean_square;
    return st;
}

/* Run k of a candidate; the step is open until its first training step. */
static void run_one(ffnrt_comparison *cmp, const ffnrt_compare_result *r, const teacher *t, uint32_t k, float *host,
                    run_figures *f, compare_step *step)
{
    ffnrt_context *ctx = cmp->ctx;
    const ffnrt_compare_criteria *c = &cmp->criteria;
    uint64_t seed = base_seed(cmp) + k;
    uint64_t before = compare_in_use(ctx);
    student s;
    ffnrt_status st = student_make(cmp, r, seed, &s);
    /* At most 16 evaluations after the first, the last step's among them. */
    uint32_t every = (c->train_steps + FFNRT_COMPARE_MAX_CURVE - 2) / (FFNRT_COMPARE_MAX_CURVE - 1);
    double best = INFINITY, rel = NAN;
    uint32_t worse = 0;
    if (st == FFNRT_OK)
        st = evaluate(cmp, &s, t, &rel);
    if (st == FFNRT_OK) {
        f->curve_step[0] = 0, f->curve[0] = rel, f->curve_points = 1;
    }
    for (uint32_t i = 0; i < c->train_steps && st == FFNRT_OK; i++) {
        st = refill(cmp, t, k, i, s.x, host);
        if (st == FFNRT_OK) /* the targets: data, not the step */
            st = compare_called(ctx, ffnrt_ffn_forward(t->layer, s.x, s.target), &cmp->err);
        double t0 = lab_now_ms();
        ffnrt_step_report rep = {0};
        if (st == FFNRT_OK)
            st = compare_called(ctx, ffnrt_ffn_forward_train(s.layer, s.x, s.y), &cmp->err);
        if (st == FFNRT_OK)
            st = compare_called(ctx, ffnrt_loss_mse(ctx, s.y, s.target, 1.0f, s.dy, NULL), &cmp->err);
        if (st == FFNRT_OK)
            st = compare_called(ctx, ffnrt_ffn_backward(s.layer, s.x, s.dy, NULL, &s.grads, 0), &cmp->err);
        if (st == FFNRT_OK)
            st = compare_called(ctx, ffnrt_optimizer_step(s.opt, &rep), &cmp->err);
        double ms = lab_now_ms() - t0;
        if (step->open) { /* the first step built the training kernels: compiling, not a measurement */
            compare_step_end(cmp, step);
        } else if (st == FFNRT_OK) {
            compare_measured(cmp, ms);
        }
        if (i == 0 && st == FFNRT_OK)
            f->bytes = compare_in_use(ctx) - before;
        f->step_ms[f->steps++] = ms;
        f->skipped += (uint64_t)rep.skipped_now;
        if (rep.grad_norm > f->grad_norm_max || isnan(rep.grad_norm))
            f->grad_norm_max = rep.grad_norm;
        if (st != FFNRT_OK || ((i + 1) % every && i + 1 != c->train_steps))
            continue;
        st = evaluate(cmp, &s, t, &rel);
        if (st == FFNRT_OK && f->curve_points < FFNRT_COMPARE_MAX_CURVE) {
            f->curve_step[f->curve_points] = i + 1;
            f->curve[f->curve_points++] = rel;
        }
        if (st == FFNRT_OK && !isfinite(rel))
            st = ffnrt_fail(&cmp->err, FFNRT_ERROR_NON_FINITE, "the validation loss is not finite after %u steps",
                            i + 1);
        if (rel < best)
            best = rel, worse = 0;
        else if (c->train_patience && ++worse >= c->train_patience)
            break; /* the stopping rule */
    }
    /* Units dead on the validation inputs after training. */
    ffnrt_stats_options so = FFNRT_STATS_OPTIONS_INIT;
    ffnrt_stats stats;
    if (st == FFNRT_OK)
        st = compare_called(ctx, ffnrt_ffn_set_stats(s.layer, &so), &cmp->err);
    if (st == FFNRT_OK)
        st = compare_called(ctx, ffnrt_ffn_forward(s.layer, t->x_val, s.y_val), &cmp->err);
    if (st == FFNRT_OK)
        st = compare_called(ctx, ffnrt_ffn_last_stats(s.layer, &stats), &cmp->err);
    if (st == FFNRT_OK)
        f->dead_fraction = stats.hidden_features ? (double)stats.dead_features / (double)stats.hidden_features : 0;
    f->finished = st == FFNRT_OK;
    f->val_rel_mse = rel;
    if (st != FFNRT_OK)
        snprintf(f->note, sizeof f->note, "run %u: %.140s", k + 1, cmp->err.message);
    student_free(&s);
    ffnrt_error_clear(&cmp->err); /* the run's failure is its figures' */
}

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Every run of one candidate, summarised into its result. */
static void train_candidate(ffnrt_comparison *cmp, ffnrt_compare_result *r, const teacher *t)
{
    const ffnrt_compare_criteria *c = &cmp->criteria;
    size_t per_run = c->train_steps ? c->train_steps : 1;
    double *times = malloc(per_run * c->train_seeds * sizeof *times);
    float *host = malloc((size_t)(c->train_tokens * cmp->spec.d_model) * sizeof *host);
    run_figures *f = calloc(c->train_seeds, sizeof *f);
    if (!times || !host || !f) {
        snprintf(r->train_note, sizeof r->train_note, "not trained: out of host memory");
        free(times), free(host), free(f);
        return;
    }
    compare_step step;
    compare_step_begin(cmp, &step, COMPARE_STEP_TRAINING);
    for (uint32_t k = 0; k < c->train_seeds; k++) {
        compare_progress(cmp, "train %s%s run %u/%u (%u steps)", ffnrt_compare_candidate_name(r->candidate),
                         r->bias ? " +bias" : "", k + 1, c->train_seeds, c->train_steps);
        f[k].step_ms = times + (size_t)k * per_run;
        run_one(cmp, r, t, k, host, &f[k], &step);
    }
    compare_step_end(cmp, &step); /* when no step ran */
    /* The figures: quality over the finished runs, times over every step. */
    size_t nt = 0;
    double sum = 0, sumsq = 0;
    r->val_rel_mse_min = INFINITY, r->val_rel_mse_max = -INFINITY;
    uint32_t finished = 0;
    for (uint32_t k = 0; k < c->train_seeds; k++) {
        for (uint32_t i = 0; i < f[k].steps; i++)
            times[nt++] = f[k].step_ms[i];
        r->train_steps_run = f[k].steps > r->train_steps_run ? f[k].steps : r->train_steps_run;
        r->skipped_steps += f[k].skipped;
        if (f[k].grad_norm_max > r->grad_norm_max || isnan(f[k].grad_norm_max))
            r->grad_norm_max = f[k].grad_norm_max;
        r->train_bytes = f[k].bytes > r->train_bytes ? f[k].bytes : r->train_bytes;
        if (!f[k].finished) {
            r->train_failed++;
            if (!r->train_note[0])
                snprintf(r->train_note, sizeof r->train_note, "%s", f[k].note);
            continue;
        }
        finished++;
        double q = f[k].val_rel_mse;
        sum += q, sumsq += q * q;
        r->val_rel_mse_min = q < r->val_rel_mse_min ? q : r->val_rel_mse_min;
        r->val_rel_mse_max = q > r->val_rel_mse_max ? q : r->val_rel_mse_max;
        r->train_dead_fraction = f[k].dead_fraction > r->train_dead_fraction ? f[k].dead_fraction
                                                                             : r->train_dead_fraction;
    }
    r->train_runs = c->train_seeds;
    r->val_rel_mse_mean = finished ? sum / finished : NAN;
    r->val_rel_mse_stdev = finished > 1 ? sqrt(fmax(0, (sumsq - sum * sum / finished) / (finished - 1))) : 0;
    if (!finished)
        r->val_rel_mse_min = r->val_rel_mse_max = NAN;
    if (nt) {
        qsort(times, nt, sizeof *times, cmp_dbl);
        r->step_ms = nt % 2 ? times[nt / 2] : 0.5 * (times[nt / 2 - 1] + times[nt / 2]);
        r->train_tokens_per_s = r->step_ms > 0 ? 1e3 * (double)c->train_tokens / r->step_ms : 0;
    }
    /* The curve: each evaluation's mean over the runs that reached it. */
    for (uint32_t p = 0; p < FFNRT_COMPARE_MAX_CURVE; p++) {
        double s = 0;
        uint32_t n = 0, at = 0;
        for (uint32_t k = 0; k < c->train_seeds; k++)
            if (f[k].curve_points > p && isfinite(f[k].curve[p]))
                s += f[k].curve[p], n++, at = f[k].curve_step[p];
        if (!n)
            break;
        r->curve_step[p] = at;
        r->curve[p] = s / n;
        r->curve_points = p + 1;
    }
    r->train_measured = 1;
    if (!r->train_note[0])
        snprintf(r->train_note, sizeof r->train_note, "%u runs of up to %u steps of %lld tokens, AdamW lr %g",
                 c->train_seeds, c->train_steps, (long long)c->train_tokens, c->train_lr);
    free(times), free(host), free(f);
}

void compare_train_all(ffnrt_comparison *cmp)
{
    teacher t;
    ffnrt_status st = teacher_make(cmp, &t);
    for (size_t i = 0; i < cmp->nresults; i++) {
        ffnrt_compare_result *r = &cmp->results[i];
        if (r->format != FFNRT_WEIGHT_F32) {
            snprintf(r->train_note, sizeof r->train_note, "not trained: %s weights are inference-only",
                     ffnrt_weight_format_name(r->format));
            continue;
        }
        if (st != FFNRT_OK) {
            snprintf(r->train_note, sizeof r->train_note, "not trained: the teacher: %.130s", cmp->err.message);
            compare_step_skip(cmp, COMPARE_STEP_TRAINING);
            continue;
        }
        if (r->status != FFNRT_OK) {
            snprintf(r->train_note, sizeof r->train_note, "not trained: the candidate did not run");
            compare_step_skip(cmp, COMPARE_STEP_TRAINING);
            continue;
        }
        train_candidate(cmp, r, &t);
    }
    if (st == FFNRT_OK)
        teacher_free(&t);
    ffnrt_error_clear(&cmp->err); /* the teacher's failure is in every result's note */
}
