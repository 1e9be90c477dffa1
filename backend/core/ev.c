/* Names of event kinds, phases, sync ops and commands, generated from the X-macro lists. */
#include "backend/core/ev.h"

#include <stddef.h>
#include <string.h>

#define EV_NAME_FN(fn, list, count)                                                                \
    const char *fn(unsigned v) {                                                                   \
        static const char *const names[] = {list(EV_NAME_ENTRY)};                                  \
        return v < (count) ? names[v] : "?";                                                       \
    }
#define EV_NAME_ENTRY(id, name) name,

#define EV_KIND_NAME(id, name, member) name,
static const char *const ev_kind_names[] = {EV_KINDS(EV_KIND_NAME)};

const char *ev_kind_name(unsigned kind) {
    return kind < EV_KIND_COUNT ? ev_kind_names[kind] : "?";
}

EV_NAME_FN(ev_sync_op_name, EV_SYNC_OPS, SYNC_OP_COUNT)
EV_NAME_FN(ev_coll_op_name, EV_COLL_OPS, EV_COLL_COUNT)

#define EV_PHASE_NAME(id, name, letter, label)   name,
#define EV_PHASE_LETTER(id, name, letter, label) letter[0],
#define EV_PHASE_LABEL(id, name, letter, label)  label,

#define EV_PHASE_ONE_LETTER(id, name, letter, label)                                               \
    _Static_assert(sizeof(letter) == 2, "phase " name ": one letter");
EV_PHASES(EV_PHASE_ONE_LETTER)

static const char *const ev_phase_names[] = {EV_PHASES(EV_PHASE_NAME)};
static const char ev_phase_letters[] = {EV_PHASES(EV_PHASE_LETTER)};
static const char *const ev_phase_labels[] = {EV_PHASES(EV_PHASE_LABEL)};

const char *ev_phase_name(unsigned phase) {
    return phase < PHASE_COUNT ? ev_phase_names[phase] : "?";
}

char ev_phase_letter(unsigned phase) {
    return phase < PHASE_COUNT ? ev_phase_letters[phase] : '?';
}

const char *ev_phase_label(unsigned phase) {
    return phase < PHASE_COUNT ? ev_phase_labels[phase] : "?";
}

#define EV_CMD_NAME(id, name, arg, remote)   name,
#define EV_CMD_ARG(id, name, arg, remote)    arg,
#define EV_CMD_REMOTE(id, name, arg, remote) remote,

static const char *const ev_cmd_names[] = {EV_CMDS(EV_CMD_NAME)};
static const enum ev_cmd_arg ev_cmd_args[] = {EV_CMDS(EV_CMD_ARG)};
static const bool ev_cmd_remotes[] = {EV_CMDS(EV_CMD_REMOTE)};

const char *ev_cmd_name(unsigned cmd) {
    return cmd < CMD_COUNT ? ev_cmd_names[cmd] : "?";
}

enum ev_cmd_arg ev_cmd_arg(unsigned cmd) {
    return cmd < CMD_COUNT ? ev_cmd_args[cmd] : EV_ARG_NONE;
}

bool ev_cmd_remote(unsigned cmd) {
    return cmd < CMD_COUNT && ev_cmd_remotes[cmd];
}

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

int ev_coll_op_from_name(const char *name) {
    for (unsigned i = 0; name && i < EV_COLL_COUNT; i++)
        if (strcmp(ev_coll_op_name(i), name) == 0)
            return (int)i;
    return -1;
}

int ev_cmd_from_name(const char *name) {
    for (unsigned i = 0; name && i < CMD_COUNT; i++)
        if (strcmp(ev_cmd_names[i], name) == 0)
            return (int)i;
    return -1;
}

_Static_assert(offsetof(struct ev, u) + sizeof(struct ev_phase) <= 64,
               "a phase, the most frequent event, fits one cache line (one unit of the ring)");

#define EV_KIND_BYTES(id, name, member) offsetof(struct ev, u) + sizeof(((struct ev *)0)->u.member),
const uint16_t ev_kind_bytes[EV_KIND_COUNT] = {EV_KINDS(EV_KIND_BYTES)};
