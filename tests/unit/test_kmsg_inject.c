/* The --inject kmsg:FILE replay schedule: due times from dmesg, journalctl and record stamps,
 * undated lines, the 10 s cap, stamps going backwards, skipped lines, the limits, loading. */
#include "backend/kmsg/kmsg_inject.h"
#include "tests/support/rs_test.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TestSuite(kmsg_inject, .timeout = 60);

#define KI_MS 1000000ull /* ns */

/* The schedule of text, which must parse. */
static void ki_parse(struct kmsg_inject *s, const char *text) {
    char err[256] = "";
    int rc = kmsg_inject_parse(s, text, strlen(text), err, sizeof(err));
    cr_assert_eq(rc, 0, "parse: %d %s", rc, err);
}

/* Line i is due at due_ns, is file line lineno, and reads msg once parsed. */
static void ki_expect(const struct kmsg_inject *s, uint32_t i, uint64_t due_ns, uint32_t lineno,
                      const char *msg) {
    cr_assert_lt(i, s->n);
    const struct kmsg_inject_line *l = &s->lines[i];
    cr_expect_eq(l->due_ns, due_ns, "line %u due %llu, expected %llu", i,
                 (unsigned long long)l->due_ns, (unsigned long long)due_ns);
    cr_expect_eq(l->lineno, lineno, "line %u is file line %u, expected %u", i, l->lineno, lineno);
    struct kmsg_line out;
    kmsg_inject_line(s, l, &out);
    cr_expect(!out.has_ts, "line %u kept its stamp", i);
    cr_expect(out.len == strlen(msg) && memcmp(out.text, msg, out.len) == 0,
              "line %u reads '%.*s', expected '%s'", i, (int)out.len, out.text, msg);
}

Test(kmsg_inject, dmesg_stamps_give_offsets_from_the_first) {
    struct kmsg_inject s;
    ki_parse(&s, "[   12.345678] amdgpu: one\n"
                 "[   12.845678] amdgpu: two\n"
                 "[   14.000000] amdgpu: three");
    cr_assert_eq(s.n, 3);
    ki_expect(&s, 0, 0, 1, "amdgpu: one");
    ki_expect(&s, 1, 500 * KI_MS, 2, "amdgpu: two");
    ki_expect(&s, 2, 1654322000ull, 3, "amdgpu: three"); /* no newline at the end: still a line */
    cr_expect_eq(kmsg_inject_span_ns(&s), 1654322000ull);
    kmsg_inject_fini(&s);
}

Test(kmsg_inject, journalctl_short_monotonic_and_saved_records) {
    struct kmsg_inject s;
    ki_parse(&s, "[ 4181.270318] host kernel: amdgpu: ring timeout\n"
                 "[ 4181.770318] host kernel: amdgpu: next\n"
                 "3,812,4182270318,-;amdgpu: a record\n");
    cr_assert_eq(s.n, 3);
    ki_expect(&s, 0, 0, 1, "amdgpu: ring timeout");
    ki_expect(&s, 1, 500 * KI_MS, 2, "amdgpu: next");
    ki_expect(&s, 2, 1000 * KI_MS, 3, "amdgpu: a record"); /* the record's usec stamp */
    kmsg_inject_fini(&s);
}

Test(kmsg_inject, undated_lines_are_due_with_the_line_before) {
    struct kmsg_inject s;
    ki_parse(&s, "amdgpu: before any stamp\n"
                 "Nov 24 14:52:39 host kernel: amdgpu: wall clock only\n"
                 "[ 100.000000] amdgpu: first stamp\n"
                 "amdgpu: undated\n"
                 "[ 101.000000] amdgpu: a second later\n"
                 "amdgpu: undated too\n");
    cr_assert_eq(s.n, 6);
    ki_expect(&s, 0, 0, 1, "amdgpu: before any stamp");
    ki_expect(&s, 1, 0, 2, "amdgpu: wall clock only");
    ki_expect(&s, 2, 0, 3, "amdgpu: first stamp");
    ki_expect(&s, 3, 0, 4, "amdgpu: undated");
    ki_expect(&s, 4, 1000 * KI_MS, 5, "amdgpu: a second later");
    ki_expect(&s, 5, 1000 * KI_MS, 6, "amdgpu: undated too");
    kmsg_inject_fini(&s);
}

Test(kmsg_inject, long_silences_are_cut_to_ten_seconds) {
    struct kmsg_inject s;
    ki_parse(&s, "[ 10.000000] a\n"
                 "[ 3610.000000] an hour later\n"
                 "[ 3620.000000] exactly ten seconds later\n"
                 "[ 3620.500000] half a second later\n");
    cr_assert_eq(s.n, 4);
    ki_expect(&s, 1, KMSG_INJECT_GAP_MAX_NS, 2, "an hour later");
    ki_expect(&s, 2, 2 * KMSG_INJECT_GAP_MAX_NS, 3, "exactly ten seconds later");
    ki_expect(&s, 3, 2 * KMSG_INJECT_GAP_MAX_NS + 500 * KI_MS, 4, "half a second later");
    kmsg_inject_fini(&s);
}

Test(kmsg_inject, stamps_going_backwards_are_a_gap_of_zero) {
    struct kmsg_inject s;
    ki_parse(&s, "[ 500.000000] before the reboot\n"
                 "[   1.000000] after it\n"
                 "[   1.250000] a quarter second on\n");
    cr_assert_eq(s.n, 3);
    ki_expect(&s, 1, 0, 2, "after it");
    ki_expect(&s, 2, 250 * KI_MS, 3, "a quarter second on"); /* from the line before */
    kmsg_inject_fini(&s);
}

Test(kmsg_inject, key_value_and_blank_lines_are_skipped) {
    struct kmsg_inject s;
    ki_parse(&s, "6,1,1000000,-;amdgpu 0000:03:00.0: amdgpu: GPU reset begin!\n"
                 " SUBSYSTEM=pci\n"
                 " DEVICE=+pci:0000:03:00.0\n"
                 "\n"
                 "  \r\n"
                 "6,2,1200000,-;amdgpu: next\r\n");
    cr_assert_eq(s.n, 2);
    ki_expect(&s, 0, 0, 1, "amdgpu 0000:03:00.0: amdgpu: GPU reset begin!");
    cr_expect_eq(s.lines[1].due_ns, 200 * KI_MS);
    cr_expect_eq(s.lines[1].lineno, 6, "the file's own line number");
    kmsg_inject_fini(&s);
}

Test(kmsg_inject, empty_file_is_an_empty_schedule) {
    struct kmsg_inject s;
    ki_parse(&s, "");
    cr_expect_eq(s.n, 0);
    cr_expect_eq(kmsg_inject_span_ns(&s), 0);
    cr_expect_eq(kmsg_inject_next_ns(&s), UINT64_MAX);
    cr_expect_null(kmsg_inject_due(&s, UINT64_MAX));
    kmsg_inject_fini(&s);
    kmsg_inject_fini(&s); /* twice is fine */
    struct kmsg_inject zero = {0};
    cr_expect_null(kmsg_inject_due(&zero, 0));
    kmsg_inject_fini(&zero);
}

Test(kmsg_inject, due_feeds_in_order_and_next_tells_when) {
    struct kmsg_inject s;
    ki_parse(&s, "[ 1.0] a\nundated\n[ 1.3] b\n[ 2.0] c\n");
    cr_assert_eq(kmsg_inject_next_ns(&s), 0);
    const struct kmsg_inject_line *l = kmsg_inject_due(&s, 0);
    cr_assert_not_null(l);
    cr_expect_eq(l->lineno, 1);
    cr_assert_not_null(l = kmsg_inject_due(&s, 0));
    cr_expect_eq(l->lineno, 2, "the undated line comes with the one before");
    cr_expect_null(kmsg_inject_due(&s, 299 * KI_MS));
    cr_expect_eq(kmsg_inject_next_ns(&s), 300 * KI_MS);
    cr_assert_not_null(l = kmsg_inject_due(&s, 5000 * KI_MS));
    cr_expect_eq(l->lineno, 3);
    cr_assert_not_null(l = kmsg_inject_due(&s, 5000 * KI_MS));
    cr_expect_eq(l->lineno, 4);
    cr_expect_null(kmsg_inject_due(&s, UINT64_MAX));
    cr_expect_eq(kmsg_inject_next_ns(&s), UINT64_MAX);
    kmsg_inject_fini(&s);
}

Test(kmsg_inject, size_and_line_limits) {
    size_t n = KMSG_INJECT_MAX_BYTES + 1;
    char *big = malloc(n);
    cr_assert_not_null(big);
    memset(big, 'x', n);
    char err[256] = "";
    struct kmsg_inject s;
    cr_expect_eq(kmsg_inject_parse(&s, big, n, err, sizeof(err)), -EFBIG);
    cr_expect(strstr(err, "8 MiB"), "%s", err);
    cr_expect_eq(s.n, 0);
    /* exactly the limit of lines is fine, one more is not */
    for (size_t i = 0; i < KMSG_INJECT_MAX_LINES + 1; i++)
        memcpy(big + 2 * i, "x\n", 2);
    cr_expect_eq(kmsg_inject_parse(&s, big, 2 * (size_t)KMSG_INJECT_MAX_LINES, err, sizeof(err)), 0,
                 "%s", err);
    cr_expect_eq(s.n, KMSG_INJECT_MAX_LINES);
    kmsg_inject_fini(&s);
    err[0] = '\0';
    cr_expect_eq(
        kmsg_inject_parse(&s, big, 2 * (size_t)KMSG_INJECT_MAX_LINES + 2, err, sizeof(err)),
        -EFBIG);
    cr_expect(strstr(err, "100000"), "%s", err);
    cr_expect_null(s.lines);
    free(big);
}

Test(kmsg_inject, load_reads_the_file_and_names_it_in_errors) {
    char dir[256], path[512], err[512] = "";
    cr_assert_eq(rs_test_tmpdir(dir, sizeof(dir)), 0);
    cr_assert_eq(rs_test_write_file(dir, "a:b.log", "[ 5.0] one\n[ 5.5] two\n", path, sizeof(path)),
                 0);
    struct kmsg_inject s;
    cr_assert_eq(kmsg_inject_load(&s, path, err, sizeof(err)), 0, "%s", err);
    cr_expect_eq(s.n, 2);
    cr_expect_eq(kmsg_inject_span_ns(&s), 500 * KI_MS);
    kmsg_inject_fini(&s);
    char missing[600];
    snprintf(missing, sizeof(missing), "%s/missing.log", dir);
    cr_expect_eq(kmsg_inject_load(&s, missing, err, sizeof(err)), -ENOENT);
    cr_expect(strstr(err, "--inject kmsg:") && strstr(err, "missing.log: No such file"), "%s", err);
    cr_expect_eq(kmsg_inject_load(&s, dir, err, sizeof(err)), -EINVAL, "a directory");
    cr_expect(strstr(err, "not a regular file"), "%s", err);
    /* a file over the limit, found from its size before it is read */
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    cr_assert_eq(fseek(f, KMSG_INJECT_MAX_BYTES, SEEK_SET), 0);
    fputc('\n', f);
    fclose(f);
    cr_expect_eq(kmsg_inject_load(&s, path, err, sizeof(err)), -EFBIG);
    cr_expect(strstr(err, "a:b.log: larger than the 8 MiB allowed"), "%s", err);
    rs_test_rmtree(dir);
}
