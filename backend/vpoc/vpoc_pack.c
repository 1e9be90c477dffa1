/* Packing bars into 64-bit words, and the reference accumulation of packed bars. */
#include "backend/vpoc/vpoc_pack.h"

#include <errno.h>

int vpoc_pack_session(const struct vpoc_bar *bars, size_t n, const struct vpoc_params *p,
                      uint64_t *words, struct vpoc_pack_session *s) {
    int64_t lo, hi;
    vpoc_level_range(bars, n, p, &lo, &hi);
    s->base = lo;
    s->levels = 0;
    s->bars = n > INT32_MAX ? INT32_MAX : (int32_t)n;
    if (n > INT32_MAX || (uint64_t)hi - (uint64_t)lo >= VPOC_PACK_LEVELS_MAX)
        return -ERANGE;
    for (size_t i = 0; i < n; i++) {
        int64_t a, z;
        vpoc_bar_levels(&bars[i], p, &a, &z);
        double v = bars[i].volume;
        /* a NaN or an enormous volume would make llround's result unspecified: refuse first */
        if (!(v >= 0.0 &&
              v < (double)VPOC_PACK_SHARE_MAX / (double)VPOC_FIX_ONE * (double)(z - a + 1)))
            return -ERANGE;
        int64_t share = vpoc_fix_share(v, z - a + 1);
        if (share > VPOC_PACK_SHARE_MAX)
            return -ERANGE;
        words[i] = vpoc_pack_word(a - lo, z - a, share);
    }
    s->levels = (int32_t)(hi - lo + 1);
    return 0;
}

void vpoc_pack_accumulate(const uint64_t *words, size_t n, int64_t *hist) {
    for (size_t i = 0; i < n; i++) {
        int64_t a, z, share;
        vpoc_pack_unword(words[i], &a, &z, &share);
        for (int64_t l = a; l <= z; l++)
            hist[l] += share;
    }
}
