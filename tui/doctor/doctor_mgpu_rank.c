/* ringside doctor: the work of one rank of the multi-GPU rows, on the rank's own thread: its
 * device opened through the compute backend, its part in a group's init and teardown, and an
 * all-reduce whose every element is checked against the exact sum, then timed. */
#include "backend/compute/compute.h"
#include "backend/core/errbuf.h"
#include "backend/core/mono.h"
#include "tui/doctor/doctor_mgpu_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

float doctor_mgpu_value(unsigned r, size_t i) {
    return (float)((i * 7 + r * 13) % 251 + r + 1);
}

void doctor_mgpu_job_count(struct doctor_mgpu_rank *k) {
    k->rc = compute_device_count(k->run->opts->backend, &k->count, k->err, sizeof(k->err));
}

void doctor_mgpu_job_peer(struct doctor_mgpu_rank *k) {
    k->rc = compute_peer_access(k->run->opts->backend, (int)k->rank, k->peer, &k->can, k->err,
                                sizeof(k->err));
}

void doctor_mgpu_job_lib(struct doctor_mgpu_rank *k) {
    k->run->lib_rc = comm_lib_probe(k->run->opts->comm_lib, &k->run->lib, k->err, sizeof(k->err));
}

/* The rank's device, opened once. */
static int doctor_mgpu_open(struct doctor_mgpu_rank *k) {
    if (k->c)
        return 0;
    struct compute_conf cc = {.device = (int)k->rank, .threads = 1};
    mem_conf_default(&cc.alloc);
    char notice[256], why[400];
    int rc =
        compute_open(k->run->opts->backend, &cc, &k->c, notice, sizeof(notice), why, sizeof(why));
    if (rc != 0)
        return errbuf_set(k->err, sizeof(k->err), rc, "device %u did not open: %s", k->rank, why);
    return 0;
}

/* The rehearsal of a rank that never joins: wait until the row gives up on it. */
static void doctor_mgpu_stall(struct doctor_mgpu_rank *k) {
    if ((int)k->rank != k->run->opts->stall_rank)
        return;
    pthread_mutex_lock(&k->w.mu);
    while (!k->run->give_up && !k->w.stop)
        pthread_cond_wait(&k->w.cv, &k->w.mu);
    pthread_mutex_unlock(&k->w.mu);
}

/* A failure of the rank's own (not the group's) fails the group, so no peer waits for it. */
static int doctor_mgpu_fail(struct doctor_mgpu_rank *k, int rc) {
    if (rc != 0 && comm_failed(k->run->comm) == 0)
        comm_abort(k->run->comm);
    return rc;
}

void doctor_mgpu_job_join_leave(struct doctor_mgpu_rank *k) {
    struct comm *g = k->run->comm;
    k->a_ns = k->b_ns = 0;
    k->rc = doctor_mgpu_fail(k, doctor_mgpu_open(k));
    if (k->rc != 0)
        return;
    doctor_mgpu_stall(k);
    uint64_t t0 = mono_now_ns();
    k->rc = comm_init(g, k->grank, NULL, k->timeout_ns, k->err, sizeof(k->err));
    uint64_t t1 = mono_now_ns();
    char err[512];
    int rc = comm_destroy(g, k->grank, k->timeout_ns, err, sizeof(err)); /* releases, too */
    k->a_ns = t1 - t0;
    k->b_ns = mono_now_ns() - t1;
    if (k->rc == 0 && rc != 0) {
        k->rc = rc;
        memcpy(k->err, err, sizeof(err));
    }
}

/* A device buffer and its host copy of bytes. */
static int doctor_mgpu_buffers(struct doctor_mgpu_rank *k, size_t bytes) {
    if (k->buf_bytes == bytes)
        return 0;
    compute_free(k->c, k->buf);
    free(k->host);
    k->buf = NULL;
    k->buf_bytes = 0;
    k->host = malloc(bytes);
    if (!k->host)
        return errbuf_set(k->err, sizeof(k->err), -ENOMEM,
                          "device %u: no host memory for %zu bytes", k->rank, bytes);
    int rc = compute_alloc(k->c, bytes, &k->buf, k->err, sizeof(k->err));
    if (rc == 0)
        k->buf_bytes = bytes;
    return rc;
}

/* A device call's failure, with the backend's text. */
static int doctor_mgpu_dev_err(struct doctor_mgpu_rank *k, int rc, const char *what) {
    return errbuf_set(k->err, sizeof(k->err), rc, "device %u: %s: %s", k->rank, what,
                      k->c->ops->strerror(rc));
}

/* The all-reduce, done on the device: the collective runs on the library's stream of the
 * device, which a device-wide synchronize covers. */
static int doctor_mgpu_reduce_once(struct doctor_mgpu_rank *k, size_t count) {
    int rc = comm_allreduce(k->run->comm, k->grank, k->buf, count, COMM_F32, COMM_RED_SUM, NULL,
                            k->timeout_ns, k->err, sizeof(k->err));
    if (rc != 0)
        return rc;
    rc = compute_sync(k->c, SYNC_OP_DEVICE);
    return rc ? doctor_mgpu_dev_err(k, rc, "synchronize after the all-reduce") : 0;
}

/* Upload the rank's values, reduce, read back and compare with the exact sum. */
static int doctor_mgpu_check(struct doctor_mgpu_rank *k) {
    const struct compute_ops *ops = k->c->ops;
    size_t count = k->bytes / sizeof(float);
    for (size_t i = 0; i < count; i++)
        k->host[i] = doctor_mgpu_value(k->grank, i);
    int rc = ops->copy_h2d(k->c, k->buf, k->host, k->bytes);
    rc = rc ? rc : compute_sync(k->c, SYNC_OP_STREAM);
    if (rc != 0)
        return doctor_mgpu_dev_err(k, rc, "upload");
    rc = doctor_mgpu_reduce_once(k, count);
    /* every rank's sum is complete (a library may reduce as the last rank arrives) */
    rc = rc ? rc : comm_barrier(k->run->comm, k->grank, k->timeout_ns, k->err, sizeof(k->err));
    if (rc != 0)
        return rc;
    rc = ops->copy_d2h(k->c, k->host, k->buf, k->bytes);
    rc = rc ? rc : compute_sync(k->c, SYNC_OP_STREAM);
    if (rc != 0)
        return doctor_mgpu_dev_err(k, rc, "read-back");
    for (size_t i = 0; i < count; i++) {
        float want = 0;
        for (unsigned r = 0; r < k->run->members; r++)
            want += doctor_mgpu_value(r, i);
        if (k->host[i] != want && k->wrong++ == 0) {
            k->first_bad = i;
            k->got = k->host[i];
            k->want = want;
        }
    }
    return 0;
}

/* k->runs all-reduces queued back to back, one synchronize at the end (as nccl-tests time
 * them): the time per all-reduce into k->a_ns. */
static int doctor_mgpu_time(struct doctor_mgpu_rank *k) {
    size_t count = k->bytes / sizeof(float);
    int rc = comm_barrier(k->run->comm, k->grank, k->timeout_ns, k->err, sizeof(k->err));
    uint64_t t0 = mono_now_ns();
    for (int i = 0; rc == 0 && i < k->runs; i++)
        rc = comm_allreduce(k->run->comm, k->grank, k->buf, count, COMM_F32, COMM_RED_SUM, NULL,
                            k->timeout_ns, k->err, sizeof(k->err));
    if (rc != 0)
        return rc;
    rc = compute_sync(k->c, SYNC_OP_DEVICE);
    if (rc != 0)
        return doctor_mgpu_dev_err(k, rc, "synchronize after the all-reduces");
    k->a_ns = (mono_now_ns() - t0) / (uint64_t)(k->runs > 0 ? k->runs : 1);
    return 0;
}

void doctor_mgpu_job_reduce(struct doctor_mgpu_rank *k) {
    struct comm *g = k->run->comm;
    k->wrong = 0;
    k->a_ns = 0;
    int rc = k->join ? doctor_mgpu_open(k) : 0;
    rc = rc ? rc : doctor_mgpu_buffers(k, k->bytes);
    if (rc == 0 && k->join) {
        doctor_mgpu_stall(k);
        rc = comm_init(g, k->grank, NULL, k->timeout_ns, k->err, sizeof(k->err));
        k->peer_bytes = rc == 0 ? comm_peer_bytes(g, k->grank) : 0;
    } else {
        rc = doctor_mgpu_fail(k, rc);
    }
    rc = rc ? rc : doctor_mgpu_fail(k, doctor_mgpu_check(k));
    rc = rc ? rc : doctor_mgpu_fail(k, doctor_mgpu_time(k));
    if (k->leave || rc != 0) {
        char err[512];
        int r2 = comm_destroy(g, k->grank, k->timeout_ns, err, sizeof(err));
        if (rc == 0 && r2 != 0)
            memcpy(k->err, err, sizeof(err));
        rc = rc ? rc : r2;
    }
    k->rc = rc;
}

void doctor_mgpu_rank_fini(struct doctor_mgpu_rank *k) {
    if (k->c)
        compute_free(k->c, k->buf);
    free(k->host);
    compute_close(k->c);
    k->c = NULL;
    k->buf = NULL;
    k->host = NULL;
    k->buf_bytes = 0;
}
