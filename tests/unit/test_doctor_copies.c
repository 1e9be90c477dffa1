/* The doctor's copies row through a fake backend whose copy_rate hands back fixed figures: each
 * figure printed with its spread (slowest to fastest copy), the warn judged on the fastest
 * pinned copies, a failed copy a fail row. */
#include "backend/compute/compute.h"
#include "tui/doctor/doctor_gpu_internal.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

/* What the fake measures, [pinned][h2d], and what it was asked. */
static struct {
    struct compute_copy_rate rate[2][2];
    int rc;
    int calls;
    size_t bytes;
    int reps;
} fk;

static int fk_copy_rate(struct compute *c, size_t bytes, bool pinned, bool h2d, int reps,
                        struct compute_copy_rate *out) {
    (void)c;
    fk.calls++;
    fk.bytes = bytes;
    fk.reps = reps;
    *out = fk.rate[pinned][h2d];
    return fk.rc;
}

static const char *fk_strerror(int rc) {
    return rc == -EIO ? "the fake's copy failed" : "?";
}

static const struct compute_ops fk_ops = {
    .name = "fake", .copy_rate = fk_copy_rate, .strerror = fk_strerror};

/* best, worst, copies */
static void fk_set(bool pinned, bool h2d, double best, double worst, int copies) {
    fk.rate[pinned][h2d] = (struct compute_copy_rate){best, worst, copies};
}

/* An H100's pinned copies, and pageable ones that vary from copy to copy. */
static void fk_typical(void) {
    memset(&fk, 0, sizeof(fk));
    fk_set(true, true, 55.1, 54.9, 5);
    fk_set(true, false, 55.3, 54.2, 5);
    fk_set(false, true, 8.9, 7.4, 5);
    fk_set(false, false, 15.8, 12.1, 5);
}

static struct doctor_out fk_run(void) {
    struct compute c = {.ops = &fk_ops}; /* info.pci "": no link to judge against */
    struct doctor_out o = {.status = DOCTOR_OK};
    doctor_gpu_copy_rates(&c, &o);
    return o;
}

Test(doctor_copies, each_figure_with_its_spread) {
    fk_typical();
    struct doctor_out o = fk_run();
    cr_assert_eq(o.status, DOCTOR_OK, "%s", o.remedy);
    cr_assert_str_eq(o.value,
                     "pinned: to device 55.1 GB/s (54.9-55.1), to host 55.3 GB/s (54.2-55.3); "
                     "pageable: to device 8.9 GB/s (7.4-8.9), to host 15.8 GB/s (12.1-15.8) "
                     "(256 MiB, one asynchronous copy, worst-best of 5)");
    cr_assert_str_empty(o.remedy);
}

Test(doctor_copies, asks_for_the_doctors_size_and_count) {
    fk_typical();
    fk_run();
    cr_assert_eq(fk.calls, 4);
    cr_assert_eq(fk.bytes, (size_t)DOCTOR_COPY_BYTES);
    cr_assert_eq(fk.bytes, (size_t)256 << 20);
    cr_assert_eq(fk.reps, DOCTOR_COPY_REPS);
}

Test(doctor_copies, count_is_the_fewest_copies_timed) {
    fk_typical();
    fk.rate[false][false].copies = 3;
    struct doctor_out o = fk_run();
    cr_assert(strstr(o.value, "worst-best of 3)"), "%s", o.value);
}

Test(doctor_copies, slow_worst_pinned_copy_alone_does_not_warn) {
    fk_typical();
    fk_set(true, false, 55.3, 1.0, 5);
    struct doctor_out o = fk_run();
    cr_assert_eq(o.status, DOCTOR_OK, "%s", o.remedy);
    cr_assert(strstr(o.value, "to host 55.3 GB/s (1.0-55.3)"), "%s", o.value);
}

Test(doctor_copies, slow_best_pinned_copy_warns) {
    fk_typical();
    fk_set(true, false, 2.5, 2.0, 5);
    struct doctor_out o = fk_run();
    cr_assert_eq(o.status, DOCTOR_WARN);
    cr_assert(strstr(o.remedy, "pinned copies reach 2.5 GB/s"), "%s", o.remedy);
    cr_assert(strstr(o.value, "to host 2.5 GB/s (2.0-2.5)"), "%s", o.value);
}

Test(doctor_copies, failed_copy_fails_the_row) {
    fk_typical();
    fk.rc = -EIO;
    struct doctor_out o = fk_run();
    cr_assert_eq(o.status, DOCTOR_FAIL);
    cr_assert_str_eq(o.value, "copying 256 MiB failed: the fake's copy failed");
    cr_assert_eq(fk.calls, 1);
}
