/* The merge step of the telemetry service, exposed for its tests. */
#ifndef RINGSIDE_BACKEND_TELEMETRY_TELE_INTERNAL_H
#define RINGSIDE_BACKEND_TELEMETRY_TELE_INTERNAL_H

#include "backend/telemetry/tele.h"

#include <stddef.h>

/* Empty the GPU list of s (provider infos are kept). */
void tele_merge_begin(struct tele_snap *s);

/* Fold provider prov's records into s: a record joins the GPU with its PCI address (a new one
 * is added while there is room); every field it set that is still unset takes its value and
 * prov + 1 as source; its VRAM numbers are kept per provider for the reconciliation. Returns
 * the number of records that found no room. */
size_t tele_merge_add(struct tele_snap *s, unsigned prov, const struct tele_gpu *recs, size_t n);

/* Order the GPUs by PCI address and number them. */
void tele_merge_end(struct tele_snap *s);

#endif
