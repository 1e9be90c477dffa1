/* libFuzzer target for the agent's status line as `ringside attach` reads it from /events
 * (tui/agent/agent_status.c): each line of the input parsed; a status that parses is written
 * back, and that line parses and writes back to the very same text; one that does not leaves
 * nothing half-read. */
#include "tests/fuzz/fuzz_target.h"
#include "tui/agent/agent_status.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_STATUS_WHY 256

/* Every enum in range, every count within its array, every string terminated. */
static void fuzz_status_check(const struct agent_status *s) {
    FUZZ_CHECK(!s->has_kmsg || (unsigned)s->kmsg.state <= KMSG_STATE_UNREADABLE);
    FUZZ_CHECK(memchr(s->kmsg_reason, '\0', sizeof(s->kmsg_reason)) != NULL);
    FUZZ_CHECK(!s->has_inflight || (s->inflight.op < SYNC_OP_COUNT &&
                                    s->inflight.phase < PHASE_COUNT && s->inflight_dev <= 0xFFFF));
    const struct tele_snap *t = &s->tele;
    FUZZ_CHECK(t->n_gpus <= TELE_MAX_GPUS && t->n_prov <= TELE_MAX_PROVIDERS);
    FUZZ_CHECK(!s->has_tele || t->t_ns != 0);
    for (unsigned i = 0; i < t->n_prov; i++)
        FUZZ_CHECK(memchr(t->prov[i].name, '\0', sizeof(t->prov[i].name)) != NULL);
    for (unsigned i = 0; i < t->n_gpus; i++)
        FUZZ_CHECK(memchr(t->gpus[i].pci, '\0', sizeof(t->gpus[i].pci)) != NULL);
}

/* One line, copied at its exact size so that an over-read is caught. */
static void fuzz_status_line(const char *line, size_t len, struct agent_status *s,
                             struct agent_status *back, const struct agent_status *zero) {
    char *copy = malloc(len ? len : 1);
    FUZZ_CHECK(copy != NULL);
    if (len)
        memcpy(copy, line, len);
    char why[FUZZ_STATUS_WHY];
    memset(why, 'x', sizeof(why));
    memset(s, 0x5a, sizeof(*s));
    int rc = agent_status_parse(copy, len, s, why, sizeof(why));
    free(copy);
    if (rc != 0) {
        FUZZ_CHECK(rc == -EINVAL);
        FUZZ_CHECK(memchr(why, '\0', sizeof(why)) != NULL && why[0] != '\0');
        FUZZ_CHECK(memcmp(s, zero, sizeof(*s)) == 0);
        return;
    }
    fuzz_status_check(s);
    /* written back: one line of a status, which reads back and writes the same */
    char *text = NULL, *text2 = NULL;
    size_t tlen = 0, tlen2 = 0;
    FUZZ_CHECK(agent_status_write(s, &text, &tlen) == 0 && tlen == strlen(text));
    FUZZ_CHECK(!memchr(text, '\n', tlen) && strncmp(text, "{\"type\":\"status\",", 17) == 0);
    FUZZ_CHECK(agent_status_parse(text, tlen, back, why, sizeof(why)) == 0);
    fuzz_status_check(back);
    FUZZ_CHECK(back->t_ns == s->t_ns && back->control == s->control);
    FUZZ_CHECK(back->has_tele == s->has_tele && back->has_kmsg == s->has_kmsg &&
               back->has_inflight == s->has_inflight);
    FUZZ_CHECK(agent_status_write(back, &text2, &tlen2) == 0);
    FUZZ_CHECK(tlen == tlen2 && memcmp(text, text2, tlen) == 0);
    free(text);
    free(text2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    /* large (struct tele_snap): kept off the stack, made once */
    static struct agent_status *s, *back, *zero;
    if (!s) {
        s = malloc(sizeof(*s));
        back = malloc(sizeof(*back));
        zero = calloc(1, sizeof(*zero));
        FUZZ_CHECK(s && back && zero);
    }
    const char *text = (const char *)data;
    /* the lines as the attach client hands them on (without their newline) */
    for (size_t off = 0; off < size;) {
        const char *nl = memchr(text + off, '\n', size - off);
        size_t len = nl ? (size_t)(nl - (text + off)) : size - off;
        fuzz_status_line(text + off, len, s, back, zero);
        off += len + (nl != NULL);
    }
    return 0;
}

const char fuzz_target_name[] = "fuzz_agent_status";

/* Pieces of real status lines (agent_status_write, tele_json_write). */
const char *const fuzz_fragments[] = {
    "{\"type\":\"status\",\"t_ns\":5,\"control\":false,\"telemetry\":null,\"kmsg\":null,"
    "\"inflight\":null}\n",
    "{\"type\":\"status\",\"t_ns\":123456789012,\"control\":true,\"telemetry\":{\"providers\":[{"
    "\"name\":\"sysfs\"}],\"gpus\":[{\"pci\":\"0000:03:00.0\",\"index\":0,\"temp_c\":61}]},"
    "\"kmsg\":{\"state\":\"unreadable\",\"reason\":\"/dev/kmsg: Permission denied\",\"lines\":10,"
    "\"events\":4,\"lost\":1,\"cut\":2,\"dropped\":3},\"inflight\":{\"dev\":2,\"op\":\"stream\","
    "\"phase\":\"forward\",\"start_ns\":99}}\n",
    "\"kmsg\":{\"state\":\"live\",\"lines\":4}",
    "\"kmsg\":{\"state\":\"off\"}",
    "\"kmsg\":{\"state\":\"file\",\"reason\":\"\"}",
    "\"inflight\":{\"dev\":65535,\"op\":\"device\",\"phase\":\"sync\",\"start_ns\":1}",
    "\"inflight\":{\"dev\":65536,\"op\":\"event\",\"phase\":\"teardown\",\"start_ns\":0}",
    "\"telemetry\":{\"providers\":[{\"name\":\"nvml\"}],\"gpus\":[]}",
    "\"providers\":[{\"name\":\"sysfs\"},{\"name\":\"nvml\"}]",
    "\"gpus\":[{\"pci\":\"0000:c1:00.0\",\"index\":1}]",
    "\"version\":3",
    "\"t_ns\":18446744073709551615",
    "\"t_ns\":-1",
    "\"t_ns\":1.5",
    "\"control\":true",
    "\"type\":\"log\"",
    "null",
    "[]",
    "{}",
    "\"\\u0000\"",
    "\n",
};
const size_t fuzz_fragments_count = sizeof(fuzz_fragments) / sizeof(fuzz_fragments[0]);
