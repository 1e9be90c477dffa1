/* JSON output of telemetry snapshots (`ringside probe --json`), and reading it back (a remote
 * agent's status lines carry it). */
#ifndef RINGSIDE_BACKEND_TELEMETRY_TELE_JSON_H
#define RINGSIDE_BACKEND_TELEMETRY_TELE_JSON_H

#include "backend/telemetry/tele.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct json_object;

/* The snapshot as the object {"providers":[...],"gpus":[...]} (the caller puts it), for a
 * document that embeds it. */
struct json_object *tele_json_object(const struct tele_snap *s);

/* {"providers":[...],"gpus":[...]} and a newline to out. 0, or -1 when the write failed. */
int tele_json_write(FILE *out, const struct tele_snap *s, bool pretty);

/* The inverse of tele_json_write: text (len bytes; trailing whitespace allowed) into *s, which
 * is overwritten. Providers (name, status, reason, capabilities, gpus, samples, last/max sample
 * times) and GPUs (identity, every TELE_FIELDS field, buddy, rings, processes, VRAM by source),
 * each field valid only when present and not null; its src[] is the index + 1 of the provider
 * "sources" names, or 1 when that provider is not listed (the value stays valid). Entries over
 * TELE_MAX_GPUS, TELE_MAX_PROVIDERS, TELE_MAX_RINGS and TELE_BUDDY_ORDERS are ignored;
 * processes over TELE_MAX_PROCS are counted in procs_more; strings are cut to fit. t_ns and seq
 * (not in the text) are left 0. Unknown members are ignored. 0, or -EINVAL with why ("invalid
 * JSON at column 3: ...", "gpus[0].temp_c: not a number"), or -ENOMEM. */
int tele_json_read(const char *text, size_t len, struct tele_snap *s, char *why, size_t whylen);

/* The same from a parsed object (a member of a larger document). */
int tele_json_read_object(const struct json_object *o, struct tele_snap *s, char *why,
                          size_t whylen);

#endif
