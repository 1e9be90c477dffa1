/* The dense form of a VPOC chunk, as PyTorch code writes it: each bar of a chunk is a row of a
 * [bars x levels] volume matrix (the bar's share at every level it covers, 0 at the others),
 * and the chunk's profile is that matrix summed over its rows. The elements are the packed
 * bars' fixed-point shares (int64), so the sums are the integers the reference and the packed
 * path add, in any order. */
#ifndef RINGSIDE_BACKEND_VPOC_VPOC_DENSE_H
#define RINGSIDE_BACKEND_VPOC_VPOC_DENSE_H

#include <stddef.h>
#include <stdint.h>

/* Write rows [0, n) of m (row-major, width int64 columns a row) from packed bars
 * (vpoc_pack.h): row i holds word i's share at columns [lo, hi] (its levels above the
 * session's base) and 0 at every other column. Every level a word covers is < width. */
void vpoc_dense_fill(const uint64_t *words, size_t n, int width, int64_t *m);

/* Add the column sums of rows [0, n) of m (width columns a row) to hist[0, levels), levels <=
 * width: what the rows of one session add to its profile. */
void vpoc_dense_reduce(const int64_t *m, size_t n, int width, int levels, int64_t *hist);

#endif
