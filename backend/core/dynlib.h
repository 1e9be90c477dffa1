/* A library loaded at run time (dlopen) on first use and kept for the process's life, its entry
 * points resolved into a table of function pointers: so a command that never needs it does not
 * map it (and everything it links), and a machine without it gets one line saying what to
 * install instead of a binary that will not start. The table is built from an X-macro list of
 * the symbols, typed by the library's own header:
 *
 *     #define FOO_CALLS(X) X(foo_open) X(foo_close)
 *     struct foo_fns { FOO_CALLS(DYNLIB_MEMBER) };
 *     static struct foo_fns foo_fn;
 *     static const struct dynlib_sym foo_syms[] = { FOO_CALLS(FOO_SYM) };
 *                                   (#define FOO_SYM(f) DYNLIB_SYM(struct foo_fns, f))
 *     static struct dynlib foo_lib = DYNLIB_INIT("libfoo.so.1", FOO_PATH, "foo", "libfoo1",
 *                                                foo_syms, &foo_fn);
 *     ... dynlib_load(&foo_lib, err, errlen) == 0, then foo_fn.foo_open(...) */
#ifndef RINGSIDE_BACKEND_CORE_DYNLIB_H
#define RINGSIDE_BACKEND_CORE_DYNLIB_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

/* A table member typed as the header declares f. */
#define DYNLIB_MEMBER(f) __typeof__(&f) f;
/* Where symbol f's address goes in a table of type T. */
#define DYNLIB_SYM(T, f) {#f, offsetof(T, f)},

struct dynlib_sym {
    const char *name; /* the symbol dlsym looks up */
    size_t off;       /* its pointer's offset in the table */
};

struct dynlib {
    /* ---- the caller's, constant ---- */
    const char *soname;            /* tried first, on the loader's path ("libcurl-gnutls.so.4") */
    const char *path;              /* then this file, the one the build was configured with; NULL or
                                    * the soname: none */
    const char *what;              /* the library's name in messages ("libcurl") */
    const char *package;           /* what to install when it is missing ("libcurl3-gnutls") */
    const struct dynlib_sym *syms; /* every entry point, each required */
    size_t n_syms;
    void *table; /* set by the load that succeeds (a failed one may leave it partly written):
                  * read only after dynlib_load returned 0 */
    /* ---- dynlib's ---- */
    pthread_mutex_t lock;
    bool loaded; /* under lock */
};

#define DYNLIB_INIT(soname, path, what, package, syms, table)                                      \
    {                                                                                              \
        (soname), (path), (what), (package), (syms), sizeof(syms) / sizeof((syms)[0]), (table),    \
            PTHREAD_MUTEX_INITIALIZER, false                                                       \
    }

/* Load d and resolve its table, unless an earlier call did; safe from any thread. 0; or
 * -ENOENT (found under neither name: "libfoo.so.1 not found (install foo: libfoo1)"), -ELIBBAD
 * (the configured file exists but does not load: "cannot load PATH: <the loader's
 * reason> (reinstall libfoo1)") or -ENOSYS (a
 * symbol missing: "PATH lacks foo_open (foo too old?)"), with err one line and the library
 * not kept. A failed load is tried again by the next call. */
int dynlib_load(struct dynlib *d, char *err, size_t errlen);

#endif
