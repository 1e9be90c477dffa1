/* The engine's creation: everything that can fail on input fails here, before any thread (the
 * devices and their backend, the group, the data, a resumed checkpoint, the output directory). */
#include "backend/core/afile.h"
#include "backend/core/errbuf.h"
#include "backend/core/mono.h"
#include "backend/engine/engine_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Arm the rehearsal faults: each on its device, or on every training device. */
static void engine_arm_faults(struct engine *e) {
    for (int k = 0; k < e->conf.n_inject; k++) {
        const struct trace_inject *in = &e->conf.inject[k];
        char spec[64];
        for (unsigned r = 0; r < e->n_dev; r++)
            if (in->dev < 0 || (unsigned)in->dev == e->dev[r]->c->dev)
                trace_add_inject(e->trace, e->dev[r]->c->dev, in);
        trace_inject_format(in, spec, sizeof(spec));
        engine_log(e, SEV_WARNING, "fault injection armed: %s", spec);
    }
}

/* The devices to train on, checked: distinct, and a fault's device among them. */
static int engine_device_list(struct engine *e, char *err, size_t errlen) {
    struct engine_conf *c = &e->conf;
    if (c->n_devices == ENGINE_ALL_DEVICES) { /* every GPU the runtime sees */
        const char *name = strcmp(c->backend, "auto") == 0 ? compute_table[0]->name : c->backend;
        int n = 0, rc = strcmp(name, "cpu") == 0
                            ? errbuf_set(err, errlen, -EINVAL,
                                         "--devices all: the cpu backend simulates devices; "
                                         "name them (e.g. --devices 0,1,2,3)")
                            : compute_device_count(name, &n, err, errlen);
        if (rc != 0)
            return rc == -ENOENT ? -EINVAL : rc;
        if (n > ENGINE_MAX_DEVICES)
            n = ENGINE_MAX_DEVICES;
        for (int k = 0; k < n; k++)
            c->devices[k] = k;
        c->n_devices = n;
        if (n == 0)
            return errbuf_set(err, errlen, -EINVAL, "--devices all: %s sees no device", name);
    }
    if (c->n_devices <= 0) {
        e->n_dev = 1;
    } else {
        e->n_dev = (unsigned)c->n_devices;
    }
    for (int k = 0; k < c->n_inject; k++) {
        bool found = c->inject[k].dev < 0;
        for (unsigned i = 0; i < e->n_dev && !found; i++)
            found = (c->n_devices > 0 ? c->devices[i] : c->device) == c->inject[k].dev;
        char spec[64];
        trace_inject_format(&c->inject[k], spec, sizeof(spec));
        if (!found)
            return errbuf_set(err, errlen, -EINVAL, "--inject %s: device %d does not train", spec,
                              c->inject[k].dev);
        if (c->inject[k].kind == TRACE_FAULT_DROP && e->n_dev < 2)
            return errbuf_set(err, errlen, -EINVAL,
                              "--inject %s: a device can leave only a run of several", spec);
    }
    return 0;
}

/* What --alloc-conf asks for that cannot act on this device, said once rather than ignored. */
static void engine_alloc_notes(struct engine *e, const struct compute *c) {
    const struct mem_conf *a = &e->conf.alloc;
    struct mem_stats st;
    mem_pool_stats(c->pool, &st);
    if (a->expandable_segments && !mem_pool_expandable(c->pool))
        engine_log(e, SEV_WARNING,
                   "alloc-conf: expandable_segments: the %s backend cannot map device memory "
                   "piecewise here; segments stay fixed",
                   c->ops->name);
    if (a->memory_fraction > 0.0 && !st.limit_bytes)
        engine_log(e, SEV_WARNING,
                   "alloc-conf: per_process_memory_fraction: the device's memory is not known; "
                   "no limit");
    else if (a->gc_threshold > 0.0 && !st.limit_bytes)
        engine_log(e, SEV_WARNING,
                   "alloc-conf: garbage_collection_threshold acts only under a memory limit, as "
                   "in PyTorch: add per_process_memory_fraction:F");
    if (st.limit_bytes)
        engine_log(e, SEV_INFO, "memory pool limit %.0f MiB (per_process_memory_fraction %g)",
                   (double)st.limit_bytes / 1048576.0, a->memory_fraction);
}

static int engine_open_dev(struct engine *e, unsigned rank, char *err, size_t errlen) {
    struct engine_dev *d = calloc(1, sizeof(*d));
    if (!d)
        return errbuf_set(err, errlen, -ENOMEM, "out of memory");
    e->dev[rank] = d;
    d->e = e;
    d->rank = (unsigned)rank;
    d->s.start_ns = mono_now_ns();
    d->s.phase = PHASE_COUNT;
    d->s.epochs = e->conf.epochs;
    d->s.rank = (uint16_t)rank;
    d->s.n_ranks = (uint16_t)e->n_dev;
    int dev = e->conf.n_devices > 0 ? e->conf.devices[rank] : e->conf.device;
    d->s.device = (unsigned)dev;
    int rc = snap_create(&d->snap, sizeof(struct engine_snap));
    if (rc != 0)
        return errbuf_set(err, errlen, rc, "out of memory");
    struct compute_conf cc = {
        .device = dev, .threads = e->conf.threads, .alloc = e->conf.alloc, .trace = e->trace};
    char notice[512];
    /* every device takes the backend the first one got: one "auto" fallback, said once */
    const char *backend = rank == 0 ? e->conf.backend : engine_dev0(e)->c->ops->name;
    rc = compute_open(backend, &cc, &d->c, notice, sizeof(notice), err, errlen);
    if (rc != 0)
        return rc;
    if (notice[0] && rank == 0)
        engine_log(e, SEV_WARNING, "%s", notice);
    if (rank == 0)
        engine_alloc_notes(e, d->c);
    snprintf(d->s.backend, sizeof(d->s.backend), "%s", d->c->ops->name);
    d->s.dev = d->c->info;
    return 0;
}

static int engine_open_backend(struct engine *e, char *err, size_t errlen) {
    int rc = engine_device_list(e, err, errlen);
    if (rc != 0)
        return rc;
    int top = e->conf.device;
    for (int i = 0; i < e->conf.n_devices; i++)
        top = e->conf.devices[i] > top ? e->conf.devices[i] : top;
    if ((rc = trace_create(&e->trace, e->events, (unsigned)top + 1)) != 0)
        return errbuf_set(err, errlen, rc, "cannot create the tracer: %s", strerror(-rc));
    for (unsigned r = 0; r < e->n_dev; r++)
        if ((rc = engine_open_dev(e, r, err, errlen)) != 0)
            return rc;
    if (e->n_dev > 1 && (rc = engine_group_open(e, err, errlen)) != 0)
        return rc;
    engine_arm_faults(e);
    return 0;
}

/* A crash mid-write leaves "<name>.rsmodel.tmp.<pid>" (or the metadata's) beside the
 * checkpoint: remove those whose writer is gone, saying so. */
static void engine_sweep_stale(struct engine *e) {
    char prefix[ENGINE_PATH_MAX], err[256];
    static const char *const suffixes[] = {".rsmodel", "_metadata.json", ".safetensors"};
    for (size_t k = 0; k < sizeof(suffixes) / sizeof(suffixes[0]); k++) {
        snprintf(prefix, sizeof(prefix), "%s%s", e->conf.name, suffixes[k]);
        int n = afile_sweep_stale(e->conf.output_dir, prefix, err, sizeof(err));
        if (n > 0)
            engine_log(e, SEV_INFO, "removed %d stale %s.tmp.* file%s (a write cut short)", n,
                       prefix, n == 1 ? "" : "s");
    }
}

/* The checkpoint's files are replaced by rename, so a link, a FIFO or a file planted at their
 * paths is replaced and never written through; a directory there cannot be, and would fail
 * every checkpoint of the run: refused now, before any work. */
static int engine_check_ckpt_paths(const struct engine *e, char *err, size_t errlen) {
    static const char *const suffixes[] = {".rsmodel", "_metadata.json", ".safetensors",
                                           "_best.rsmodel"};
    for (size_t k = 0; k < sizeof(suffixes) / sizeof(suffixes[0]); k++) {
        char path[ENGINE_PATH_MAX + 160];
        struct stat st;
        snprintf(path, sizeof(path), "%s/%s%s", e->conf.output_dir, e->conf.name, suffixes[k]);
        if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode))
            return errbuf_set(err, errlen, -EISDIR,
                              "%s: a directory is there, not a regular file: left as it is (the "
                              "checkpoint goes there)",
                              path);
    }
    return 0;
}

/* An output directory anyone can write without the sticky bit lets them replace (rename over)
 * its checkpoints: said loudly, once. */
static void engine_check_output_dir(struct engine *e) {
    struct stat st;
    if (stat(e->conf.output_dir, &st) == 0 && (st.st_mode & S_IWOTH) && !(st.st_mode & S_ISVTX))
        engine_log(e, SEV_WARNING,
                   "%s is writable by every user and has no sticky bit: anyone can replace its "
                   "checkpoints; train into a directory of your own (--output DIR)",
                   e->conf.output_dir);
}

int engine_create(struct engine **out, const struct engine_conf *conf, struct evring *events,
                  char *err, size_t errlen) {
    int rc = engine_conf_validate(conf, err, errlen);
    if (rc != 0)
        return rc;
    struct engine *e = calloc(1, sizeof(*e));
    if (!e)
        return -ENOMEM;
    e->conf = *conf;
    e->events = events;
    atomic_init(&e->chunk_bars, conf->chunk_bars);
    e->vpoc_logged_chunk = -1;
    e->start_wall_ns = mono_wall_ns();
    pthread_mutex_init(&e->mu, NULL);
    pthread_cond_init(&e->cv, NULL);
    data_series_init(&e->ds);
    rc = evring_create(&e->cmds, ENGINE_CMD_CAP);
    if (rc != 0) {
        errbuf_set(err, errlen, rc, "out of memory");
        goto fail;
    }
    if ((rc = engine_open_backend(e, err, errlen)) != 0)
        goto fail;
    if ((rc = engine_data_load(e, err, errlen)) != 0)
        goto fail;
    if ((rc = engine_resume_load(e, err, errlen)) != 0)
        goto fail;
    /* checkpoints are written after every epoch: a directory that cannot exist fails now */
    if ((rc = afile_mkdirs(e->conf.output_dir, err, errlen)) != 0 ||
        (rc = afile_probe_dir(e->conf.output_dir, err, errlen)) != 0 ||
        (rc = engine_check_ckpt_paths(e, err, errlen)) != 0) {
        rc = -EINVAL;
        goto fail;
    }
    engine_sweep_stale(e);
    engine_check_output_dir(e);
    for (unsigned r = 0; r < e->n_dev; r++)
        engine_publish(e->dev[r], true);
    *out = e;
    return 0;
fail:
    engine_destroy(e);
    return rc;
}
