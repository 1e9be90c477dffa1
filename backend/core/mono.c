/* Monotonic and wall clocks in nanoseconds. */
#include "backend/core/mono.h"

#include <time.h>

static uint64_t mono_read(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t mono_now_ns(void) {
    return mono_read(CLOCK_MONOTONIC);
}

uint64_t mono_wall_ns(void) {
    return mono_read(CLOCK_REALTIME);
}
