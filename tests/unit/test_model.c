/* Unit tests for a model outside training: loading a checkpoint with its metadata (and every
 * refusal), predictions on the CPU backend against the reference features and forward pass,
 * and the ONNX file's framing. */
#define _GNU_SOURCE /* memmem */
#include "backend/compute/compute.h"
#include "backend/data/data_synth.h"
#include "backend/memory/mem_conf.h"
#include "backend/model/model_onnx.h"
#include "backend/model/model_predict.h"
#include "tests/support/rs_test.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TM_PATH 1200

/* A checkpoint of a 24-8-1 SiLU MSE model with made-up normalisation in dir, and metadata
 * whose config member is config (JSON members) and whose first feature is named first. */
static void tm_write(const char *dir, const char *config, const char *first, int hidden,
                     char *ckpt) {
    struct mlp_arch a = {.n_in = FEAT_COUNT, .n_hidden = 1, .hidden = {8}};
    struct mlp_ckpt ck;
    char err[512], meta[8192], feats[4096] = "", path[TM_PATH];
    cr_assert_eq(mlp_ckpt_alloc(&ck, &a), 0);
    mlp_init_params(&a, 5, ck.params);
    for (int j = 0; j < FEAT_COUNT; j++) {
        ck.norm_mean[j] = 0.5 * j;
        ck.norm_std[j] = 1.0 + j;
    }
    ck.y_mean = 1.0;
    ck.y_std = 2.0;
    snprintf(ckpt, TM_PATH, "%s/m.rsmodel", dir);
    cr_assert_eq(mlp_ckpt_save(ckpt, &ck, err, sizeof(err)), 0, "%s", err);
    mlp_ckpt_fini(&ck);
    for (unsigned j = 0; j < FEAT_COUNT; j++)
        snprintf(feats + strlen(feats), sizeof(feats) - strlen(feats),
                 "%s{\"name\":\"%s\",\"mean\":0,\"std\":1}", j ? "," : "",
                 j == 0 ? first : feat_name(j));
    snprintf(meta, sizeof(meta),
             "{\"architecture\":{\"inputs\":24,\"hidden\":[%d]},"
             "\"normalization\":{\"features\":[%s]},\"config\":{%s}}",
             hidden, feats, config);
    cr_assert_eq(rs_test_write_file(dir, "m_metadata.json", meta, path, sizeof(path)), 0);
}

static const char tm_config[] =
    "\"session-start-hour\":18,\"tick\":0.25,\"value-area\":0.7,\"horizon\":15,"
    "\"profile\":\"close\"";

Test(model, load_takes_the_settings_from_the_metadata) {
    char dir[512], ckpt[TM_PATH], err[512];
    struct model m;
    cr_assert_eq(rs_test_tmpdir(dir, sizeof(dir)), 0);
    tm_write(dir, tm_config, "ret_1", 8, ckpt);
    cr_assert_eq(model_load(ckpt, &m, err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(m.session_start_hour, 18);
    cr_assert_eq(m.feat.horizon, 15);
    cr_assert_eq(m.feat.vpoc.profile, VPOC_CLOSE);
    cr_assert_float_eq(m.feat.vpoc.tick, 0.25, 0.0);
    cr_assert_float_eq(m.feat.vpoc.value_area, 0.7, 0.0);
    cr_assert_eq(m.feat.target, FEAT_TARGET_RETURN_BPS);
    cr_assert_not_null(strstr(m.meta_text, "\"horizon\":15"));
    double *p = malloc(m.ck.adam.n * sizeof(*p));
    model_params_f32(&m, p);
    for (size_t i = 0; i < m.ck.adam.n; i++)
        cr_assert_float_eq(p[i], (double)(float)m.ck.params[i], 0.0);
    free(p);
    model_fini(&m);
    rs_test_rmtree(dir);
}

/* Each broken metadata is refused with the file and what is wrong. */
Test(model, load_refuses_what_it_cannot_use) {
    static const struct {
        const char *config, *first;
        int hidden;
        const char *want;
    } cases[] = {
        {"\"session-start-hour\":18,\"tick\":-1,\"value-area\":0.7,\"horizon\":15,"
         "\"profile\":\"close\"",
         "ret_1", 8, "config.tick: expected a number"},
        {"\"session-start-hour\":18.5,\"tick\":0.25,\"value-area\":0.7,\"horizon\":15,"
         "\"profile\":\"close\"",
         "ret_1", 8, "config.session-start-hour: expected an integer"},
        {"\"session-start-hour\":18,\"tick\":0.25,\"value-area\":0.7,\"horizon\":15,"
         "\"profile\":\"mode\"",
         "ret_1", 8, "config.profile"},
        {"\"tick\":0.25", "ret_1", 8, "config.session-start-hour"},
        {tm_config, "ret_2", 8, "feature 0 is 'ret_2'"},
        {tm_config, "ret_1", 9, "its architecture is not the checkpoint's"},
    };
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        char dir[512], ckpt[TM_PATH], err[512] = "";
        struct model m;
        cr_assert_eq(rs_test_tmpdir(dir, sizeof(dir)), 0);
        tm_write(dir, cases[k].config, cases[k].first, cases[k].hidden, ckpt);
        cr_assert_eq(model_load(ckpt, &m, err, sizeof(err)), -EINVAL, "case %zu", k);
        cr_assert_not_null(strstr(err, cases[k].want), "case %zu: %s", k, err);
        cr_assert_not_null(strstr(err, "m_metadata.json"), "case %zu: %s", k, err);
        cr_assert_null(m.meta, "case %zu: left loaded", k);
        rs_test_rmtree(dir);
    }
    char dir[512], ckpt[TM_PATH], path[TM_PATH], err[512] = "";
    struct model m;
    cr_assert_eq(rs_test_tmpdir(dir, sizeof(dir)), 0);
    tm_write(dir, tm_config, "ret_1", 8, ckpt);
    snprintf(path, sizeof(path), "%s/m_metadata.json", dir);
    cr_assert_eq(unlink(path), 0);
    cr_assert_eq(model_load(ckpt, &m, err, sizeof(err)), -ENOENT);
    cr_assert_not_null(strstr(err, "m_metadata.json: not found"), "%s", err);
    rs_test_rmtree(dir);
}

/* What predict hands out. */
struct tm_preds {
    size_t n, last_bar;
    double *out, *value, *actual;
    size_t *bar;
};

static int tm_sink(void *ctx, const struct model_pred *p) {
    struct tm_preds *t = ctx;
    cr_assert(t->n == 0 || p->bar > t->last_bar, "bars out of order");
    t->out[t->n] = p->output;
    t->value[t->n] = p->value;
    t->actual[t->n] = p->actual_bps;
    t->bar[t->n] = p->bar;
    t->last_bar = p->bar;
    t->n++;
    return 0;
}

static struct compute *tm_cpu(void) {
    struct compute_conf conf = {.device = 0, .threads = 2};
    mem_conf_default(&conf.alloc);
    struct compute *c = NULL;
    char notice[256], err[512];
    cr_assert_eq(compute_open("cpu", &conf, &c, notice, sizeof(notice), err, sizeof(err)), 0, "%s",
                 err);
    return c;
}

/* Every bar after the first session, in order, as the reference computes it: VPOC per session,
 * features, normalisation, the forward pass with float32 parameters. */
Test(model, predict_matches_the_reference) {
    char dir[512], ckpt[TM_PATH], err[512] = "";
    struct model m;
    cr_assert_eq(rs_test_tmpdir(dir, sizeof(dir)), 0);
    tm_write(dir, tm_config, "ret_1", 8, ckpt);
    cr_assert_eq(model_load(ckpt, &m, err, sizeof(err)), 0, "%s", err);
    struct data_series ds;
    struct data_sessions ss = {0};
    struct data_synth_opts so = {.days = 4, .seed = 9, .start_hour = 18, .tick = 0.25};
    data_series_init(&ds);
    cr_assert_eq(data_synth_generate(&so, &ds), 0);
    cr_assert_eq(data_sessions_split(&ds, 18, &ss), 0);

    struct feat_opts o = m.feat;
    o.all_bars = true;
    struct vpoc_result *prior = calloc(ss.n, sizeof(*prior));
    struct vpoc_bar *vb = malloc(ds.n * sizeof(*vb));
    vpoc_bars_from_series(ds.bars, ds.n, vb);
    for (size_t k = 0; k < ss.n; k++)
        cr_assert_eq(vpoc_session(vb + ss.s[k].first, ss.s[k].n, &o.vpoc, &prior[k]), 0);
    struct feat_set fs;
    cr_assert_eq(feat_build(&ds, &ss, prior, &o, &fs), 0);
    size_t rows = fs.n;
    cr_assert_eq(rows, ds.n - ss.s[0].n);

    struct tm_preds t = {.out = malloc(rows * sizeof(double)),
                         .value = malloc(rows * sizeof(double)),
                         .actual = malloc(rows * sizeof(double)),
                         .bar = malloc(rows * sizeof(size_t))};
    struct compute *c = tm_cpu();
    cr_assert_eq(model_predict(c, &m, &ds, &ss, 500, tm_sink, &t, err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(t.n, rows);

    double *params = malloc(m.ck.adam.n * sizeof(double)), *want = malloc(rows * sizeof(double));
    double *scratch = malloc(mlp_scratch_count(&m.ck.arch, rows) * sizeof(double));
    model_params_f32(&m, params);
    for (size_t r = 0; r < rows; r++)
        for (unsigned j = 0; j < FEAT_COUNT; j++)
            fs.x[r * FEAT_COUNT + j] =
                (fs.x[r * FEAT_COUNT + j] - m.ck.norm_mean[j]) / m.ck.norm_std[j];
    mlp_forward(&m.ck.arch, params, fs.x, rows, scratch, want);
    for (size_t r = 0; r < rows; r++) {
        cr_assert_eq(t.bar[r], fs.bar[r]);
        cr_assert_float_eq(t.out[r], want[r], 1e-12 * fmax(1.0, fabs(want[r])), "row %zu", r);
        cr_assert_float_eq(t.value[r], want[r] * 2.0 + 1.0, 1e-9, "row %zu", r);
        if (isnan(fs.y[r]))
            cr_assert(isnan(t.actual[r]), "row %zu", r);
        else
            cr_assert_float_eq(t.actual[r], fs.y[r], 0.0, "row %zu", r);
    }
    cr_assert(isnan(t.actual[rows - 1]) && !isnan(t.actual[0]));

    /* one session is not enough: its VPOC is what the features start from */
    struct data_sessions one = {ss.s, 1};
    cr_assert_eq(model_predict(c, &m, &ds, &one, 500, tm_sink, &t, err, sizeof(err)), -EINVAL);
    cr_assert_not_null(strstr(err, "needs the session before it"), "%s", err);

    compute_close(c);
    free(params), free(want), free(scratch), free(prior), free(vb);
    free(t.out), free(t.value), free(t.actual), free(t.bar);
    feat_set_fini(&fs);
    data_sessions_fini(&ss);
    data_series_fini(&ds);
    model_fini(&m);
    rs_test_rmtree(dir);
}

/* The ONNX file starts with ir_version 7 (field 1, varint: 08 07), names its producer and holds
 * every parameter's four bytes. */
Test(model, onnx_file_framing) {
    char dir[512], ckpt[TM_PATH], path[TM_PATH], err[512] = "";
    struct model m;
    cr_assert_eq(rs_test_tmpdir(dir, sizeof(dir)), 0);
    tm_write(dir, tm_config, "ret_1", 8, ckpt);
    cr_assert_eq(model_load(ckpt, &m, err, sizeof(err)), 0, "%s", err);
    snprintf(path, sizeof(path), "%s/m.onnx", dir);
    cr_assert_eq(model_onnx_write(path, &m, err, sizeof(err)), 0, "%s", err);
    FILE *fp = fopen(path, "rb");
    cr_assert_not_null(fp);
    static unsigned char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof(buf), fp);
    fclose(fp);
    cr_assert_geq(n, 4 * m.ck.adam.n + 8 * FEAT_COUNT);
    cr_assert(buf[0] == 0x08 && buf[1] == 0x07, "ir_version: %02x %02x", buf[0], buf[1]);
    cr_assert_not_null(memmem(buf, n, "ringside", 8));
    cr_assert_not_null(memmem(buf, n, "0.weight", 8));
    cr_assert_not_null(memmem(buf, n, "return_bps", 10));
    cr_assert_eq(rs_test_count_tmp(dir), 0);
    model_fini(&m);
    rs_test_rmtree(dir);
}
