/* `ringside predict`: a trained model's predictions on a data file, one JSON line (or CSV row)
 * per bar, computed on the compute backend as training computes. */
#include "backend/compute/compute.h"
#include "backend/core/afile.h"
#include "backend/core/errbuf.h"
#include "backend/core/json_out.h"
#include "backend/model/model_predict.h"
#include "tui/cli/cli.h"
#include "tui/cli/cli_data.h"
#include "tui/cli/cli_optab.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct cli_predict_opts {
    struct cli_data_opts in;
    char model[ENGINE_PATH_MAX], out[ENGINE_PATH_MAX], backend[16];
    bool csv, features;
    long chunk;
};

static int cli_predict_opt(int id, const char *v, void *ctx, char *err, size_t n) {
    struct cli_predict_opts *o = ctx;
    int rc = cli_data_opt(&o->in, id, v, err, n);
    if (rc != -ENOENT)
        return rc;
    switch (id) {
    case CLI_O_PREDICT_MODEL:
        return cli_copy("--model", o->model, sizeof(o->model), v, err, n);
    case CLI_O_PREDICT_OUT:
        return cli_copy("--out", o->out, sizeof(o->out), v, err, n);
    case CLI_O_PREDICT_BACKEND:
        return cli_copy("--backend", o->backend, sizeof(o->backend), v, err, n);
    case CLI_O_PREDICT_CHUNK:
        return cli_parse_long("--chunk", v, 0, VPOC_CHUNK_MAX, &o->chunk, err, n);
    case CLI_O_PREDICT_CSV:
        o->csv = true;
        return 0;
    case CLI_O_PREDICT_FEATURES:
        o->features = true;
        return 0;
    default:
        return errbuf_set(err, n, -EINVAL, "internal: unhandled option");
    }
}

static int cli_predict_parse(int argc, char **argv, struct cli_predict_opts *o) {
    *o = (struct cli_predict_opts){.chunk = 500, .backend = "auto"};
    int rc = cli_getopt_run(argc, argv, "predict", CLI_CMD_PREDICT, false, cli_predict_opt, o);
    if (rc != 0)
        return rc;
    if (!o->model[0])
        return cli_usage_error("predict", "--model FILE is required");
    if (!o->in.data[0])
        return cli_usage_error("predict", "--data FILE is required");
    return 0;
}

/* Where the lines go, and how. */
struct cli_predict_out {
    FILE *fp;
    const struct cli_predict_opts *o;
    const struct model *m;
    const struct data_series *ds;
    const struct data_sessions *ss;
};

/* A number for the output: the shortest text that reads back as it; NaN as null (JSON) or an
 * empty cell (CSV). */
static void cli_predict_num(FILE *fp, double v, bool csv) {
    char t[JSON_OUT_NUM_MAX];
    json_out_num(t, sizeof(t), v, JSON_OUT_INT);
    fputs(csv && isnan(v) ? "" : t, fp);
}

static void cli_predict_header(const struct cli_predict_out *w) {
    bool bce = w->m->ck.arch.loss == MLP_LOSS_BCE;
    fprintf(w->fp, "time,session,output,%s,actual_bps", bce ? "probability" : "return_bps");
    for (unsigned j = 0; w->o->features && j < FEAT_COUNT; j++)
        fprintf(w->fp, ",%s", feat_name(j));
    fputc('\n', w->fp);
}

static int cli_predict_line(void *ctx, const struct model_pred *p) {
    const struct cli_predict_out *w = ctx;
    bool csv = w->o->csv, bce = w->m->ck.arch.loss == MLP_LOSS_BCE;
    char t[20];
    data_format_time(w->ds->bars[p->bar].t_s, t);
    t[10] = 'T';
    const char *session = w->ss->s[p->session].label;
    if (csv)
        fprintf(w->fp, "%sZ,%s,", t, session);
    else
        fprintf(w->fp, "{\"time\":\"%sZ\",\"session\":\"%s\",\"output\":", t, session);
    cli_predict_num(w->fp, p->output, csv);
    fputs(csv ? "," : bce ? ",\"probability\":" : ",\"return_bps\":", w->fp);
    cli_predict_num(w->fp, p->value, csv);
    fputs(csv ? "," : ",\"actual_bps\":", w->fp);
    cli_predict_num(w->fp, p->actual_bps, csv);
    if (w->o->features) {
        fputs(csv ? "," : ",\"features\":[", w->fp);
        for (unsigned j = 0; j < FEAT_COUNT; j++) {
            if (j)
                fputc(',', w->fp);
            cli_predict_num(w->fp, p->x[j], csv);
        }
        if (!csv)
            fputc(']', w->fp);
    }
    fputs(csv ? "\n" : "}\n", w->fp);
    return ferror(w->fp) ? -EIO : 0;
}

/* The predictions into stdout, or into --out through a temp file renamed at the end. */
static int cli_predict_write(struct compute *c, const struct cli_predict_opts *o,
                             const struct model *m, const struct data_series *ds,
                             const struct data_sessions *ss) {
    char err[1024] = "";
    struct afile af;
    struct cli_predict_out w = {stdout, o, m, ds, ss};
    const char *dst = o->out[0] ? o->out : "stdout";
    if (o->out[0]) {
        if (afile_open_user(&af, o->out, err, sizeof(err)) != 0) {
            fprintf(stderr, "ringside predict: %s\n", err);
            return RS_EXIT_USAGE;
        }
        w.fp = af.fp;
    }
    if (o->csv)
        cli_predict_header(&w);
    int rc = model_predict(c, m, ds, ss, (size_t)o->chunk, cli_predict_line, &w, err, sizeof(err));
    if (rc == 0 && fflush(w.fp) != 0)
        rc = -EIO;
    if (rc == -EIO && !err[0])
        errbuf_set(err, sizeof(err), rc, "cannot write %s: %s", dst, strerror(errno ? errno : EIO));
    if (o->out[0] && rc == 0)
        rc = afile_commit(&af, err, sizeof(err));
    else if (o->out[0])
        afile_abort(&af);
    if (rc == -EINVAL) /* the data cannot be predicted: which file */
        fprintf(stderr, "ringside predict: %s: %s\n", o->in.data, err);
    else if (rc != 0)
        fprintf(stderr, "ringside predict: %s\n", err);
    return rc == 0 ? 0 : rc == -EINVAL ? RS_EXIT_USAGE : 1;
}

int cli_predict(int argc, char **argv) {
    struct cli_predict_opts *o = calloc(1, sizeof(*o));
    if (!o)
        return 1;
    int rc = cli_predict_parse(argc, argv, o);
    if (rc != 0) {
        free(o);
        return rc == 1 ? 0 : rc;
    }
    struct model m;
    char err[1024];
    if (model_load(o->model, &m, err, sizeof(err)) != 0) {
        fprintf(stderr, "ringside predict: %s\n", err);
        free(o);
        return RS_EXIT_USAGE;
    }
    if (m.ck.epoch < 1) /* saved by a stop before the first epoch ended */
        fprintf(stderr,
                "ringside predict: warning: %s was saved before its first epoch ended (epoch "
                "%d): it is trained on part of an epoch and never validated\n",
                o->model, m.ck.epoch);
    struct data_series ds;
    struct data_sessions ss = {0};
    struct compute *c = NULL;
    data_series_init(&ds);
    struct data_csv_report rep;
    rc = cli_data_load("predict", &o->in, &ds, &rep);
    if (rc == 0 && data_sessions_split(&ds, m.session_start_hour, &ss) != 0) {
        fprintf(stderr, "ringside predict: out of memory\n");
        rc = 1;
    }
    rc = rc ? rc : cli_data_compute("predict", o->backend, &c);
    rc = rc ? rc : cli_predict_write(c, o, &m, &ds, &ss);
    if (rc == 0)
        cli_data_said("predict", &o->in, &rep);
    compute_close(c);
    data_sessions_fini(&ss);
    data_series_fini(&ds);
    model_fini(&m);
    free(o);
    return rc;
}
