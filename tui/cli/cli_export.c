/* `ringside export`: a checkpoint as a file other tools read: ONNX (any ONNX runtime) or
 * safetensors (PyTorch and the safetensors package). */
#include "backend/core/afile.h"
#include "backend/core/errbuf.h"
#include "backend/mlp/mlp_safetensors.h"
#include "backend/model/model_onnx.h"
#include "tui/cli/cli.h"
#include "tui/cli/cli_optab.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum cli_export_format { EXPORT_NONE, EXPORT_ONNX, EXPORT_SAFETENSORS };

struct cli_export_opts {
    char model[ENGINE_PATH_MAX], out[ENGINE_PATH_MAX];
    enum cli_export_format format;
};

static int cli_export_opt(int id, const char *v, void *ctx, char *err, size_t n) {
    struct cli_export_opts *o = ctx;
    switch (id) {
    case 1: /* the argument */
    case CLI_O_EXPORT_MODEL:
        if (o->model[0])
            return errbuf_set(err, n, -EINVAL, "one checkpoint at a time ('%s' and '%s')", o->model,
                              v);
        return cli_copy("CHECKPOINT", o->model, sizeof(o->model), v, err, n);
    case CLI_O_EXPORT_OUT:
        return cli_copy("--out", o->out, sizeof(o->out), v, err, n);
    case CLI_O_EXPORT_FORMAT:
        if (strcmp(v, "onnx") != 0 && strcmp(v, "safetensors") != 0)
            return errbuf_set(err, n, -EINVAL, "--format: '%s' is not one of onnx, safetensors", v);
        o->format = strcmp(v, "onnx") == 0 ? EXPORT_ONNX : EXPORT_SAFETENSORS;
        return 0;
    default:
        return errbuf_set(err, n, -EINVAL, "internal: unhandled option");
    }
}

static int cli_export_parse(int argc, char **argv, struct cli_export_opts *o) {
    *o = (struct cli_export_opts){0};
    /* "-": the checkpoint argument comes to cli_export_opt as id 1, wherever it stands */
    int rc = cli_getopt_run(argc, argv, "export", CLI_CMD_EXPORT, true, cli_export_opt, o);
    if (rc != 0)
        return rc;
    if (o->format == EXPORT_NONE)
        return cli_usage_error("export", "--format onnx|safetensors is required");
    if (!o->model[0])
        return cli_usage_error("export", "which checkpoint? (CHECKPOINT)");
    if (!o->out[0])
        return cli_usage_error("export", "--out FILE is required");
    return 0;
}

int cli_export(int argc, char **argv) {
    struct cli_export_opts o;
    int rc = cli_export_parse(argc, argv, &o);
    if (rc != 0)
        return rc == 1 ? 0 : rc;
    struct model m;
    char err[1024];
    if (model_load(o.model, &m, err, sizeof(err)) != 0) {
        fprintf(stderr, "ringside export: %s\n", err);
        return RS_EXIT_USAGE;
    }
    if (o.format == EXPORT_ONNX) {
        rc = model_onnx_write(o.out, &m, err, sizeof(err));
    } else {
        uint8_t *buf = NULL;
        size_t len = 0;
        rc = mlp_safetensors_encode(&m.ck, m.meta_text, &buf, &len);
        rc = rc ? errbuf_set(err, sizeof(err), rc, "%s: out of memory", o.out)
                : afile_write_all_user(o.out, buf, len, err, sizeof(err));
        free(buf);
    }
    model_fini(&m);
    if (rc != 0) {
        fprintf(stderr, "ringside export: %s\n", err);
        return rc == -EISDIR ? RS_EXIT_USAGE : 1; /* --out names a directory: the usage's */
    }
    return 0;
}
