/* The agent's status line: agent_status_write's line parses back to the same status (telemetry,
 * kernel-log counters, the synchronize in flight), nulls read as absent, unknown members are
 * ignored and members of the wrong type are refused with a reason. */
#include "tui/agent/agent_status.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TestSuite(agent_status, .timeout = 30);

static void agent_status_test_full(struct agent_status *s) {
    memset(s, 0, sizeof(*s));
    s->t_ns = 123456789012ull;
    s->control = true;
    s->has_tele = true;
    struct tele_snap *t = &s->tele;
    t->n_prov = 1;
    snprintf(t->prov[0].name, sizeof(t->prov[0].name), "sysfs");
    t->prov[0].caps = TELE_CAP(THERMAL);
    t->n_gpus = 1;
    tele_gpu_init(&t->gpus[0], "0000:03:00.0");
    t->gpus[0].index = 0;
    t->gpus[0].f[TELE_F_TEMP] = 61;
    t->gpus[0].src[TELE_F_TEMP] = 1;
    s->has_kmsg = true;
    s->kmsg = (struct kmsg_stats){KMSG_STATE_UNREADABLE, 10, 4, 1, 2, 3};
    snprintf(s->kmsg_reason, sizeof(s->kmsg_reason), "/dev/kmsg: Permission denied");
    s->has_inflight = true;
    s->inflight_dev = 2;
    s->inflight =
        (struct trace_inflight){.start_ns = 99, .op = SYNC_OP_STREAM, .phase = PHASE_FORWARD};
}

/* Write s and parse the line back into out. */
static void agent_status_test_trip(const struct agent_status *s, struct agent_status *out) {
    char *line = NULL, why[256] = "";
    size_t len = 0;
    cr_assert_eq(agent_status_write(s, &line, &len), 0);
    cr_assert_eq(len, strlen(line));
    cr_assert_null(strchr(line, '\n'), "one line: %s", line);
    cr_assert(strncmp(line, "{\"type\":\"status\",", 17) == 0, "%s", line);
    cr_assert_eq(agent_status_parse(line, len, out, why, sizeof(why)), 0, "%s: %s", why, line);
    free(line);
}

Test(agent_status, round_trip) {
    static struct agent_status in, out;
    agent_status_test_full(&in);
    agent_status_test_trip(&in, &out);
    cr_assert_eq(out.t_ns, in.t_ns);
    cr_assert(out.control);
    cr_assert(out.has_tele);
    cr_assert_eq(out.tele.n_prov, 1);
    cr_assert_str_eq(out.tele.prov[0].name, "sysfs");
    cr_assert_eq(out.tele.prov[0].caps, TELE_CAP(THERMAL));
    cr_assert_eq(out.tele.n_gpus, 1);
    cr_assert_str_eq(out.tele.gpus[0].pci, "0000:03:00.0");
    cr_assert_eq(out.tele.gpus[0].src[TELE_F_TEMP], 1);
    cr_assert_eq(out.tele.gpus[0].f[TELE_F_TEMP], 61);
    cr_assert_eq(out.tele.t_ns, in.t_ns, "a sample, stamped with the line's time");
    cr_assert(out.has_kmsg);
    cr_assert_eq(out.kmsg.state, KMSG_STATE_UNREADABLE);
    cr_assert_eq(out.kmsg.lines, 10);
    cr_assert_eq(out.kmsg.events, 4);
    cr_assert_eq(out.kmsg.lost, 1);
    cr_assert_eq(out.kmsg.cut, 2);
    cr_assert_eq(out.kmsg.dropped, 3);
    cr_assert_str_eq(out.kmsg_reason, "/dev/kmsg: Permission denied");
    cr_assert(out.has_inflight);
    cr_assert_eq(out.inflight_dev, 2);
    cr_assert_eq(out.inflight.start_ns, 99);
    cr_assert_eq(out.inflight.op, SYNC_OP_STREAM);
    cr_assert_eq(out.inflight.phase, PHASE_FORWARD);
}

Test(agent_status, every_kmsg_state) {
    static struct agent_status in, out;
    enum kmsg_state states[] = {KMSG_STATE_OFF, KMSG_STATE_LIVE, KMSG_STATE_FILE,
                                KMSG_STATE_UNREADABLE};
    agent_status_test_full(&in);
    for (size_t k = 0; k < sizeof(states) / sizeof(states[0]); k++) {
        in.kmsg.state = states[k];
        agent_status_test_trip(&in, &out);
        cr_assert_eq(out.kmsg.state, states[k]);
    }
}

Test(agent_status, nulls_are_absent) {
    static struct agent_status in, out;
    memset(&in, 0, sizeof(in));
    in.t_ns = 5;
    char *line = NULL;
    size_t len = 0;
    cr_assert_eq(agent_status_write(&in, &line, &len), 0);
    cr_assert_str_eq(line, "{\"type\":\"status\",\"t_ns\":5,\"control\":false,\"telemetry\":null,"
                           "\"kmsg\":null,\"inflight\":null}");
    free(line);
    memset(&out, 0x5a, sizeof(out));
    agent_status_test_trip(&in, &out);
    cr_assert_eq(out.t_ns, 5);
    cr_assert_not(out.control);
    cr_assert_not(out.has_tele);
    cr_assert_not(out.has_kmsg);
    cr_assert_not(out.has_inflight);
    cr_assert_str_eq(out.kmsg_reason, "");
}

Test(agent_status, unknown_members_are_ignored) {
    static struct agent_status s;
    const char *line =
        "{\"type\":\"status\",\"t_ns\":7,\"control\":true,\"gpu_count\":3,\"future\":{\"x\":[1]},"
        "\"kmsg\":{\"state\":\"live\",\"lines\":4,\"rate\":1.5},"
        "\"inflight\":{\"dev\":0,\"op\":\"device\",\"phase\":\"sync\",\"start_ns\":1,\"tid\":9}}";
    char why[256] = "";
    cr_assert_eq(agent_status_parse(line, strlen(line), &s, why, sizeof(why)), 0, "%s", why);
    cr_assert_eq(s.t_ns, 7);
    cr_assert(s.control);
    cr_assert(s.has_kmsg);
    cr_assert_eq(s.kmsg.state, KMSG_STATE_LIVE);
    cr_assert_eq(s.kmsg.lines, 4);
    cr_assert_eq(s.kmsg.events, 0, "absent counters read 0");
    cr_assert(s.has_inflight);
    cr_assert_eq(s.inflight.op, SYNC_OP_DEVICE);
    cr_assert_eq(s.inflight.phase, PHASE_SYNC);
}

struct agent_status_test_bad { /* arrays: the parameters are copied into each test's process */
    char line[160];
    char why[64]; /* a piece of the reason */
};

ParameterizedTestParameters(agent_status, wrong_types_are_refused) {
    static struct agent_status_test_bad p[] = {
        {"{\"type\":\"status\",\"t_ns\":1,\"control\":\"yes\"}", "member 'control': not a boolean"},
        {"{\"type\":\"status\",\"t_ns\":\"1\"}", "member 't_ns': not an integer"},
        {"{\"type\":\"status\",\"t_ns\":-1}", "member 't_ns': negative"},
        {"{\"type\":\"status\"}", "member 't_ns': missing"},
        {"{\"type\":\"layout\",\"t_ns\":1}", "member 'type': not \"status\""},
        {"{\"t_ns\":1}", "member 'type': missing"},
        {"{\"type\":\"status\",\"t_ns\":1,\"telemetry\":[]}", "member 'telemetry': not an object"},
        {"{\"type\":\"status\",\"t_ns\":1,\"telemetry\":{\"gpus\":[{\"temp_c\":\"hot\"}]}}",
         "member 'telemetry': gpus[0].temp_c: not a number"},
        {"{\"type\":\"status\",\"t_ns\":1,\"kmsg\":3}", "member 'kmsg': not an object"},
        {"{\"type\":\"status\",\"t_ns\":1,\"kmsg\":{\"state\":\"maybe\"}}",
         "member 'kmsg.state': unknown value"},
        {"{\"type\":\"status\",\"t_ns\":1,\"kmsg\":{\"state\":\"live\",\"lost\":true}}",
         "member 'kmsg.lost': not an integer"},
        {"{\"type\":\"status\",\"t_ns\":1,\"kmsg\":{}}", "member 'kmsg.state': missing"},
        {"{\"type\":\"status\",\"t_ns\":1,\"inflight\":{\"dev\":0,\"op\":\"warp\",\"phase\":"
         "\"sync\",\"start_ns\":1}}",
         "member 'inflight.op': unknown value"},
        {"{\"type\":\"status\",\"t_ns\":1,\"inflight\":{\"dev\":70000,\"op\":\"device\","
         "\"phase\":\"sync\",\"start_ns\":1}}",
         "member 'inflight.dev': out of range"},
        {"{\"type\":\"status\",\"t_ns\":1} x", "text after the object"},
        {"{\"type\":\"status\",", "cut short"},
        {"[]", "not a JSON object"},
    };
    return cr_make_param_array(struct agent_status_test_bad, p, sizeof(p) / sizeof(p[0]));
}

ParameterizedTest(struct agent_status_test_bad *p, agent_status, wrong_types_are_refused) {
    static struct agent_status s;
    char why[256] = "";
    cr_assert_eq(agent_status_parse(p->line, strlen(p->line), &s, why, sizeof(why)), -EINVAL,
                 "'%s' was taken", p->line);
    cr_assert(strstr(why, p->why), "'%s': why is '%s', want '%s'", p->line, why, p->why);
    cr_assert_not(s.has_tele || s.has_kmsg || s.has_inflight, "nothing half-read");
}
