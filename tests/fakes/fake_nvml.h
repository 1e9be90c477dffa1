/* What the fake NVML library tells the tests about itself, beyond the NVML entry points. */
#ifndef RINGSIDE_TESTS_FAKES_FAKE_NVML_H
#define RINGSIDE_TESTS_FAKES_FAKE_NVML_H

/* A snapshot of the fake's bookkeeping, for checking that a client cleaned up. */
struct fake_nvml_counts {
    int inits;        /* nvmlInit calls not yet matched by nvmlShutdown */
    int event_sets;   /* event sets created and not freed */
    int waiting;      /* threads inside nvmlEventSetWait_v2 now */
    int waits;        /* nvmlEventSetWait_v2 calls so far */
    int mem_v2_calls; /* nvmlDeviceGetMemoryInfo_v2 calls so far */
};

/* Exported by the fake; tests find it with dlsym(handle, "fake_nvml_get_counts"). */
void fake_nvml_get_counts(struct fake_nvml_counts *out);
typedef void (*fake_nvml_get_counts_fn)(struct fake_nvml_counts *out);

#endif
