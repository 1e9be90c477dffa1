/* splitmix64: the one small deterministic generator behind seeds, initialisation and
 * shuffling, so the same --seed gives the same run on every machine. */
#ifndef RINGSIDE_BACKEND_CORE_RNG_H
#define RINGSIDE_BACKEND_CORE_RNG_H

#include <stdint.h>

/* Advance *state and return the next 64 random bits. */
static inline uint64_t rng_splitmix64(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

#endif
