/* Tests for the dashboard's doctor runner: the environment checks on their own thread, picked
 * up by polling, one run at a time, and a teardown that waits for a run under way. */
#include "tui/dashboard/app_doctor.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

TestSuite(app_doctor, .timeout = 30);

static struct app_doctor ad;

static bool ad_wait(void) {
    for (int k = 0; k < 2000; k++) { /* 20 s */
        if (app_doctor_poll(&ad))
            return true;
        usleep(10000);
    }
    return false;
}

static bool ad_has_group(const char *group) {
    for (size_t k = 0; k < ad.last->n; k++)
        if (strcmp(ad.last->rows[k].group, group) == 0)
            return true;
    return false;
}

Test(app_doctor, runs_in_the_background_and_is_picked_up) {
    app_doctor_init(&ad);
    cr_assert_not(app_doctor_poll(&ad), "nothing to pick up before a run");
    cr_assert_null(ad.last);
    cr_assert_eq(app_doctor_start(&ad, NULL), 0);
    cr_assert_eq(app_doctor_start(&ad, NULL), -EBUSY, "one run at a time");
    cr_assert(ad_wait(), "the run never finished");
    cr_assert_not_null(ad.last);
    cr_assert_gt(ad.last->n, 3);
    cr_assert(ad_has_group("environment"));
    cr_assert(ad_has_group("known issues"), "the built-in rules ran");
    cr_assert(ad_has_group("kernel log"));
    cr_assert_not(ad_has_group("gpu"), "no GPU smoke tests: training owns the GPU");
    size_t total = 0;
    for (int s = 0; s <= DOCTOR_SKIP; s++)
        total += ad.counts[s];
    cr_assert_eq(total, ad.last->n);
    cr_assert_gt(ad.when, 0);
    cr_assert_not(app_doctor_poll(&ad), "picked up once");
    /* a second run replaces the report */
    cr_assert_eq(app_doctor_start(&ad, NULL), 0);
    cr_assert(ad_wait());
    cr_assert_not_null(ad.last);
    app_doctor_fini(&ad);
}

Test(app_doctor, teardown_waits_for_a_run_under_way) {
    app_doctor_init(&ad);
    cr_assert_eq(app_doctor_start(&ad, NULL), 0);
    app_doctor_fini(&ad); /* joins; ASan sees no leak */
    cr_assert_null(ad.last);
}
