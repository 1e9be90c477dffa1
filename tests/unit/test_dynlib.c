/* Loading a library at run time into a table (backend/core/dynlib.h), on the fake NCCL: found
 * by its file when the soname is not on the path, once; each refusal one line naming what is
 * missing; a failed load tried again. */
#include "backend/core/dynlib.h"
#include "tests/support/rs_test.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

/* The fake's entry points, as tests/fakes/fake_nccl.c defines them (declared for their types
 * only: the test reaches them through the table). */
int ncclGetVersion(int *version);
const char *ncclGetErrorString(int result);
int ncclNoSuchCall(void);

#define TD_CALLS(X)                                                                                \
    X(ncclGetVersion)                                                                              \
    X(ncclGetErrorString)

struct td_fns {
    TD_CALLS(DYNLIB_MEMBER)
    __typeof__(&ncclNoSuchCall) ncclNoSuchCall;
};

#define TD_SYM(f) DYNLIB_SYM(struct td_fns, f)
static const struct dynlib_sym td_syms[] = {TD_CALLS(TD_SYM)};
static const struct dynlib_sym td_syms_more[] = {TD_CALLS(TD_SYM) TD_SYM(ncclNoSuchCall)};

/* Found by its file (the soname is nowhere on the loader's path), its calls working; a second
 * load keeps the first one's table (nothing is opened or written again). */
Test(dynlib, loads_by_its_file_once) {
    struct td_fns fn;
    memset(&fn, 0, sizeof(fn));
    struct dynlib d =
        DYNLIB_INIT("libringside-none.so.9", RS_FAKE_NCCL, "NCCL", "libnccl2", td_syms, &fn);
    char err[256] = "";
    cr_assert_eq(dynlib_load(&d, err, sizeof(err)), 0, "%s", err);
    cr_assert_not_null(fn.ncclGetVersion);
    int v = 0;
    cr_assert_eq(fn.ncclGetVersion(&v), 0);
    cr_assert_eq(v, 22105);
    memset(&fn, 0, sizeof(fn));
    cr_assert_eq(dynlib_load(&d, err, sizeof(err)), 0);
    cr_assert_null(fn.ncclGetVersion, "loaded once: the table is not written again");
}

/* Under neither name: what to install, in one line. */
Test(dynlib, missing_says_what_to_install) {
    struct td_fns fn;
    struct dynlib d = DYNLIB_INIT("libringside-none.so.9", "/nonexistent/libringside-none.so.9",
                                  "the none library", "libnone9", td_syms, &fn);
    char err[256] = "";
    cr_assert_eq(dynlib_load(&d, err, sizeof(err)), -ENOENT);
    cr_assert_str_eq(err, "libringside-none.so.9 not found (install the none library: libnone9)");
    struct dynlib bare =
        DYNLIB_INIT("libringside-none.so.9", NULL, "none", "libnone9", td_syms, &fn);
    cr_assert_eq(dynlib_load(&bare, err, sizeof(err)), -ENOENT);
    cr_assert_str_eq(err, "libringside-none.so.9 not found (install none: libnone9)");
}

/* A configured file that is there but is no library: the loader's own words after its name. */
Test(dynlib, a_file_that_does_not_load_says_why) {
    char dir[512], path[1024], err[512] = "";
    cr_assert_eq(rs_test_tmpdir(dir, sizeof(dir)), 0);
    cr_assert_eq(rs_test_write_file(dir, "libfake.so.1", "not an ELF file\n", path, sizeof(path)),
                 0);
    struct td_fns fn;
    struct dynlib d = DYNLIB_INIT("libringside-none.so.9", path, "NCCL", "libnccl2", td_syms, &fn);
    cr_assert_eq(dynlib_load(&d, err, sizeof(err)), -ELIBBAD);
    char want[1100];
    snprintf(want, sizeof(want), "cannot load %s: ", path);
    cr_assert_eq(strncmp(err, want, strlen(want)), 0, "%s", err);
    cr_assert_gt(strlen(err), strlen(want), "the loader's reason follows: %s", err);
    cr_assert_null(strstr(err + strlen(want), path), "the file is named once: %s", err);
    cr_assert(strstr(err, " (reinstall libnccl2)"), "%s", err);
    cr_assert_null(strchr(err, '\n'));
    rs_test_rmtree(dir);
}

/* A library without one of the calls: which one, and the load is tried again next time (here
 * with the table it has, which then loads). */
Test(dynlib, a_missing_call_is_named_and_tried_again) {
    struct td_fns fn;
    memset(&fn, 0, sizeof(fn));
    struct dynlib d =
        DYNLIB_INIT("libringside-none.so.9", RS_FAKE_NCCL, "NCCL", "libnccl2", td_syms_more, &fn);
    char err[512] = "", want[600];
    cr_assert_eq(dynlib_load(&d, err, sizeof(err)), -ENOSYS);
    snprintf(want, sizeof(want), "%s lacks ncclNoSuchCall (NCCL too old?)", RS_FAKE_NCCL);
    cr_assert_str_eq(err, want);
    cr_assert_eq(dynlib_load(&d, err, sizeof(err)), -ENOSYS, "a failed load is not kept");
    d.n_syms = sizeof(td_syms) / sizeof(td_syms[0]);
    cr_assert_eq(dynlib_load(&d, err, sizeof(err)), 0, "%s", err);
    cr_assert_not_null(fn.ncclGetErrorString);
}
