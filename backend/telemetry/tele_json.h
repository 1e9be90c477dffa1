/* JSON output of telemetry snapshots (`ringside probe --json`). */
#ifndef RINGSIDE_BACKEND_TELEMETRY_TELE_JSON_H
#define RINGSIDE_BACKEND_TELEMETRY_TELE_JSON_H

#include "backend/telemetry/tele.h"

#include <stdbool.h>
#include <stdio.h>

/* {"providers":[...],"gpus":[...]} and a newline to out. 0, or -1 when the write failed. */
int tele_json_write(FILE *out, const struct tele_snap *s, bool pretty);

#endif
