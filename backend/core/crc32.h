/* CRC-32 (IEEE 802.3, as zlib's crc32) for checkpoint integrity. */
#ifndef RINGSIDE_BACKEND_CORE_CRC32_H
#define RINGSIDE_BACKEND_CORE_CRC32_H

#include <stddef.h>
#include <stdint.h>

/* Continue a CRC: start with crc = 0; crc32_update(0, "123456789", 9) == 0xCBF43926. */
uint32_t crc32_update(uint32_t crc, const void *data, size_t len);

#endif
