/* The telemetry service: opens the providers, samples them on its own thread every interval,
 * merges their records per GPU and publishes snapshots; providers' events go to the ring. */
#include "backend/telemetry/tele.h"

#include "backend/core/errbuf.h"
#include "backend/core/mono.h"
#include "backend/core/snap.h"
#include "backend/core/worker.h"
#include "backend/telemetry/tele_internal.h"
#include "backend/telemetry/tele_prov.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct tele_slot {
    const struct tele_prov_ops *ops;
    void *state;
    bool open;
};

struct tele {
    struct tele_conf conf;
    struct tele_ctx ctx;
    struct evring *events;
    struct tele_slot slots[TELE_MAX_PROVIDERS];
    unsigned n_slots;
    struct tele_prov_info info[TELE_MAX_PROVIDERS]; /* owned by the sampling thread */
    struct tele_gpu recs[TELE_MAX_GPUS];
    struct snap *snap;
    uint64_t seq;
    struct worker w;
};

static void tele_emit(const struct tele_ctx *ctx, enum ev_severity sev, const char *pci,
                      const char *text) {
    struct tele *t = ctx->emit_arg;
    if (!t->events)
        return;
    struct ev e = {
        .t_ns = mono_now_ns(), .kind = sev == SEV_ERROR ? EV_ALERT : EV_LOG, .dev = EV_DEV_NONE};
    e.u.text.severity = (uint8_t)sev;
    if (pci && pci[0])
        snprintf(e.u.text.text, sizeof(e.u.text.text), "%s: %s", pci, text);
    else
        snprintf(e.u.text.text, sizeof(e.u.text.text), "%s", text);
    evring_push(t->events, &e);
}

/* conf->only: each name must be a registered provider. */
static int tele_check_only(const char *only, char *err, size_t errlen) {
    char buf[sizeof(((struct tele_conf *)0)->only)], *save = NULL;
    snprintf(buf, sizeof(buf), "%s", only);
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        bool known = false;
        for (size_t i = 0; i < tele_prov_count; i++)
            known |= strcmp(tok, tele_prov_table[i]->name) == 0;
        for (const struct tele_prov_absent *a = tele_prov_absent; a->name; a++)
            known |= strcmp(tok, a->name) == 0;
        if (!known)
            return errbuf_set(err, errlen, -EINVAL,
                              "--telemetry: unknown provider '%s' (known: sysfs, libdrm, "
                              "rocm-smi, debugfs, fdinfo, nvml, or none)",
                              tok);
    }
    return 0;
}

static bool tele_wanted(const char *only, const char *name) {
    if (!only[0])
        return true;
    size_t n = strlen(name);
    for (const char *p = only; (p = strstr(p, name)) != NULL; p += n)
        if ((p == only || p[-1] == ',') && (p[n] == '\0' || p[n] == ','))
            return true;
    return false;
}

static void tele_add_absent(struct tele *t, const struct tele_prov_absent *a) {
    struct tele_prov_info *pi = &t->info[t->n_slots++];
    snprintf(pi->name, sizeof(pi->name), "%s", a->name);
    pi->status = TELE_UNAVAILABLE;
    snprintf(pi->reason, sizeof(pi->reason), "not built into this ringside: needs %s", a->needs);
}

static void tele_open_one(struct tele *t, const struct tele_prov_ops *ops) {
    unsigned k = t->n_slots++;
    struct tele_prov_info *pi = &t->info[k];
    t->slots[k].ops = ops;
    snprintf(pi->name, sizeof(pi->name), "%s", ops->name);
    pi->caps = ops->caps;
    int rc = ops->open(&t->ctx, &t->slots[k].state, pi->reason, sizeof(pi->reason));
    t->slots[k].open = rc == 0;
    pi->status = rc == 0 ? TELE_OK : TELE_UNAVAILABLE;
    if (rc == 0)
        pi->reason[0] = '\0';
    else if (!pi->reason[0])
        snprintf(pi->reason, sizeof(pi->reason), "%s", strerror(-rc));
}

int tele_create(struct tele **out, const struct tele_conf *conf, struct evring *events, char *err,
                size_t errlen) {
    *out = NULL;
    if (strcmp(conf->only, "none") != 0 && tele_check_only(conf->only, err, errlen) != 0)
        return -EINVAL;
    struct tele *t = calloc(1, sizeof(*t));
    if (!t || snap_create(&t->snap, sizeof(struct tele_snap)) != 0) {
        free(t);
        return errbuf_set(err, errlen, -ENOMEM, "out of memory");
    }
    t->conf = *conf;
    t->events = events;
    t->ctx = (struct tele_ctx){&t->conf.roots, getpid(), tele_emit, t};
    worker_init(&t->w);
    bool none = strcmp(conf->only, "none") == 0;
    for (size_t i = 0; i < tele_prov_count && t->n_slots < TELE_MAX_PROVIDERS; i++)
        if (!none && tele_wanted(conf->only, tele_prov_table[i]->name))
            tele_open_one(t, tele_prov_table[i]);
    for (const struct tele_prov_absent *a = tele_prov_absent; a->name; a++)
        if (!none && t->n_slots < TELE_MAX_PROVIDERS && tele_wanted(conf->only, a->name))
            tele_add_absent(t, a);
    *out = t;
    return 0;
}

static void tele_sample_slot(struct tele *t, unsigned k, struct tele_snap *s) {
    struct tele_prov_info *pi = &t->info[k];
    size_t n = 0;
    char reason[TELE_REASON_BYTES] = "";
    uint64_t t0 = mono_now_ns();
    int rc = t->slots[k].ops->sample(t->slots[k].state, t->recs, TELE_MAX_GPUS, &n, reason,
                                     sizeof(reason));
    uint64_t dt = mono_now_ns() - t0;
    if (n > TELE_MAX_GPUS)
        n = TELE_MAX_GPUS;
    pi->samples++;
    pi->last_sample_ns = dt;
    pi->total_sample_ns += dt;
    pi->max_sample_ns = dt > pi->max_sample_ns ? dt : pi->max_sample_ns;
    pi->n_gpus = (unsigned)n;
    pi->status = rc == 0 ? TELE_OK : TELE_ERROR;
    snprintf(pi->reason, sizeof(pi->reason), "%s",
             rc == 0     ? ""
             : reason[0] ? reason
                         : strerror(-rc));
    tele_merge_add(s, k, t->recs, n);
}

void tele_sample_now(struct tele *t) {
    struct tele_snap *s = snap_write_begin(t->snap);
    tele_merge_begin(s);
    for (unsigned k = 0; k < t->n_slots; k++)
        if (t->slots[k].open)
            tele_sample_slot(t, k, s);
    tele_merge_end(s);
    s->n_prov = t->n_slots;
    memcpy(s->prov, t->info, sizeof(s->prov));
    s->t_ns = mono_now_ns();
    s->seq = ++t->seq;
    snap_publish(t->snap);
}

static void *tele_thread(void *arg) {
    struct tele *t = arg;
    do
        tele_sample_now(t);
    while (!worker_nap(&t->w, t->conf.interval_ns));
    return NULL;
}

int tele_start(struct tele *t) {
    return worker_start(&t->w, tele_thread, t);
}

const struct tele_snap *tele_snap_read(struct tele *t, bool *fresh) {
    return snap_read(t->snap, fresh);
}

void tele_destroy(struct tele *t) {
    if (!t)
        return;
    worker_fini(&t->w); /* the sampling thread ends before its providers close */
    for (unsigned k = 0; k < t->n_slots; k++)
        if (t->slots[k].open)
            t->slots[k].ops->close(t->slots[k].state);
    snap_destroy(t->snap);
    free(t);
}
