/* The group's state in one line for a watchdog, an error or an exit message: who waits in which
 * call and for how long, and who has not reached it. */
#include "backend/comm/comm.h"

#include <stdarg.h>
#include <stdio.h>

struct comm_line {
    char *buf;
    size_t n, len;
};

__attribute__((format(printf, 2, 3))) static void comm_line_put(struct comm_line *l,
                                                                const char *fmt, ...) {
    if (l->len >= l->n)
        return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(l->buf + l->len, l->n - l->len, fmt, ap);
    va_end(ap);
    if (k > 0)
        l->len += (size_t)k < l->n - l->len ? (size_t)k : l->n - l->len - 1;
}

/* "; " between clauses, then "rank 1" or "ranks 1, 3" for the ranks of mask. */
static void comm_line_ranks(struct comm_line *l, uint32_t mask) {
    if (l->len > 0)
        comm_line_put(l, "; ");
    comm_line_put(l, "rank%s", (mask & (mask - 1)) ? "s" : "");
    const char *sep = " ";
    for (unsigned r = 0; r < COMM_MAX_RANKS; r++)
        if (mask & (1u << r)) {
            comm_line_put(l, "%s%u", sep, r);
            sep = ", ";
        }
}

static bool comm_many(uint32_t mask) {
    return (mask & (mask - 1)) != 0;
}

/* Ranks inside op, and the longest any of them has waited. */
static uint32_t comm_in_op(const struct comm_snap *s, unsigned op, uint64_t now_ns,
                           uint64_t *longest_ns) {
    uint32_t mask = 0;
    *longest_ns = 0;
    for (unsigned r = 0; r < s->n_ranks && r < COMM_MAX_RANKS; r++) {
        const struct comm_rank_state *st = &s->rank[r];
        if (st->op != op)
            continue;
        mask |= 1u << r;
        uint64_t waited = now_ns > st->since_ns ? now_ns - st->since_ns : 0;
        if (waited > *longest_ns)
            *longest_ns = waited;
    }
    return mask;
}

/* The rank inside a call that is furthest along (highest seq): the call the others are
 * measured against. -1 when no rank is inside one. */
static int comm_newest(const struct comm_snap *s) {
    int best = -1;
    for (unsigned r = 0; r < s->n_ranks && r < COMM_MAX_RANKS; r++)
        if (s->rank[r].op != COMM_OP_NONE && (best < 0 || s->rank[r].seq > s->rank[best].seq))
            best = (int)r;
    return best;
}

bool comm_snap_describe(const struct comm_snap *s, uint64_t now_ns, char *buf, size_t n) {
    struct comm_line l = {buf, n, 0};
    if (n > 0)
        buf[0] = '\0';
    int newest = comm_newest(s);
    if (newest < 0) {
        comm_line_put(&l, "no rank is in a collective");
        return false;
    }
    unsigned kinds = 0;
    for (unsigned op = COMM_OP_NONE + 1; op < COMM_OP_COUNT; op++) {
        uint64_t longest;
        uint32_t mask = comm_in_op(s, op, now_ns, &longest);
        if (!mask)
            continue;
        kinds++;
        comm_line_ranks(&l, mask);
        comm_line_put(&l, " %s in %s for %.1f s", comm_many(mask) ? "wait" : "waits",
                      comm_op_name((enum comm_op)op), (double)longest / 1e9);
    }
    uint32_t behind = 0, idle = 0;
    for (unsigned r = 0; r < s->n_ranks && r < COMM_MAX_RANKS; r++) {
        if (s->rank[r].op != COMM_OP_NONE)
            continue;
        if (s->rank[r].seq < s->rank[newest].seq)
            behind |= 1u << r;
        else
            idle |= 1u << r;
    }
    if (behind) {
        comm_line_ranks(&l, behind);
        comm_line_put(&l, " %s not entered %s", comm_many(behind) ? "have" : "has",
                      kinds == 1 ? "it" : comm_op_name((enum comm_op)s->rank[newest].op));
    }
    if (idle) {
        comm_line_ranks(&l, idle);
        comm_line_put(&l, " %s not in a collective", comm_many(idle) ? "are" : "is");
    }
    return true;
}
