/* A watched rank's hang diagnosis: the verdict table, its rules, its text, and the look at a
 * process's threads. */
#define _GNU_SOURCE /* strnlen */
#include "backend/run/watch_diag.h"

#include "backend/core/mono.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Each verdict's title and what helps with it, in the order of enum diag_verdict. */
static const struct diag_verdict_info {
    const char *title;
    const char *helps[4];
} diag_verdicts[DIAG_VERDICT_COUNT] = {
    [DIAG_GPU_FAILED] = {"the GPU failed",
                         {"the kernel log's failure is in the events (k opens it): a ring timeout "
                          "or a reset loses the work in flight, so restart from the last "
                          "checkpoint",
                          "its remedy (in its details) says what the driver needs"}},
    [DIAG_PEER_EXITED] = {"a peer rank has exited",
                          {"the exited rank's own output says why (an exception, out of memory, a "
                           "signal)",
                           "the waiting ranks will not return: stop them and restart from the "
                           "last checkpoint (torchrun --max-restarts does it)",
                           "init_process_group(timeout=...) and, with NCCL, "
                           "TORCH_NCCL_ASYNC_ERROR_HANDLING=1 make a dead peer raise instead of "
                           "hang"}},
    [DIAG_PEER_BEHIND] = {"a peer rank has not entered the collective",
                          {"the late rank's Python stack (below) is the line the others wait for",
                           "every rank must issue the same collectives in the same order: a "
                           "collective under `if rank == 0`, uneven batches per rank "
                           "(DistributedSampler(drop_last=True), or Join) or a stalled data "
                           "loader on one rank hangs the rest",
                           "host work on one rank (a checkpoint, an evaluation) while the others "
                           "go on: every rank does it, or a barrier after it"}},
    [DIAG_IN_DRIVER] = {"stuck in the GPU driver",
                        {"a thread in D state waits in the kernel: as root, cat "
                         "/proc/PID/task/*/stack and the kernel log say where",
                         "a GPU reset (amdgpu_gpu_recover in debugfs, nvidia-smi -r) or a reboot "
                         "may be the only way out"}},
    [DIAG_GPU_BUSY] = {"a GPU kernel that does not finish",
                       {"a kernel runs far longer than it should or never ends: a loop that does "
                        "not end, streams waiting on each other, a communication kernel waiting "
                        "for a peer that never sends",
                        "NCCL_DEBUG=INFO (RCCL too) says which collective; CUDA_LAUNCH_BLOCKING=1 "
                        "or AMD_SERIALIZE_KERNEL=3 finds the launch",
                        "on AMD the ring fences in the GPU's details show whether the GPU still "
                        "moves"}},
    [DIAG_SPINNING] = {"spinning on the host with the GPU idle",
                       {"the runtime busy-waits for work that was never submitted or an event "
                        "that never fires: CUDA_LAUNCH_BLOCKING=1 / AMD_SERIALIZE_KERNEL=3 find "
                        "the call",
                        "a blocking sync mode (cudaDeviceScheduleBlockingSync, "
                        "hipDeviceScheduleBlockingSync) lets the thread sleep while it waits"}},
    [DIAG_WAITING] = {"waiting, with nothing in flight to wait for",
                      {"the GPU is idle and the threads sleep: a host-side wait (a lock, a queue, "
                       "a data-loader worker, a peer on another host)",
                       "the Python stack below shows the line; py-spy dump shows every thread"}},
    [DIAG_UNKNOWN] = {"not enough evidence",
                      {"the Python stack (below) and the kernel log (k) are what is left",
                       "py-spy dump --native PID shows where every thread is"}},
};

const char *diag_verdict_title(enum diag_verdict v) {
    return v < DIAG_VERDICT_COUNT ? diag_verdicts[v].title : "?";
}

int diag_stat_parse(const char *line, char *state, char *comm, size_t commlen, uint64_t *ticks) {
    const char *open = strchr(line, '('), *close = strrchr(line, ')');
    if (!open || !close || close < open || close[1] != ' ' || !close[2])
        return -EINVAL;
    size_t n = (size_t)(close - open - 1);
    if (commlen) {
        n = n < commlen - 1 ? n : commlen - 1;
        memcpy(comm, open + 1, n);
        comm[n] = '\0';
    }
    *state = close[2];
    /* fields after the state: ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt
     * utime stime: utime is the 11th after it */
    const char *p = close + 3;
    unsigned long long v[12];
    for (int k = 0; k < 12; k++) {
        char *end;
        errno = 0;
        v[k] = strtoull(p, &end, 10);
        if (end == p || errno)
            return -EINVAL;
        p = end;
        if (*p == ' ')
            p++;
    }
    *ticks = v[10] + v[11];
    return 0;
}

/* The first line of a small file into buf ("" when unreadable); its length. */
static size_t diag_read_line(const char *path, char *buf, size_t n) {
    FILE *f = fopen(path, "re");
    buf[0] = '\0';
    if (!f)
        return 0;
    if (!fgets(buf, (int)n, f))
        buf[0] = '\0';
    fclose(f);
    size_t l = strlen(buf);
    while (l && (buf[l - 1] == '\n' || buf[l - 1] == ' '))
        buf[--l] = '\0';
    return l;
}

/* The wchan most sleeping threads wait in: counted over a few distinct names. */
struct diag_wchans {
    char name[8][32];
    unsigned count[8], n;
};

static void diag_wchan_count(struct diag_wchans *w, const char *name) {
    if (!name[0] || strcmp(name, "0") == 0)
        return;
    for (unsigned k = 0; k < w->n; k++)
        if (strcmp(w->name[k], name) == 0) {
            w->count[k]++;
            return;
        }
    if (w->n < 8) {
        snprintf(w->name[w->n], sizeof(w->name[0]), "%s", name);
        w->count[w->n++] = 1;
    }
}

static uint64_t diag_prev_ticks(const struct diag_proc *prev, int32_t tid, bool *found) {
    for (unsigned k = 0; prev && k < prev->n_ticks; k++)
        if (prev->tids[k] == tid) {
            *found = true;
            return prev->ticks[k];
        }
    *found = false;
    return 0;
}

void diag_proc_read(const char *proc_root, pid_t pid, const struct diag_proc *prev,
                    struct diag_proc *out) {
    memset(out, 0, sizeof(*out));
    out->t_ns = mono_now_ns();
    char dir[200];
    snprintf(dir, sizeof(dir), "%.160s/%d/task", proc_root, (int)pid);
    DIR *d = pid > 0 ? opendir(dir) : NULL;
    if (!d) {
        snprintf(out->why, sizeof(out->why), "%.40s: %s", dir,
                 pid > 0 ? strerror(errno) : "no pid");
        return;
    }
    out->read = true;
    struct diag_wchans wch = {0};
    long hz = sysconf(_SC_CLK_TCK);
    double span_s =
        prev && prev->read && out->t_ns > prev->t_ns ? (double)(out->t_ns - prev->t_ns) / 1e9 : 0;
    uint64_t sum = 0, sum_prev = 0;
    bool all_known = span_s > 0.05;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] < '0' || de->d_name[0] > '9')
            continue;
        char path[512], line[1024], comm[16], wchan[32], state;
        uint64_t ticks;
        snprintf(path, sizeof(path), "%s/%s/stat", dir, de->d_name);
        if (!diag_read_line(path, line, sizeof(line)) ||
            diag_stat_parse(line, &state, comm, sizeof(comm), &ticks) != 0)
            continue;
        snprintf(path, sizeof(path), "%s/%s/wchan", dir, de->d_name);
        diag_read_line(path, wchan, sizeof(wchan));
        int32_t tid = (int32_t)atoi(de->d_name);
        out->n_threads++;
        if (state == 'R')
            out->running++;
        else if (state == 'S')
            out->sleeping++, diag_wchan_count(&wch, wchan);
        else if (state == 'D') {
            out->disk++;
            if (!out->disk_wchan[0])
                snprintf(out->disk_wchan, sizeof(out->disk_wchan), "%s", wchan);
        } else
            out->other++;
        if (out->n_ticks < DIAG_THREADS) {
            out->tids[out->n_ticks] = tid;
            out->ticks[out->n_ticks++] = ticks;
        }
        bool found;
        uint64_t was = diag_prev_ticks(prev, tid, &found);
        if (tid == (int32_t)pid) {
            out->main_state = state;
            snprintf(out->main_wchan, sizeof(out->main_wchan), "%s",
                     state == 'R' || strcmp(wchan, "0") == 0 ? "" : wchan);
            if (found && span_s > 0.05 && hz > 0)
                out->main_pct =
                    (double)(ticks - (ticks > was ? was : ticks)) / (double)hz / span_s * 100;
        }
        sum += ticks;
        sum_prev += found ? was : ticks; /* a new thread counts from now */
        if (found && span_s > 0.05 && hz > 0) {
            double pct = (double)(ticks - (ticks > was ? was : ticks)) / (double)hz / span_s * 100;
            if (pct > out->top_thread_pct) {
                out->top_thread_pct = pct;
                snprintf(out->top_thread, sizeof(out->top_thread), "%s", comm);
            }
        }
    }
    closedir(d);
    if (all_known && hz > 0) {
        out->has_cpu = true;
        out->cpu_pct = (double)(sum > sum_prev ? sum - sum_prev : 0) / (double)hz / span_s * 100;
    }
    unsigned best = 0;
    for (unsigned k = 0; k < wch.n; k++)
        if (wch.count[k] > wch.count[best])
            best = k;
    if (wch.n)
        snprintf(out->top_wchan, sizeof(out->top_wchan), "%s", wch.name[best]);
}

static bool diag_any_peer(const struct diag_in *in, bool exited) {
    for (unsigned k = 0; k < in->n_peers; k++)
        if (exited ? in->peers[k].exited : in->peers[k].not_entered && !in->peers[k].exited)
            return true;
    return false;
}

enum diag_verdict diag_judge(const struct diag_in *in) {
    const struct diag_proc *p = in->proc && in->proc->read ? in->proc : NULL;
    bool gpu_idle = in->has_busy && in->busy_pct < 10;
    if (in->kmsg_failures)
        return DIAG_GPU_FAILED;
    if (in->collective && diag_any_peer(in, true))
        return DIAG_PEER_EXITED;
    if (in->collective && diag_any_peer(in, false))
        return DIAG_PEER_BEHIND;
    if (p && p->disk)
        return DIAG_IN_DRIVER;
    if (in->has_busy && in->busy_pct >= 90)
        return DIAG_GPU_BUSY;
    if (p && p->has_cpu && p->top_thread_pct >= 80 && (gpu_idle || !in->has_busy))
        return DIAG_SPINNING;
    if (p && p->has_cpu && p->running == 0 && p->top_thread_pct < 20 && (gpu_idle || !in->has_busy))
        return DIAG_WAITING;
    return DIAG_UNKNOWN;
}

struct diag_buf {
    char *s;
    size_t n, len;
};

static void diag_put(struct diag_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void diag_put(struct diag_buf *b, const char *fmt, ...) {
    if (b->len + 1 >= b->n)
        return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(b->s + b->len, b->n - b->len, fmt, ap);
    va_end(ap);
    if (k > 0)
        b->len = b->len + (size_t)k < b->n ? b->len + (size_t)k : b->n - 1;
}

/* The first peer the verdict is about: not entered (or exited, for PEER_EXITED). */
const struct diag_peer *diag_culprit(const struct diag_in *in, enum diag_verdict v) {
    if (v != DIAG_PEER_EXITED && v != DIAG_PEER_BEHIND)
        return NULL;
    for (unsigned k = 0; k < in->n_peers; k++)
        if (v == DIAG_PEER_EXITED ? in->peers[k].exited
                                  : in->peers[k].not_entered && !in->peers[k].exited)
            return &in->peers[k];
    return NULL;
}

static const struct diag_peer *diag_first_peer(const struct diag_in *in, bool exited) {
    for (unsigned k = 0; k < in->n_peers; k++)
        if (exited ? in->peers[k].exited : in->peers[k].not_entered && !in->peers[k].exited)
            return &in->peers[k];
    return NULL;
}

void diag_cause(const struct diag_in *in, enum diag_verdict v, char *out, size_t n) {
    const struct diag_peer *p = NULL;
    if (v == DIAG_PEER_EXITED || v == DIAG_PEER_BEHIND)
        p = diag_first_peer(in, v == DIAG_PEER_EXITED);
    if (p)
        snprintf(out, n, "rank %d %s (%s)", p->rank,
                 v == DIAG_PEER_EXITED ? "has exited" : "has not entered it", p->doing);
    else if (v == DIAG_GPU_FAILED)
        snprintf(out, n, "the GPU failed: %s", in->kmsg_first);
    else
        snprintf(out, n, "%s", diag_verdict_title(v));
}

static void diag_evidence_proc(struct diag_buf *b, const char *who, const struct diag_proc *p) {
    if (!p) {
        diag_put(b, "\n  - %s's threads: not read", who);
        return;
    }
    if (!p->read) {
        diag_put(b, "\n  - %s's threads: not readable (%s)", who, p->why);
        return;
    }
    diag_put(b, "\n  - %s's threads: %u (%u running, %u sleeping%s%s, %u in D state%s%s)", who,
             p->n_threads, p->running, p->sleeping, p->top_wchan[0] ? ", most in " : "",
             p->top_wchan, p->disk, p->disk_wchan[0] ? " in " : "", p->disk_wchan);
    if (p->has_cpu)
        diag_put(b, "; CPU %.0f%%, busiest thread %s at %.0f%%", p->cpu_pct,
                 p->top_thread[0] ? p->top_thread : "-", p->top_thread_pct);
}

size_t diag_format(const struct diag_in *in, enum diag_verdict v, char *out, size_t n) {
    struct diag_buf b = {out, n, 0};
    if (n)
        out[0] = '\0';
    char cause[256];
    diag_cause(in, v, cause, sizeof(cause));
    diag_put(&b, "Verdict: %s\n", diag_verdict_title(v));
    if (strcmp(cause, diag_verdict_title(v)) != 0)
        diag_put(&b, "Cause: %s\n", cause);
    diag_put(&b, "Where: %s in %s for %.1f s\n\nEvidence:", in->who, in->call, in->age_s);
    for (unsigned k = 0; k < in->n_peers; k++) {
        const struct diag_peer *p = &in->peers[k];
        diag_put(&b, "\n  - rank %d %s: %s", p->rank,
                 p->exited        ? "has exited"
                 : p->not_entered ? "has not entered it"
                                  : "waits in it too",
                 p->doing);
    }
    if (in->missing)
        diag_put(&b, "\n  - %u rank%s of the group %s not attached here (not seen)", in->missing,
                 in->missing == 1 ? "" : "s", in->missing == 1 ? "is" : "are");
    char who[sizeof(in->who)];
    snprintf(who, sizeof(who), "%s", in->who);
    char *paren = strstr(who, " (");
    if (paren)
        *paren = '\0'; /* "rank 0" */
    diag_evidence_proc(&b, who, in->proc);
    if (in->has_gpu) {
        diag_put(&b, "\n  - %s:", in->gpu);
        if (in->has_busy)
            diag_put(&b, " busy %.0f%%", in->busy_pct);
        if (in->has_power)
            diag_put(&b, "%s %.0f W", in->has_busy ? "," : "", in->power_w);
        if (!in->has_busy && !in->has_power)
            diag_put(&b, " no busy or power reading");
    } else
        diag_put(&b, "\n  - %s's GPU: not known to telemetry (a CPU job, or no GPU telemetry)",
                 who);
    if (in->kmsg_failures)
        diag_put(&b, "\n  - kernel log: %u GPU failure%s since the call began, the first: %s",
                 in->kmsg_failures, in->kmsg_failures == 1 ? "" : "s", in->kmsg_first);
    else
        diag_put(&b, "\n  - kernel log: no GPU failure since the call began");
    diag_put(&b, "\n\nWhat helps:");
    for (unsigned k = 0; k < 4 && v < DIAG_VERDICT_COUNT && diag_verdicts[v].helps[k]; k++)
        diag_put(&b, "\n  - %s", diag_verdicts[v].helps[k]);
    return b.len;
}
