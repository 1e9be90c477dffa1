/* The packed bar: what the compute backends read when they profile many sessions at once. A
 * bar becomes one 64-bit word holding its levels relative to its session's lowest level and
 * its fixed-point share, computed once on the host with the reference's own functions (so the
 * device adds exactly the integers the reference adds, and reads 8 bytes a bar, not 32). */
#ifndef RINGSIDE_BACKEND_VPOC_VPOC_PACK_H
#define RINGSIDE_BACKEND_VPOC_VPOC_PACK_H

#include "backend/vpoc/vpoc.h"

#include <stddef.h>
#include <stdint.h>

/* Field widths of a packed bar: low level - base (bits 0..11), high - low (bits 12..23), share
 * (bits 24..63). */
#define VPOC_PACK_LEVEL_BITS 12
#define VPOC_PACK_SHARE_BITS 40
/* Most levels a packed session may span: what one profile kept on chip holds. */
#define VPOC_PACK_LEVELS_MAX 2048
#define VPOC_PACK_SHARE_MAX  (((int64_t)1 << VPOC_PACK_SHARE_BITS) - 1)

static inline uint64_t vpoc_pack_word(int64_t lo_rel, int64_t width_minus_1, int64_t share) {
    return (uint64_t)lo_rel | (uint64_t)width_minus_1 << VPOC_PACK_LEVEL_BITS |
           (uint64_t)share << (2 * VPOC_PACK_LEVEL_BITS);
}

static inline void vpoc_pack_unword(uint64_t w, int64_t *lo_rel, int64_t *hi_rel, int64_t *share) {
    const uint64_t m = ((uint64_t)1 << VPOC_PACK_LEVEL_BITS) - 1;
    *lo_rel = (int64_t)(w & m);
    *hi_rel = *lo_rel + (int64_t)(w >> VPOC_PACK_LEVEL_BITS & m);
    *share = (int64_t)(w >> (2 * VPOC_PACK_LEVEL_BITS));
}

/* One session's place in a packed set. */
struct vpoc_pack_session {
    int64_t base;    /* the session's lowest level: index 0 of its profile */
    int32_t levels;  /* levels its profile spans; 0: the session is not packed (see below) */
    int32_t bars;    /* bars it has */
    int64_t acc_off; /* where its profile starts in a set's profile buffer (int64 entries) */
};

/* Pack bars [0, n) of one session (n >= 1) into words[0, n) and *s (acc_off left as it is).
 * 0; or -ERANGE when the session cannot be packed: it spans more than VPOC_PACK_LEVELS_MAX
 * levels, or a bar's share is negative or above VPOC_PACK_SHARE_MAX (s->levels is then 0 and
 * words may be partly written: the caller profiles it the unpacked way). */
int vpoc_pack_session(const struct vpoc_bar *bars, size_t n, const struct vpoc_params *p,
                      uint64_t *words, struct vpoc_pack_session *s);

/* Add packed bars [0, n) into hist (its session's profile, index 0 = the session's base). */
void vpoc_pack_accumulate(const uint64_t *words, size_t n, int64_t *hist);

#endif
