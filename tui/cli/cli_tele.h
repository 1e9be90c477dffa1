/* The telemetry flags shared by the dashboard, `train` and `probe`: provider selection, the
 * sampling interval and the root directories the file-reading providers use. */
#ifndef RINGSIDE_TUI_CLI_CLI_TELE_H
#define RINGSIDE_TUI_CLI_CLI_TELE_H

#include "backend/telemetry/tele.h"

#include <stddef.h>

#define CLI_TELE_HELP                                                                              \
    "  --telemetry LIST|none    providers to open, comma-separated (sysfs, libdrm, rocm-smi,\n"    \
    "                           debugfs, fdinfo, nvml; default all)\n"                             \
    "  --telemetry-interval MS  between telemetry samples (default 500)\n"                         \
    "  --sysfs-root DIR         read sysfs under DIR (default /sys)\n"                             \
    "  --proc-root DIR          read /proc under DIR (default /proc)\n"                            \
    "  --debugfs-root DIR       read debugfs under DIR (default /sys/kernel/debug)\n"              \
    "  --dev-root DIR           open device nodes under DIR (default /dev)\n"                      \
    "  --nvml-lib PATH          the NVML library to load (default libnvidia-ml.so.1)\n"

/* Apply telemetry flag `flag` ("--sysfs-root", ...) with value v to c. A root must be a
 * readable directory. 0, -EINVAL with err, or -ENOENT when flag is not a telemetry flag. */
int cli_tele_opt(const char *flag, const char *v, struct tele_conf *c, char *err, size_t errlen);

#endif
