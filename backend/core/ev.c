/* Names of event kinds, phases, sync ops and commands, generated from the X-macro lists. */
#include "backend/core/ev.h"

#include <string.h>

#define EV_NAME_FN(fn, list, count)                                                                \
    const char *fn(unsigned v) {                                                                   \
        static const char *const names[] = {list(EV_NAME_ENTRY)};                                  \
        return v < (count) ? names[v] : "?";                                                       \
    }
#define EV_NAME_ENTRY(id, name) name,

EV_NAME_FN(ev_kind_name, EV_KINDS, EV_KIND_COUNT)
EV_NAME_FN(ev_phase_name, EV_PHASES, PHASE_COUNT)
EV_NAME_FN(ev_sync_op_name, EV_SYNC_OPS, SYNC_OP_COUNT)
EV_NAME_FN(ev_cmd_name, EV_CMDS, CMD_COUNT)

const char *ev_severity_name(unsigned sev) {
    static const char *const names[] = {"info", "warning", "error"};
    return sev < 3 ? names[sev] : "?";
}

int ev_phase_from_name(const char *name) {
    for (unsigned i = 0; i < PHASE_COUNT; i++)
        if (strcmp(ev_phase_name(i), name) == 0)
            return (int)i;
    return -1;
}
