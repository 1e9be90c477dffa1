/* For the telemetry provider tests: expect a record to hold exactly the listed fields with
 * their values (within 1e-9 relative) and every other field unset - unread is never 0. */
#ifndef RINGSIDE_TESTS_SUPPORT_TELE_EXPECT_H
#define RINGSIDE_TESTS_SUPPORT_TELE_EXPECT_H

#include "backend/telemetry/tele.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>

struct tele_want {
    enum tele_field f;
    double v;
};

static inline void tele_expect_fields(const struct tele_gpu *g, const struct tele_want *want,
                                      size_t n) {
    bool listed[TELE_F_COUNT] = {false};
    for (size_t i = 0; i < n; i++) {
        enum tele_field f = want[i].f;
        listed[f] = true;
        cr_expect(g->src[f], "%s: %s unset", g->pci, tele_field_json(f));
        double tol = 1e-9 * (fabs(want[i].v) > 1 ? fabs(want[i].v) : 1);
        cr_expect(fabs(g->f[f] - want[i].v) <= tol, "%s: %s = %.6f, want %.6f", g->pci,
                  tele_field_json(f), g->f[f], want[i].v);
    }
    for (unsigned f = 0; f < TELE_F_COUNT; f++)
        cr_expect(listed[f] || !g->src[f], "%s: %s set (%.3f) but should be unset", g->pci,
                  tele_field_json(f), g->f[f]);
}

/* TELE_EXPECT(g, {TELE_F_VRAM_USED, 1024}, {TELE_F_TEMP, 61}) */
#define TELE_EXPECT(g, ...)                                                                        \
    do {                                                                                           \
        const struct tele_want tele_w_[] = {__VA_ARGS__};                                          \
        tele_expect_fields(g, tele_w_, sizeof(tele_w_) / sizeof(tele_w_[0]));                      \
    } while (0)

#endif
