/* The dashboard's doctor runner (D): the environment checks on a thread of their own, the
 * report handed to the UI thread when done, a notice and an event per failed check. */
#include "tui/dashboard/app_doctor.h"

#include "backend/compute/compute.h"
#include "backend/core/mono.h"
#include "tui/dashboard/app_internal.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void app_doctor_init(struct app_doctor *d) {
    memset(d, 0, sizeof(*d));
    worker_init(&d->w);
}

/* The checks of `ringside doctor --quick`: versions, GPUs against the built archs, permissions,
 * variables, known-bad combinations (the built-in rules) and the kernel log. */
static void *app_doctor_thread(void *arg) {
    struct app_doctor *d = arg;
    struct doctor_env e;
    char runtime[160], archs[160], err[256];
    doctor_env_self(&e);
    compute_runtime_info(runtime, sizeof(runtime), archs, sizeof(archs)); /* versions only */
    e.hip_runtime = runtime;
    e.built_archs = archs;
    e.backends = compute_backends();
    memcpy(e.gpus, d->gpus, sizeof(e.gpus));
    e.n_gpus = d->n_gpus;
    struct doctor_facts f;
    doctor_facts_read(&e, &f);
    doctor_check_env(&e, d->work);
    struct doctor_rules *rules = NULL;
    if (doctor_rules_load(&rules, NULL, err, sizeof(err)) == 0) {
        doctor_check_rules(rules, &e, &f, d->work);
        doctor_rules_free(rules);
    } else {
        struct doctor_row *row =
            doctor_add(d->work, "known issues", "rules", DOCTOR_SKIP, "not loaded");
        doctor_remedy(row, "%s", err);
    }
    if (!worker_stopping(&d->w)) /* the dashboard is closing: the kernel log can wait */
        doctor_check_kmsg(&e, d->work);
    pthread_mutex_lock(&d->w.mu);
    d->done = true;
    pthread_mutex_unlock(&d->w.mu);
    return NULL;
}

int app_doctor_start(struct app_doctor *d, const struct tele_snap *t) {
    if (d->running)
        return -EBUSY;
    if (!d->work && !(d->work = malloc(sizeof(*d->work))))
        return -ENOMEM;
    memset(d->work, 0, sizeof(*d->work));
    d->n_gpus = 0;
    for (unsigned k = 0; t && k < t->n_gpus && d->n_gpus < DOCTOR_MAX_GPUS; k++) {
        const struct tele_gpu *g = &t->gpus[k];
        struct doctor_gpu *dg = &d->gpus[d->n_gpus++];
        memset(dg, 0, sizeof(*dg));
        snprintf(dg->pci, sizeof(dg->pci), "%s", g->pci);
        snprintf(dg->name, sizeof(dg->name), "%s", g->name[0] ? g->name : "unknown");
        snprintf(dg->arch, sizeof(dg->arch), "%s", g->arch);
        dg->amd = g->vendor == TELE_VENDOR_AMD;
        dg->nvidia = g->vendor == TELE_VENDOR_NVIDIA;
    }
    d->done = false;
    /* the thread takes no signals: SIGWINCH, SIGINT, SIGTERM and SIGHUP must reach the UI
     * thread, whose poll() they interrupt */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    int rc = worker_start(&d->w, app_doctor_thread, d);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0)
        return rc;
    d->running = true;
    d->started = time(NULL);
    return 0;
}

bool app_doctor_poll(struct app_doctor *d) {
    if (!d->running)
        return false;
    pthread_mutex_lock(&d->w.mu);
    bool done = d->done;
    pthread_mutex_unlock(&d->w.mu);
    if (!done)
        return false;
    worker_fini(&d->w); /* the thread has returned, or is about to: join it */
    worker_init(&d->w);
    d->running = false;
    struct doctor_report *old = d->last; /* kept for the next run's report */
    d->last = d->work;
    d->work = old;
    d->when = d->started;
    gpu_view_doctor_counts(d->last, d->counts);
    return true;
}

void app_doctor_fini(struct app_doctor *d) {
    worker_fini(&d->w);
    free(d->work);
    free(d->last);
    d->work = d->last = NULL;
    d->running = false;
}

void app_doctor_key(struct app *a) {
    int rc = app_doctor_start(&a->doctor, a->frame.tele);
    if (rc == -EBUSY)
        app_notice(a, "doctor: already running");
    else if (rc != 0)
        app_notice(a, "doctor: cannot start the checks: %s", strerror(-rc));
    else
        app_notice(a, "doctor: running the environment checks...");
}

/* A failed check in the events panel, as an error line of the dashboard's own. */
static void app_doctor_event(struct app *a, const struct doctor_row *row) {
    struct ev log = {.t_ns = mono_now_ns(), .kind = EV_LOG, .dev = EV_DEV_NONE};
    log.seq = (uint32_t)a->model.last_seq; /* not a gap in the source's sequence */
    log.u.text.severity = SEV_ERROR;
    char line[sizeof(row->name) + sizeof(row->value) + sizeof(row->remedy) + 32];
    snprintf(line, sizeof(line), "doctor: %s failed: %s%s%s", row->name, row->value,
             row->remedy[0] ? " - " : "", row->remedy);
    size_t len = strlen(line); /* what the event holds of it */
    len = len < sizeof(log.u.text.text) ? len : sizeof(log.u.text.text) - 1;
    memcpy(log.u.text.text, line, len);
    log.u.text.text[len] = '\0';
    ui_model_add(&a->model, &log);
}

void app_doctor_pickup(struct app *a) {
    struct app_doctor *d = &a->doctor;
    if (!app_doctor_poll(d))
        return;
    for (size_t k = 0; k < d->last->n; k++)
        if (d->last->rows[k].status == DOCTOR_FAIL)
            app_doctor_event(a, &d->last->rows[k]);
    size_t warn = d->counts[DOCTOR_WARN], fail = d->counts[DOCTOR_FAIL];
    if (warn && fail)
        app_notice(a, "doctor: %zu warn, %zu fail - g: GPU details", warn, fail);
    else if (warn || fail)
        app_notice(a, "doctor: %zu %s - g: GPU details", warn + fail, warn ? "warn" : "fail");
    else
        app_notice(a, "doctor: all %zu checks ok (%zu skipped) - g: GPU details",
                   d->counts[DOCTOR_OK], d->counts[DOCTOR_SKIP]);
}
