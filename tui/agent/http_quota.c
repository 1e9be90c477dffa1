/* Places for long-lived requests (http_quota.h): a table of the address groups that hold a
 * place, under one mutex. At most `total` groups hold one at once, so the table has that many
 * rows and a take looks at each (a few dozen: the agent's follower cap). */
#include "tui/agent/http_quota.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

struct http_quota_row {
    struct http_addr addr;
    unsigned held; /* 0: a free row */
};

struct http_quota {
    struct http_quota_conf conf;
    pthread_mutex_t mu;
    unsigned held;               /* over every row and the clients without an address */
    struct http_quota_row *rows; /* conf.total of them */
};

int http_quota_create(struct http_quota **out, const struct http_quota_conf *c) {
    *out = NULL;
    struct http_quota *q = calloc(1, sizeof(*q));
    if (!q)
        return -ENOMEM;
    q->conf = *c;
    q->rows = calloc(c->total ? c->total : 1, sizeof(*q->rows));
    if (!q->rows) {
        free(q);
        return -ENOMEM;
    }
    pthread_mutex_init(&q->mu, NULL);
    *out = q;
    return 0;
}

void http_quota_destroy(struct http_quota *q) {
    if (!q)
        return;
    pthread_mutex_destroy(&q->mu);
    free(q->rows);
    free(q);
}

/* a's row, or NULL; *free_row: the first row that no group holds (NULL: none). */
static struct http_quota_row *quota_row_locked(struct http_quota *q, const struct http_addr *a,
                                               struct http_quota_row **free_row) {
    *free_row = NULL;
    for (unsigned k = 0; k < q->conf.total; k++) {
        struct http_quota_row *r = &q->rows[k];
        if (r->held == 0) {
            if (!*free_row)
                *free_row = r;
        } else if (http_addr_equal(&r->addr, a))
            return r;
    }
    return NULL;
}

enum http_quota_take http_quota_take(struct http_quota *q, const struct http_addr *a) {
    enum http_quota_take got = HTTP_QUOTA_TAKEN;
    pthread_mutex_lock(&q->mu);
    struct http_quota_row *row = NULL, *free_row = NULL;
    if (a) {
        row = quota_row_locked(q, a, &free_row);
        if (row && row->held >= q->conf.per_addr)
            got = HTTP_QUOTA_ADDR_FULL;
        else if (!row && q->conf.per_addr == 0)
            got = HTTP_QUOTA_ADDR_FULL;
    }
    if (got == HTTP_QUOTA_TAKEN && q->held >= q->conf.total)
        got = HTTP_QUOTA_FULL;
    if (got == HTTP_QUOTA_TAKEN) {
        if (a && !row) { /* a free row is there: fewer groups than places hold one */
            row = free_row;
            row->addr = *a;
        }
        if (row)
            row->held++;
        q->held++;
    }
    pthread_mutex_unlock(&q->mu);
    return got;
}

void http_quota_give(struct http_quota *q, const struct http_addr *a) {
    pthread_mutex_lock(&q->mu);
    struct http_quota_row *free_row, *row = a ? quota_row_locked(q, a, &free_row) : NULL;
    if (row)
        row->held--;
    if (q->held > 0 && (row || !a))
        q->held--;
    pthread_mutex_unlock(&q->mu);
}

unsigned http_quota_held(struct http_quota *q) {
    pthread_mutex_lock(&q->mu);
    unsigned n = q->held;
    pthread_mutex_unlock(&q->mu);
    return n;
}
