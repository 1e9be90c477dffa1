/* `ringside doctor`: every check of tui/doctor/ in one run, printed as a table (colour on a
 * terminal), JSON or Markdown; exit 0 when nothing failed, 1 when something did, 2 on a usage
 * error. */
#include "backend/compute/compute.h"
#include "backend/core/afile.h"
#include "backend/core/errbuf.h"
#include "backend/core/evring.h"
#include "backend/telemetry/tele.h"
#include "tui/cli/cli.h"
#include "tui/cli/cli_optab.h"
#include "tui/doctor/doctor.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct cli_doctor_args {
    bool quick, json, markdown;
    double timeout_s;
    char rules[1024], root[1024], backend[16], inject[64], bundle[1024], comm_lib[1024];
};

static int cli_doctor_opt(int id, const char *v, void *ctx, char *err, size_t n) {
    struct cli_doctor_args *a = ctx;
    switch (id) {
    case CLI_O_DOCTOR_QUICK:
        a->quick = true;
        return 0;
    case CLI_O_DOCTOR_JSON:
        a->json = true;
        return 0;
    case CLI_O_DOCTOR_MARKDOWN:
        a->markdown = true;
        return 0;
    case CLI_O_DOCTOR_TIMEOUT:
        return cli_parse_double("--timeout", v, 1, 3600, &a->timeout_s, err, n);
    case CLI_O_DOCTOR_RULES:
        return cli_copy("--rules", a->rules, sizeof(a->rules), v, err, n);
    case CLI_O_DOCTOR_BUNDLE:
        return cli_copy("--bundle", a->bundle, sizeof(a->bundle), v, err, n);
    case CLI_O_DOCTOR_BACKEND:
        return cli_copy("--backend", a->backend, sizeof(a->backend), v, err, n);
    case CLI_O_DOCTOR_COMM_LIB:
        return cli_copy("--comm-lib", a->comm_lib, sizeof(a->comm_lib), v, err, n);
    case CLI_O_DOCTOR_INJECT: {
        struct trace_inject in;
        int rc = cli_copy("--inject", a->inject, sizeof(a->inject), v, err, n);
        return rc ? rc : trace_inject_parse(v, &in, err, n);
    }
    default:
        return cli_copy("--root", a->root, sizeof(a->root), v, err, n);
    }
}

static int cli_doctor_parse(int argc, char **argv, struct cli_doctor_args *a) {
    memset(a, 0, sizeof(*a));
    a->timeout_s = 20;
    int rc = cli_getopt_run(argc, argv, "doctor", CLI_CMD_DOCTOR, false, cli_doctor_opt, a);
    if (rc == 0 && a->bundle[0]) { /* a bundle that could not be written is known now */
        char dir[1024];
        snprintf(dir, sizeof(dir), "%s", a->bundle);
        char *slash = strrchr(dir, '/');
        struct stat st;
        if (slash)
            *(slash == dir ? slash + 1 : slash) = '\0';
        if (stat(slash ? dir : ".", &st) != 0 || !S_ISDIR(st.st_mode)) {
            char msg[1200];
            snprintf(msg, sizeof(msg), "--bundle %.500s: the directory %.500s does not exist",
                     a->bundle, slash ? dir : ".");
            return cli_usage_error("doctor", msg);
        }
    }
    if (rc == 0 && a->json && a->markdown)
        return cli_usage_error("doctor", "--json and --markdown exclude each other");
    return rc;
}

/* Telemetry for the report: the GPUs it sees (names, archs, vendors) into e, and the open
 * service in *tp (for the bundle's snapshot; NULL when it could not open). */
static void cli_doctor_gpus(struct doctor_env *e, struct tele **tp, struct evring **rp) {
    struct tele_conf tc;
    char err[256];
    *tp = NULL;
    tele_conf_default(&tc);
    if (e->root[0]) { /* the fixture's files, not this machine's */
        snprintf(tc.roots.sys, sizeof(tc.roots.sys), "%s/sys", e->root);
        snprintf(tc.roots.proc, sizeof(tc.roots.proc), "%s/proc", e->root);
        snprintf(tc.roots.dev, sizeof(tc.roots.dev), "%s/dev", e->root);
        snprintf(tc.roots.debugfs, sizeof(tc.roots.debugfs), "%s/sys/kernel/debug", e->root);
        snprintf(tc.only, sizeof(tc.only), "sysfs");
    }
    if (evring_create(rp, 64) != 0 || tele_create(tp, &tc, *rp, err, sizeof(err)) != 0) {
        *tp = NULL;
        return;
    }
    tele_sample_now(*tp);
    const struct tele_snap *s = tele_snap_read(*tp, NULL);
    for (unsigned k = 0; k < s->n_gpus && e->n_gpus < DOCTOR_MAX_GPUS; k++) {
        const struct tele_gpu *g = &s->gpus[k];
        struct doctor_gpu *d = &e->gpus[e->n_gpus++];
        snprintf(d->pci, sizeof(d->pci), "%s", g->pci);
        snprintf(d->name, sizeof(d->name), "%s", g->name[0] ? g->name : "unknown");
        snprintf(d->arch, sizeof(d->arch), "%s", g->arch);
        d->amd = g->vendor == TELE_VENDOR_AMD;
        d->nvidia = g->vendor == TELE_VENDOR_NVIDIA;
    }
}

/* What the GPU rows run on, or why they are skipped. */
static void cli_doctor_gpu_opts(const struct cli_doctor_args *a, const struct doctor_env *e,
                                struct doctor_gpu_opts *g) {
    memset(g, 0, sizeof(*g));
    g->timeout_s = a->timeout_s;
    g->hang_s = a->timeout_s / 4 < 2 ? a->timeout_s / 4 : 2;
    snprintf(g->inject, sizeof(g->inject), "%s", a->inject);
    if (a->backend[0])
        snprintf(g->backend, sizeof(g->backend), "%s", a->backend);
    else if (a->root[0])
        g->skip_reason = "--root: the files are not this machine's GPUs";
    else if (e->n_gpus == 0)
        g->skip_reason = "no GPU found (the telemetry providers list none)";
    else if (!e->hip_runtime[0])
        g->skip_reason = "this build has no GPU backend (compiled: cpu); rebuild with "
                         "-DRINGSIDE_HIP=AMD or -DRINGSIDE_HIP=NVIDIA";
    else
        snprintf(g->backend, sizeof(g->backend), "hip");
}

/* What the multi-GPU rows run on, or why they are skipped. The CPU backend rehearses them on
 * two simulated devices, through the CPU communicator unless a library is named. */
static void cli_doctor_mgpu_opts(const struct cli_doctor_args *a, const struct doctor_env *e,
                                 const struct doctor_gpu_opts *g, struct doctor_mgpu_opts *m) {
    memset(m, 0, sizeof(*m));
    m->timeout_s = a->timeout_s;
    m->stall_rank = -1;
    m->n_found = (unsigned)e->n_gpus;
    m->comm_lib = a->comm_lib[0] ? a->comm_lib : NULL;
    m->skip_reason = g->skip_reason;
    if (!g->backend[0])
        return;
    snprintf(m->backend, sizeof(m->backend), "%s", g->backend);
    if (strcmp(g->backend, "cpu") == 0) {
        m->max_devices = 2;
        snprintf(m->comm, sizeof(m->comm), "%s", m->comm_lib ? "nccl" : "cpu");
    }
}

int cli_doctor(int argc, char **argv) {
    struct cli_doctor_args a;
    int rc = cli_doctor_parse(argc, argv, &a);
    if (rc != 0)
        return rc == 1 ? 0 : rc;
    struct doctor_rules *rules = NULL;
    char err[512];
    if (doctor_rules_load(&rules, a.rules[0] ? a.rules : NULL, err, sizeof(err)) != 0) {
        fprintf(stderr, "ringside doctor: %s\n", err);
        return RS_EXIT_USAGE;
    }
    struct doctor_env e;
    doctor_env_self(&e);
    e.root = a.root;
    static char runtime[160], archs[160];
    compute_runtime_info(runtime, sizeof(runtime), archs, sizeof(archs));
    e.hip_runtime = runtime;
    e.built_archs = archs;
    e.backends = compute_backends();
    struct tele *tele = NULL;
    struct evring *ring = NULL;
    cli_doctor_gpus(&e, &tele, &ring);
    struct doctor_report *r = calloc(1, sizeof(*r));
    if (!r) {
        doctor_rules_free(rules);
        return 1;
    }
    struct doctor_facts f;
    doctor_facts_read(&e, &f);
    doctor_check_env(&e, r);
    doctor_check_rules(rules, &e, &f, r);
    static struct doctor_kmsg_events kept;
    doctor_check_kmsg_keep(&e, r, &kept);
    bool hung = false;
    if (!a.quick) {
        struct doctor_gpu_opts g;
        cli_doctor_gpu_opts(&a, &e, &g);
        doctor_check_gpu(&g, r, &hung);
        struct doctor_mgpu_opts m;
        cli_doctor_mgpu_opts(&a, &e, &g, &m);
        if (!hung)
            doctor_check_mgpu(&m, r, &hung);
    }
    rc = a.json       ? doctor_print_json(stdout, r)
         : a.markdown ? doctor_print_markdown(stdout, r)
                      : doctor_print_table(stdout, r, isatty(STDOUT_FILENO) && !getenv("NO_COLOR"));
    int status = rc != 0 ? 1 : doctor_exit_status(r);
    if (rc != 0)
        fprintf(stderr, "ringside doctor: writing the report failed: %s\n", strerror(-rc));
    if (a.bundle[0]) {
        if (tele)
            tele_sample_now(tele); /* the machine after the smoke tests */
        const struct tele_snap *snap = tele ? tele_snap_read(tele, NULL) : NULL;
        if (doctor_write_bundle(a.bundle, r, &f, snap, &kept, err, sizeof(err)) != 0) {
            fprintf(stderr, "ringside doctor: --bundle: %s\n", err);
            status = 1;
        } else if (!a.json && !a.markdown) {
            printf("bundle written to %s\n", a.bundle);
        }
    }
    if (hung) { /* a GPU call never returned: runtime destructors could block on it */
        fflush(NULL);
        _exit(status);
    }
    tele_destroy(tele);
    evring_destroy(ring);
    free(r);
    doctor_rules_free(rules);
    return status;
}
