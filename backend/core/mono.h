/* Monotonic time in nanoseconds: the one clock every event, phase and sync is stamped with. */
#ifndef RINGSIDE_BACKEND_CORE_MONO_H
#define RINGSIDE_BACKEND_CORE_MONO_H

#include <stdint.h>

/* CLOCK_MONOTONIC in ns; the same clock the kernel log's timestamps use (in us). */
uint64_t mono_now_ns(void);

/* Wall-clock (CLOCK_REALTIME) in ns, for labels only, never for durations. */
uint64_t mono_wall_ns(void);

#endif
