/* A tiny fork-join pool: run task k of n on thread k, the caller running task 0. */
#ifndef RINGSIDE_BACKEND_COMPUTE_COMPUTE_PAR_H
#define RINGSIDE_BACKEND_COMPUTE_COMPUTE_PAR_H

struct compute_par;

/* threads >= 1 (threads - 1 helper threads are started). 0 or -errno. */
int compute_par_create(struct compute_par **out, unsigned threads);
void compute_par_destroy(struct compute_par *p);
unsigned compute_par_threads(const struct compute_par *p);

/* Run fn(ctx, k) for k in [0, threads) in parallel and return when all have finished.
 * Called from one thread at a time. */
void compute_par_run(struct compute_par *p, void (*fn)(void *ctx, unsigned k), void *ctx);

#endif
