/* Table-driven CRC-32 (reflected polynomial 0xEDB88320). */
#include "backend/core/crc32.h"

#include <stdbool.h>

static uint32_t crc32_table[256];
static bool crc32_ready;

static void crc32_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        crc32_table[i] = c;
    }
    crc32_ready = true;
}

uint32_t crc32_update(uint32_t crc, const void *data, size_t len) {
    /* Idempotent: racing initialisers write identical values. */
    if (!crc32_ready)
        crc32_init();
    const unsigned char *p = data;
    crc = ~crc;
    while (len--)
        crc = crc32_table[(crc ^ *p++) & 0xFFu] ^ (crc >> 8);
    return ~crc;
}
