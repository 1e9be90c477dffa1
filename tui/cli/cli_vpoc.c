/* `ringside vpoc`: each session's volume profile results as JSON lines, computed chunk by
 * chunk through a compute backend exactly as the training loop does. The file is read as a
 * stream: sessions are profiled a window at a time, so memory follows the window, not the file.
 * The lines (about 100 bytes a session) are held until the file has been read without an error,
 * so a run that fails prints nothing on stdout. */
#include "backend/compute/compute.h"
#include "backend/core/errbuf.h"
#include "backend/core/json_out.h"
#include "backend/data/data_csv.h"
#include "backend/vpoc/vpoc.h"
#include "tui/cli/cli.h"
#include "tui/cli/cli_data.h"
#include "tui/cli/cli_optab.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct cli_vpoc_opts {
    struct cli_data_opts in;
    char backend[16];
    long chunk, start_hour;
    struct vpoc_params p;
    enum compute_vpoc_kernel kernel;
};

static int cli_vpoc_opt(int id, const char *v, void *ctx, char *err, size_t n) {
    struct cli_vpoc_opts *o = ctx;
    int rc = cli_data_opt(&o->in, id, v, err, n);
    if (rc != -ENOENT)
        return rc;
    switch (id) {
    case CLI_O_VPOC_CHUNK:
        return cli_parse_long("--chunk", v, 0, VPOC_CHUNK_MAX, &o->chunk, err, n);
    case CLI_O_VPOC_TICK:
        return cli_parse_double("--tick", v, 1e-9, 1e9, &o->p.tick, err, n);
    case CLI_O_VPOC_VALUE_AREA:
        return cli_parse_double("--value-area", v, 1e-6, 1, &o->p.value_area, err, n);
    case CLI_O_VPOC_SESSION_START_HOUR:
        return cli_parse_long("--session-start-hour", v, 0, 23, &o->start_hour, err, n);
    case CLI_O_VPOC_BACKEND:
        return cli_copy("--backend", o->backend, sizeof(o->backend), v, err, n);
    case CLI_O_VPOC_PROFILE:
        if (strcmp(v, "close") != 0 && strcmp(v, "range") != 0)
            return errbuf_set(err, n, -EINVAL, "--profile: '%s' is not one of close, range", v);
        o->p.profile = strcmp(v, "range") == 0 ? VPOC_RANGE : VPOC_CLOSE;
        return 0;
    case CLI_O_VPOC_KERNEL:
        if (compute_vpoc_kernel_parse(v, &o->kernel) != 0)
            return errbuf_set(err, n, -EINVAL, "--vpoc-kernel: '%s' is not one of packed, dense",
                              v);
        return 0;
    default:
        return errbuf_set(err, n, -EINVAL, "internal: unhandled option");
    }
}

static int cli_vpoc_parse(int argc, char **argv, struct cli_vpoc_opts *o) {
    *o = (struct cli_vpoc_opts){.chunk = 500,
                                .start_hour = 18,
                                .backend = "auto",
                                .p = {VPOC_CLOSE, 0.25, 0.70},
                                .kernel = COMPUTE_VPOC_PACKED};
    int rc = cli_getopt_run(argc, argv, "vpoc", CLI_CMD_VPOC, false, cli_vpoc_opt, o);
    if (rc != 0)
        return rc;
    if (!o->in.data[0])
        return cli_usage_error("vpoc", "--data FILE is required");
    return 0;
}

static int cli_vpoc_print(FILE *out, const struct data_series *ds, const struct data_session *s,
                          const struct vpoc_result *r) {
    double volume = 0;
    for (size_t i = 0; i < s->n; i++)
        volume += ds->bars[s->first + i].volume;
    /* whole numbers without a point: JSON readers and people both prefer 4701 to 4701.0 */
    char v[JSON_OUT_NUM_MAX], poc[JSON_OUT_NUM_MAX], vah[JSON_OUT_NUM_MAX], val[JSON_OUT_NUM_MAX];
    json_out_num(v, sizeof(v), volume, JSON_OUT_INT);
    json_out_num(poc, sizeof(poc), r->poc, JSON_OUT_INT);
    json_out_num(vah, sizeof(vah), r->vah, JSON_OUT_INT);
    json_out_num(val, sizeof(val), r->val, JSON_OUT_INT);
    return fprintf(out,
                   "{\"session\":\"%s\",\"bars\":%zu,\"volume\":%s,\"poc\":%s,\"vah\":%s,"
                   "\"val\":%s}\n",
                   s->label, s->n, v, poc, vah, val) < 0
               ? -EIO
               : 0;
}

/* Bars a window of sessions gathers before it is profiled and printed: about 47 sessions of
 * one-minute bars, a few MiB with their VPOC form; a longer session is a window by itself.
 * Sessions profile independently, so where a window ends never changes a result. */
#define CLI_VPOC_WINDOW_BARS ((size_t)1 << 16)

/* The sessions read and not yet profiled, the buffers that profile them (grown to the largest
 * window, reused), and the lines of the sessions profiled so far. */
struct cli_vpoc_win {
    FILE *out; /* open_memstream over text, text_len: stdout's lines once the file is read */
    char *text;
    size_t text_len;
    struct data_series ds;   /* the window's bars */
    struct data_sessions ss; /* its sessions, indexing ds */
    size_t ss_cap;
    struct vpoc_bar *vb; /* ds in VPOC form */
    size_t vb_cap;
    struct vpoc_result *res; /* one a session */
    size_t res_cap;
};

/* *p holding at least n elements of size bytes: 0 or -ENOMEM. */
static int cli_vpoc_grow(void **p, size_t *cap, size_t n, size_t size) {
    if (n <= *cap)
        return 0;
    size_t want = *cap ? *cap : 64;
    while (want < n)
        want *= 2;
    void *np = realloc(*p, want * size);
    if (!np)
        return -ENOMEM;
    *p = np;
    *cap = want;
    return 0;
}

/* The window's sessions through the backend, their lines added to w->out in order; the window is
 * emptied. 0, RS_EXIT_USAGE (a session spans too many levels) or 1. */
static int cli_vpoc_flush(struct compute *c, const struct cli_vpoc_opts *o,
                          struct cli_vpoc_win *w) {
    char err[512];
    if (w->ss.n == 0)
        return 0;
    if (cli_vpoc_grow((void **)&w->vb, &w->vb_cap, w->ds.n, sizeof(*w->vb)) != 0 ||
        cli_vpoc_grow((void **)&w->res, &w->res_cap, w->ss.n, sizeof(*w->res)) != 0) {
        fprintf(stderr, "ringside vpoc: out of memory\n");
        return 1;
    }
    vpoc_bars_from_series(w->ds.bars, w->ds.n, w->vb);
    if (vpoc_sessions_check(w->vb, &w->ss, &o->p, err, sizeof(err)) != 0) {
        fprintf(stderr, "ringside vpoc: %s: %s\n", o->in.data, err);
        return RS_EXIT_USAGE;
    }
    if (compute_vpoc_all(c, w->vb, &w->ss, &o->p, o->chunk > 0 ? (size_t)o->chunk : 0, o->kernel,
                         w->res, err, sizeof(err)) != 0) {
        fprintf(stderr, "ringside vpoc: %s\n", err);
        return 1;
    }
    for (size_t k = 0; k < w->ss.n; k++)
        if (cli_vpoc_print(w->out, &w->ds, &w->ss.s[k], &w->res[k]) != 0) {
            fprintf(stderr, "ringside vpoc: out of memory\n");
            return 1;
        }
    w->ds.n = 0;
    w->ss.n = 0;
    return 0;
}

/* Every session of the file, window by window. 0 or the exit status. */
static int cli_vpoc_stream(struct compute *c, const struct cli_vpoc_opts *o, struct data_csv *r,
                           struct cli_vpoc_win *w) {
    for (;;) {
        struct data_session s;
        bool got;
        int rc = cli_data_next("vpoc", r, &w->ds, &s, &got);
        if (rc != 0 || !got)
            return rc ? rc : cli_vpoc_flush(c, o, w);
        if (cli_vpoc_grow((void **)&w->ss.s, &w->ss_cap, w->ss.n + 1, sizeof(s)) != 0) {
            fprintf(stderr, "ringside vpoc: out of memory\n");
            return 1;
        }
        w->ss.s[w->ss.n++] = s;
        if (w->ds.n >= CLI_VPOC_WINDOW_BARS && (rc = cli_vpoc_flush(c, o, w)) != 0)
            return rc;
    }
}

int cli_vpoc(int argc, char **argv) {
    struct cli_vpoc_opts o;
    int rc = cli_vpoc_parse(argc, argv, &o);
    if (rc != 0)
        return rc == 1 ? 0 : rc;
    struct compute *c = NULL;
    if ((rc = cli_data_compute("vpoc", o.backend, &c)) != 0)
        return rc;
    struct data_csv_report rep;
    struct data_csv *r = NULL;
    struct cli_vpoc_win w = {0};
    data_series_init(&w.ds);
    if (!(w.out = open_memstream(&w.text, &w.text_len))) {
        fprintf(stderr, "ringside vpoc: out of memory\n");
        rc = 1;
    } else {
        rc = cli_data_open("vpoc", &o.in, (int)o.start_hour, &rep, &r);
    }
    if (rc == 0)
        rc = cli_vpoc_stream(c, &o, r, &w);
    data_csv_close(r);
    if (w.out && fclose(w.out) != 0 && rc == 0) {
        fprintf(stderr, "ringside vpoc: out of memory\n");
        rc = 1;
    }
    if (rc == 0 && (fwrite(w.text, 1, w.text_len, stdout) != w.text_len || fflush(stdout) != 0)) {
        fprintf(stderr, "ringside vpoc: writing the results: %s\n", strerror(errno));
        rc = 1;
    }
    if (rc == 0)
        cli_data_said("vpoc", &o.in, &rep);
    free(w.text);
    free(w.res);
    free(w.vb);
    free(w.ss.s);
    data_series_fini(&w.ds);
    compute_close(c);
    return rc;
}
