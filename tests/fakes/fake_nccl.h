/* What the fake NCCL library tells the tests about itself, beyond the NCCL entry points. */
#ifndef RINGSIDE_TESTS_FAKES_FAKE_NCCL_H
#define RINGSIDE_TESTS_FAKES_FAKE_NCCL_H

/* A snapshot of the fake's bookkeeping, for checking that a client cleaned up. */
struct fake_nccl_counts {
    int live;       /* communicators created and neither destroyed nor aborted */
    int aborts;     /* ncclCommAbort calls so far */
    int destroys;   /* ncclCommDestroy calls so far */
    int bad_config; /* ncclCommInitRankConfig calls refused for their configuration */
};

/* Exported by the fake; tests find it with dlsym(handle, "fake_nccl_get_counts"). */
void fake_nccl_get_counts(struct fake_nccl_counts *out);
typedef void (*fake_nccl_get_counts_fn)(struct fake_nccl_counts *out);

#endif
