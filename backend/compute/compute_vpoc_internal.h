/* What the two VPOC paths (one session at a time, packed sets) share. */
#ifndef RINGSIDE_BACKEND_COMPUTE_COMPUTE_VPOC_INTERNAL_H
#define RINGSIDE_BACKEND_COMPUTE_COMPUTE_VPOC_INTERNAL_H

#include "backend/compute/compute.h"

/* The end of an enqueued VPOC: while rc is 0, the pool into peak (NULL: not wanted) at its
 * high-water mark (every buffer of the pass still live), then the traced stream sync. Returns
 * rc, or the sync's error with its text in err. */
int compute_vpoc_wait(struct compute *c, int rc, struct compute_pool_peek *peak, char *err,
                      size_t errlen);

#endif
