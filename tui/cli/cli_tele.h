/* The telemetry flags shared by the dashboard, `train` and `probe`: provider selection, the
 * sampling interval and the root directories the file-reading providers use. */
#ifndef RINGSIDE_TUI_CLI_CLI_TELE_H
#define RINGSIDE_TUI_CLI_CLI_TELE_H

#include "backend/telemetry/tele.h"

#include <stddef.h>

/* Apply telemetry flag `flag` ("--sysfs-root", ...) with value v to c. A root must be a
 * readable directory. 0, -EINVAL with err, or -ENOENT when flag is not a telemetry flag. */
int cli_tele_opt(const char *flag, const char *v, struct tele_conf *c, char *err, size_t errlen);

#endif
