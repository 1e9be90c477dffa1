/* The reference dense fill and reduce: what the backends' dense VPOC kernels must compute. */
#include "backend/vpoc/vpoc_dense.h"

#include "backend/vpoc/vpoc_pack.h"

#include <string.h>

void vpoc_dense_fill(const uint64_t *words, size_t n, int width, int64_t *m) {
    for (size_t i = 0; i < n; i++) {
        int64_t *row = m + i * (size_t)width, lo, hi, share;
        memset(row, 0, (size_t)width * sizeof(*row));
        vpoc_pack_unword(words[i], &lo, &hi, &share);
        for (int64_t l = lo; l <= hi && l < width; l++)
            row[l] = share;
    }
}

void vpoc_dense_reduce(const int64_t *m, size_t n, int width, int levels, int64_t *hist) {
    for (size_t i = 0; i < n; i++) {
        const int64_t *row = m + i * (size_t)width;
        for (int l = 0; l < levels; l++) /* one row at a time: the compiler vectorises this */
            hist[l] += row[l];
    }
}
