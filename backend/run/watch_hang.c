/* The hang watch of `ringside watch`: every job's calls in flight graded against --sync-slow
 * and --sync-timeout as the loop's watchdog grades its own (SLOW, HANG, back to ok), the ranks
 * of a collective lined up by its number so the alert names the ranks that have not entered it,
 * each alert's diagnosis (watch_diag) with the Python stacks the jobs send when asked, and the
 * hang bundle. One thread (the dashboard's, in the source's drain). */
#define _GNU_SOURCE /* strnlen */
#include "backend/core/mono.h"
#include "backend/record/replay_snap.h"
#include "backend/run/run.h"
#include "backend/run/source_watch_internal.h"

#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define WATCH_LOOK_NS      100000000ull /* ten looks a second, as the loop's watchdog */
#define WATCH_STACK_FRAMES 48

static const char watch_stack_cmd[] = "{\"type\":\"command\",\"cmd\":\"stack\",\"arg\":0}";

/* The job's call as the alerts name it: "allreduce #57" or "torch.cuda.synchronize". */
static void watch_call_label(const struct watch_call *c, char *out, size_t n) {
    if (c->coll >= 0 && c->cseq)
        snprintf(out, n, "%s #%llu", ev_coll_op_name((unsigned)c->coll),
                 (unsigned long long)c->cseq);
    else
        snprintf(out, n, "%s", c->name[0] ? c->name : "a call");
}

/* The other ranks of k's process group that are shown (open or ended): the same world size
 * and, where both say where their group met, the same place (another job's ranks are not). */
static bool watch_peer_of(const struct watch *w, unsigned k, unsigned p) {
    const struct watch_job *a = &w->jobs[k], *b = &w->jobs[p];
    return p != k && b->have_run && a->rank >= 0 && b->rank >= 0 && a->rank != b->rank &&
           (!a->world_size || !b->world_size || a->world_size == b->world_size) &&
           (!a->group_id[0] || !b->group_id[0] || strcmp(a->group_id, b->group_id) == 0);
}

/* Whether peer p has reached the collective c of another rank: by number when both number
 * them, else by being in a collective of the same kind now. */
static bool watch_entered(const struct watch_job *p, const struct watch_call *c) {
    if (c->cseq && c->group == 0)
        return p->cseq_entered >= c->cseq;
    for (unsigned i = 0; i < WATCH_CALLS; i++)
        if (p->calls[i].used && p->calls[i].coll == c->coll)
            return true;
    return false;
}

/* A telemetry GPU of job j: the one whose process list has its pid, else (a process list
 * that does not show it: another PID namespace, no permission) the one at its device index
 * when it runs on a GPU (*by_index then set). */
static const struct tele_gpu *watch_gpu(const struct tele_snap *t, const struct watch_job *j,
                                        bool *by_index) {
    *by_index = false;
    for (unsigned g = 0; t && g < t->n_gpus; g++)
        for (int i = 0; i < t->gpus[g].n_procs; i++)
            if (t->gpus[g].procs[i].pid == (int32_t)j->pid)
                return &t->gpus[g];
    const char *be = j->snap->snaps[0].backend;
    if (t && j->dev < t->n_gpus && be[0] && !strstr(be, "cpu")) {
        *by_index = true;
        return &t->gpus[j->dev];
    }
    return NULL;
}

static void watch_cat(char *buf, size_t n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void watch_cat(char *buf, size_t n, const char *fmt, ...) {
    size_t len = strnlen(buf, n);
    if (len + 1 >= n)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + len, n - len, fmt, ap);
    va_end(ap);
}

/* What a job's threads are doing, in a few words: "sleeping in hrtimer_nanosleep". */
static void watch_threads_words(const struct diag_proc *p, char *out, size_t n) {
    out[0] = '\0';
    if (!p->read)
        return;
    if (p->disk)
        snprintf(out, n, "a thread in D state%s%s", p->disk_wchan[0] ? " in " : "", p->disk_wchan);
    else if (p->main_state == 'S' || p->main_state == 'D')
        snprintf(out, n, "its main thread %s%s%s", p->main_state == 'S' ? "sleeping" : "in D state",
                 p->main_wchan[0] ? " in " : "", p->main_wchan);
    else if (p->main_state == 'R')
        snprintf(out, n, "its main thread running%s",
                 p->has_cpu && p->main_pct >= 50 ? " flat out" : "");
    else if (p->has_cpu && p->top_thread_pct >= 80)
        snprintf(out, n, "running at %.0f%% CPU (%s)", p->top_thread_pct, p->top_thread);
    else if (p->running == 0)
        snprintf(out, n, "sleeping%s%s", p->top_wchan[0] ? " in " : "", p->top_wchan);
    else
        snprintf(out, n, "%u of %u threads running", p->running, p->n_threads);
}

/* What peer p does instead of waiting in c: where its loop is, what it is in, its threads,
 * its innermost Python frame when a stack came since `since_ns`. */
static void watch_peer_doing(const struct watch_job *p, uint64_t now, uint64_t since_ns, char *out,
                             size_t n) {
    const struct engine_snap *s = &p->snap->snaps[0];
    out[0] = '\0';
    if (!p->open) {
        snprintf(out, n, "%s %.1f s ago", p->ended ? "ended" : "went away",
                 (double)(now > p->gone_ns ? now - p->gone_ns : 0) / 1e9);
        return;
    }
    const struct watch_call *in = NULL;
    for (unsigned c = 0; c < WATCH_CALLS; c++)
        if (p->calls[c].used && (!in || p->calls[c].inf.start_ns < in->inf.start_ns))
            in = &p->calls[c];
    if (in) {
        char label[64];
        watch_call_label(in, label, sizeof(label));
        snprintf(out, n, "in %s for %.1f s", label,
                 (double)(now > in->inf.start_ns ? now - in->inf.start_ns : 0) / 1e9);
    } else
        snprintf(out, n, "last in %s",
                 s->phase < PHASE_COUNT ? ev_phase_name(s->phase) : "no phase");
    watch_cat(out, n, ", epoch %d step %lld", s->epoch, (long long)s->step);
    if (p->cseq_done)
        watch_cat(out, n, ", last collective #%llu", (unsigned long long)p->cseq_done);
    char words[96];
    watch_threads_words(&p->proc, words, sizeof(words));
    if (words[0])
        watch_cat(out, n, "; %s", words);
    if (p->stack_top[0] && p->stack_ns >= since_ns)
        watch_cat(out, n, "; at %s", p->stack_top);
}

/* Join what is known of job k's call c into in. */
static void watch_diag_in(struct watch *w, unsigned k, const struct watch_call *c, uint64_t now,
                          uint64_t since_ns, struct diag_in *in) {
    struct watch_job *j = &w->jobs[k];
    memset(in, 0, sizeof(*in));
    char who[48];
    watch_who(j, who, sizeof(who));
    in->who[0] = '\0';
    watch_cat(in->who, sizeof(in->who), "%s (pid %d)", who, (int)j->pid);
    watch_call_label(c, in->call, sizeof(in->call));
    in->collective = c->coll >= 0;
    in->age_s = (double)(now > c->inf.start_ns ? now - c->inf.start_ns : 0) / 1e9;
    in->proc = &j->proc;
    struct tele *t = run_tele(w->run);
    const struct tele_snap *ts = t ? tele_snap_read(t, NULL) : NULL;
    bool by_index;
    const struct tele_gpu *g = watch_gpu(ts, j, &by_index);
    const char *pci = g ? g->pci : "";
    if (g) {
        in->has_gpu = true;
        in->gpu[0] = '\0';
        watch_cat(in->gpu, sizeof(in->gpu), "GPU %s%s", g->pci,
                  by_index ? " (its device index)" : "");
        if ((in->has_busy = g->src[TELE_F_BUSY] != 0))
            in->busy_pct = g->f[TELE_F_BUSY];
        if ((in->has_power = g->src[TELE_F_POWER] != 0))
            in->power_w = g->f[TELE_F_POWER];
        snprintf(j->snap->snaps[0].dev.pci, sizeof(j->snap->snaps[0].dev.pci), "%s", g->pci);
    }
    for (unsigned i = 0; i < w->kmsg_n; i++) {
        const struct watch_kmsg *m =
            &w->kmsg[(w->kmsg_head + WATCH_KMSG - w->kmsg_n + i) % WATCH_KMSG];
        if (m->t_ns < c->inf.start_ns || (pci[0] && m->pci[0] && strcasecmp(pci, m->pci) != 0))
            continue;
        if (in->kmsg_failures++ == 0)
            snprintf(in->kmsg_first, sizeof(in->kmsg_first), "%s", m->text);
    }
    if (!in->collective)
        return;
    unsigned attached = 1;
    for (unsigned p = 0; p < BRIDGE_MAX_JOBS && in->n_peers < DIAG_PEERS; p++) {
        if (!watch_peer_of(w, k, p))
            continue;
        const struct watch_job *pj = &w->jobs[p];
        struct diag_peer *d = &in->peers[in->n_peers++];
        attached++;
        d->rank = pj->rank;
        d->attached = true;
        d->exited = !pj->open;
        d->not_entered = !watch_entered(pj, c);
        watch_peer_doing(pj, now, since_ns, d->doing, sizeof(d->doing));
    }
    if (j->world_size > 0 && (unsigned)j->world_size > attached)
        in->missing = (unsigned)j->world_size - attached;
}

/* A fresh look at job k's threads (CPU figures against the one before). */
static void watch_look_proc(struct watch_job *j) {
    struct diag_proc *prev = malloc(sizeof(*prev));
    if (!prev)
        return;
    *prev = j->proc;
    diag_proc_read("/proc", j->pid, prev->read ? prev : NULL, &j->proc);
    free(prev);
}

/* Ask job k, and the peers of its collective c that have not entered it, for their stacks;
 * their threads are looked at too (the CPU figures then span until the alert). */
static void watch_ask_stacks(struct watch *w, unsigned k, struct watch_call *c) {
    c->stack_asked = true;
    for (unsigned p = 0; p < BRIDGE_MAX_JOBS; p++) {
        struct watch_job *pj = &w->jobs[p];
        bool mine = p == k;
        if (!pj->open ||
            !(mine || (c->coll >= 0 && watch_peer_of(w, k, p) && !watch_entered(pj, c))))
            continue;
        (void)bridge_send(w->b, p, watch_stack_cmd); /* a job not reading: no stack, said so */
        watch_look_proc(pj);
    }
}

/* The stacks of the note's jobs that came since it asked, after its diagnosis. */
static void watch_note_stacks(struct watch *w, struct watch_note *nt) {
    size_t len = nt->diag_len;
    nt->text[len] = '\0';
    for (unsigned i = 0; i < nt->n_jobs; i++) {
        const struct watch_job *j = &w->jobs[nt->jobs[i]];
        char who[48];
        watch_who(j, who, sizeof(who));
        if (j->stack[0] && j->stack_ns >= nt->asked_ns)
            watch_cat(nt->text, sizeof(nt->text),
                      "\n\nPython stack of %s (pid %d), taken %.1f s "
                      "into the call:\n%s",
                      who, (int)j->pid, (double)(j->stack_ns - nt->asked_ns) / 1e9, j->stack);
        else
            watch_cat(nt->text, sizeof(nt->text), "\n\nPython stack of %s (pid %d): %s", who,
                      (int)j->pid, j->open ? "asked for, not come yet" : "none (it is gone)");
    }
}

/* The alert's note: the diagnosis, then the stacks of k and its late peers. */
static struct watch_note *watch_note_add(struct watch *w, const struct ev *e, unsigned k,
                                         const struct watch_call *c, const struct diag_in *in,
                                         enum diag_verdict v, uint64_t asked_ns) {
    struct watch_note *nt = &w->notes[w->note_head];
    w->note_head = (w->note_head + 1) % WATCH_NOTES;
    memset(nt, 0, offsetof(struct watch_note, text));
    nt->t_ns = e->t_ns;
    nt->dev = e->dev;
    nt->code = e->u.text.code;
    nt->asked_ns = asked_ns;
    nt->diag_len = diag_format(in, v, nt->text, sizeof(nt->text) / 2);
    for (unsigned p = 0; c->coll >= 0 && p < BRIDGE_MAX_JOBS && nt->n_jobs < 3; p++)
        if (watch_peer_of(w, k, p) && w->jobs[p].open && !watch_entered(&w->jobs[p], c))
            nt->jobs[nt->n_jobs++] = p; /* the ranks waited for first: their line is the cause */
    nt->jobs[nt->n_jobs++] = k;
    watch_note_stacks(w, nt);
    return nt;
}

/* The hang bundle for job k's HANG alert e, once a job; where it went, as a log line. */
static void watch_bundle(struct watch *w, unsigned k, const struct ev *e, const char *diagnosis) {
    struct watch_job *j = &w->jobs[k];
    if (j->bundled || !w->o)
        return;
    j->bundled = true;
    struct tele *t = run_tele(w->run);
    struct bundle_src b = {.o = w->o,
                           .snap = &j->snap->snaps[0],
                           .tele = t ? tele_snap_read(t, NULL) : NULL,
                           .diagnosis = diagnosis};
    struct ev log = {.t_ns = mono_now_ns(), .kind = EV_LOG, .dev = (uint16_t)k};
    log.u.text.severity = SEV_WARNING;
    log.u.text.code = ALERT_HANG_BUNDLE;
    w->recent.written = false; /* one a job, not one a dashboard */
    bundle_on_hang(&w->recent, e, &b, log.u.text.text, sizeof(log.u.text.text));
    watch_push(w, &log);
}

/* SLOW or HANG for job k's call c, with its diagnosis. */
static void watch_alert(struct watch *w, unsigned k, struct watch_call *c,
                        enum trace_watch_state st, uint64_t now) {
    struct watch_job *j = &w->jobs[k];
    watch_look_proc(j);
    for (unsigned p = 0; c->coll >= 0 && p < BRIDGE_MAX_JOBS; p++)
        if (watch_peer_of(w, k, p) && w->jobs[p].open && !watch_entered(&w->jobs[p], c))
            watch_look_proc(&w->jobs[p]);
    uint64_t since = c->inf.start_ns; /* a stack that came during the call is of it */
    struct diag_in *in = malloc(sizeof(*in));
    if (!in)
        return;
    watch_diag_in(w, k, c, now, since, in);
    enum diag_verdict v = diag_judge(in);
    char cause[192];
    diag_cause(in, v, cause, sizeof(cause));
    snprintf(w->cause, sizeof(w->cause), "%s", cause);
    struct ev e = {.t_ns = now, .kind = EV_ALERT, .dev = (uint16_t)k};
    e.u.text.severity = st == TRACE_WATCH_HANG ? SEV_ERROR : SEV_WARNING;
    e.u.text.code = st == TRACE_WATCH_HANG ? ALERT_SYNC_HANG : ALERT_SYNC_SLOW;
    char who[48], label[64];
    watch_who(j, who, sizeof(who));
    watch_call_label(c, label, sizeof(label));
    double age = (double)(now - c->inf.start_ns) / 1e9;
    char over[48];
    if (st == TRACE_WATCH_HANG)
        snprintf(over, sizeof(over), "over the %g s sync timeout", (double)w->hang_ns / 1e9);
    else
        snprintf(over, sizeof(over), "over %.1f s", (double)w->slow_ns / 1e9);
    const char *grade = st == TRACE_WATCH_HANG ? "HANG" : "slow";
    const struct diag_peer *late = diag_culprit(in, v);
    if (late) /* the rank waited for first: what a narrow screen shows is who */
        watch_cat(e.u.text.text, sizeof(e.u.text.text),
                  "%s %s: rank %d %s; %s (pid %d) waits %.1f s (%s); rank %d: %.120s", label, grade,
                  late->rank, late->exited ? "has exited" : "has not entered it", who, (int)j->pid,
                  age, over, late->rank, late->doing);
    else
        watch_cat(e.u.text.text, sizeof(e.u.text.text),
                  "%s (pid %d) %s %s for %.1f s: %s (%s); %.150s", who, (int)j->pid,
                  c->coll >= 0 ? "waits in" : "in", label, age, grade, over, cause);
    watch_push(w, &e);
    struct watch_note *nt = watch_note_add(w, &e, k, c, in, v, since);
    if (st == TRACE_WATCH_HANG)
        watch_bundle(w, k, &e, nt->text);
    free(in);
}

void watch_hang_look(struct watch *w, uint64_t now) {
    if (now < w->next_look_ns)
        return;
    w->next_look_ns = now + WATCH_LOOK_NS;
    for (unsigned k = 0; k < BRIDGE_MAX_JOBS; k++) {
        struct watch_job *j = &w->jobs[k];
        for (unsigned i = 0; j->open && j->have_run && i < WATCH_CALLS; i++) {
            struct watch_call *c = &j->calls[i];
            if (!c->used || now <= c->inf.start_ns)
                continue;
            uint64_t age = now - c->inf.start_ns;
            enum trace_watch_state st = trace_watch_grade(age, c->coll, w->slow_ns, w->hang_ns);
            if (!c->stack_asked && age >= w->slow_ns / 2)
                watch_ask_stacks(w, k, c); /* early: the answers are in when SLOW is said */
            if (st > c->state) {
                watch_alert(w, k, c, st, now);
                c->state = st;
            }
        }
    }
}

void watch_hang_left(struct watch *w, unsigned k, struct watch_call *c, uint64_t now, bool gone) {
    if (c->state == TRACE_WATCH_OK)
        return;
    struct watch_job *j = &w->jobs[k];
    struct ev e = {.t_ns = now, .kind = EV_ALERT, .dev = (uint16_t)k};
    char who[48], label[64];
    watch_who(j, who, sizeof(who));
    watch_call_label(c, label, sizeof(label));
    e.u.text.severity = gone || c->state == TRACE_WATCH_HANG ? SEV_WARNING : SEV_INFO;
    e.u.text.code = ALERT_SYNC_BACK;
    double took = (double)(now > c->inf.start_ns ? now - c->inf.start_ns : 0) / 1e9;
    if (gone)
        snprintf(e.u.text.text, sizeof(e.u.text.text),
                 "%s (pid %d) went away in %s after %.1f s, still %s", who, (int)j->pid, label,
                 took, c->state == TRACE_WATCH_HANG ? "hung" : "slow");
    else
        snprintf(e.u.text.text, sizeof(e.u.text.text),
                 "%s (pid %d): %s returned after %.1f s, recovered (back to ok)", who, (int)j->pid,
                 label, took);
    c->state = TRACE_WATCH_OK;
    watch_push(w, &e);
    w->cause[0] = '\0';
}

/* A stack line's threads as a Python traceback; the training thread's innermost frame. */
static void watch_stack_text(json_object *threads, char *out, size_t n, char *top, size_t topn) {
    out[0] = top[0] = '\0';
    size_t nt =
        json_object_is_type(threads, json_type_array) ? json_object_array_length(threads) : 0;
    for (size_t t = 0; t < nt && t < 8; t++) {
        json_object *th = json_object_array_get_idx(threads, t), *v = NULL, *frames = NULL;
        const char *name =
            json_object_object_get_ex(th, "name", &v) ? json_object_get_string(v) : "?";
        watch_cat(out, n, "%sThread %s (most recent call last):", t ? "\n" : "", name ? name : "?");
        if (!json_object_object_get_ex(th, "frames", &frames) ||
            !json_object_is_type(frames, json_type_array))
            continue;
        size_t nf = json_object_array_length(frames);
        size_t first = nf > WATCH_STACK_FRAMES ? nf - WATCH_STACK_FRAMES : 0;
        for (size_t f = first; f < nf; f++) {
            json_object *fr = json_object_array_get_idx(frames, f);
            const char *file =
                json_object_object_get_ex(fr, "file", &v) ? json_object_get_string(v) : "?";
            int line = json_object_object_get_ex(fr, "line", &v) ? json_object_get_int(v) : 0;
            const char *func =
                json_object_object_get_ex(fr, "func", &v) ? json_object_get_string(v) : "?";
            const char *code =
                json_object_object_get_ex(fr, "code", &v) ? json_object_get_string(v) : "";
            watch_cat(out, n, "\n  File \"%s\", line %d, in %s", file ? file : "?", line,
                      func ? func : "?");
            if (code && code[0])
                watch_cat(out, n, "\n    %.160s", code);
            if (t == 0 && f == nf - 1) {
                const char *base = file ? strrchr(file, '/') : NULL;
                snprintf(top, topn, "%s:%d in %s",
                         base   ? base + 1
                         : file ? file
                                : "?",
                         line, func ? func : "?");
            }
        }
    }
}

void watch_hang_stack(struct watch *w, unsigned k, json_object *o) {
    struct watch_job *j = &w->jobs[k];
    json_object *threads = NULL;
    if (json_object_object_get_ex(o, "threads", &threads))
        watch_stack_text(threads, j->stack, sizeof(j->stack), j->stack_top, sizeof(j->stack_top));
    j->stack_ns = mono_now_ns();
    for (unsigned i = 0; i < WATCH_NOTES; i++) { /* the notes waiting for it */
        struct watch_note *nt = &w->notes[i];
        for (unsigned x = 0; nt->t_ns && x < nt->n_jobs; x++)
            if (nt->jobs[x] == k && j->stack_ns >= nt->asked_ns) {
                watch_note_stacks(w, nt);
                break;
            }
    }
}

void watch_hang_seen(struct watch *w, const struct ev *e) {
    bundle_ring_add(&w->recent, e);
    if (e->kind != EV_KMSG || e->u.kmsg.category == KMSG_CAT_NONE ||
        e->u.kmsg.severity < SEV_WARNING)
        return;
    struct watch_kmsg *m = &w->kmsg[w->kmsg_head];
    w->kmsg_head = (w->kmsg_head + 1) % WATCH_KMSG;
    w->kmsg_n += w->kmsg_n < WATCH_KMSG;
    m->t_ns = e->t_ns;
    snprintf(m->pci, sizeof(m->pci), "%s", e->u.kmsg.has & KMSG_HAS(PCI) ? e->u.kmsg.pci : "");
    snprintf(m->text, sizeof(m->text), "%s", e->u.kmsg.message);
}

const char *watch_hang_note(const struct watch *w, uint64_t t_ns, uint16_t dev, uint8_t code) {
    for (unsigned i = 0; i < WATCH_NOTES; i++) {
        const struct watch_note *nt = &w->notes[i];
        if (nt->t_ns && nt->t_ns == t_ns && nt->dev == dev && nt->code == code)
            return nt->text;
    }
    return NULL;
}
