/* Loading NCCL (or RCCL, its AMD build with the same API) at run time, so one binary runs on
 * machines without it and says in one line what is missing, and turning its result codes into
 * errno values and text. */
#include "backend/comm/comm_nccl_internal.h"
#include "backend/core/errbuf.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

struct comm_nccl_sym {
    size_t off;
    const char *name;
};

#define COMM_NCCL_FN(m) offsetof(struct comm_nccl_fns, m)

static const struct comm_nccl_sym comm_nccl_syms[] = {
    {COMM_NCCL_FN(get_version), "ncclGetVersion"},
    {COMM_NCCL_FN(get_error_string), "ncclGetErrorString"},
    {COMM_NCCL_FN(get_unique_id), "ncclGetUniqueId"},
    {COMM_NCCL_FN(init_rank_config), "ncclCommInitRankConfig"},
    {COMM_NCCL_FN(get_async_error), "ncclCommGetAsyncError"},
    {COMM_NCCL_FN(all_reduce), "ncclAllReduce"},
    {COMM_NCCL_FN(finalize), "ncclCommFinalize"},
    {COMM_NCCL_FN(destroy), "ncclCommDestroy"},
    {COMM_NCCL_FN(abort), "ncclCommAbort"},
};

/* The table stores dlsym's void * into function-pointer members (POSIX guarantees the sizes). */
_Static_assert(sizeof(int (*)(void)) == sizeof(void *), "function pointers fit void *");

/* Where to get the library, for the not-found message. */
static const char *comm_nccl_hint(const struct comm_nccl *s) {
    return strcmp(s->label, "RCCL") == 0 ? "install RCCL (rccl)" : "install NCCL (libnccl2)";
}

static int comm_nccl_open_lib(struct comm_nccl *s, const char *path, char *err, size_t errlen) {
    /* NODELETE: NCCL keeps process-wide state (its bootstrap and proxy threads' keys, handlers
     * it registered with the CUDA runtime) that must outlive a closed group. */
    s->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (s->lib)
        return 0;
    const char *why = dlerror();
    if (!strchr(path, '/'))
        return errbuf_set(err, errlen, -ENOENT, "%s not found: %s or give --comm-lib PATH", path,
                          comm_nccl_hint(s));
    if (access(path, F_OK) != 0)
        return errbuf_set(err, errlen, -ENOENT, "%s not found", path);
    /* a file that exists but does not load (not a library, the wrong architecture) says why */
    return errbuf_set(err, errlen, -ELIBBAD, "cannot load %s: %s", path, why ? why : "?");
}

int comm_nccl_load(struct comm_nccl *s, const char *path, char *err, size_t errlen) {
    if (!path)
        path = COMM_NCCL_DEFAULT_LIB;
    snprintf(s->label, sizeof(s->label), "%s", strstr(path, "rccl") ? "RCCL" : "NCCL");
    int rc = comm_nccl_open_lib(s, path, err, errlen);
    if (rc != 0)
        return rc;
    for (size_t i = 0; i < sizeof(comm_nccl_syms) / sizeof(comm_nccl_syms[0]); i++) {
        void *p = dlsym(s->lib, comm_nccl_syms[i].name);
        if (!p) {
            dlclose(s->lib);
            s->lib = NULL;
            return errbuf_set(err, errlen, -ENOSYS, "%s lacks %s (not an %s 2.14+ library?)", path,
                              comm_nccl_syms[i].name, s->label);
        }
        memcpy((char *)&s->fn + comm_nccl_syms[i].off, &p, sizeof(p));
    }
    return 0;
}

void comm_nccl_version_text(const struct comm_nccl *s, int code, char *buf, size_t n) {
    int major, minor, patch;
    if (code >= 10000) { /* 2.9 and later: X * 10000 + Y * 100 + Z */
        major = code / 10000;
        minor = code / 100 % 100;
    } else { /* up to 2.8: X * 1000 + Y * 100 + Z */
        major = code / 1000;
        minor = code / 100 % 10;
    }
    patch = code % 100;
    snprintf(buf, n, "%s %d.%d.%d", s->label, major, minor, patch);
}

static int comm_nccl_errno(int result) {
    switch (result) {
    case COMM_NCCL_INVALID_ARGUMENT:
    case COMM_NCCL_INVALID_USAGE:
        return -EINVAL;
    case COMM_NCCL_REMOTE_ERROR:
        return -ECONNRESET; /* a peer failed or went away */
    case COMM_NCCL_TIMEOUT:
        return -ETIMEDOUT;
    case COMM_NCCL_INTERNAL_ERROR:
        return -EPROTO;
    default: /* CUDA and system errors */
        return -EIO;
    }
}

int comm_nccl_err(const struct comm_nccl *s, const char *call, int result, char *err,
                  size_t errlen) {
    /* the library's own text already says which NCCL_DEBUG level tells more */
    const char *text = s->fn.get_error_string ? s->fn.get_error_string(result) : NULL;
    if (!text)
        return errbuf_set(err, errlen, comm_nccl_errno(result), "%s failed: result %d", call,
                          result);
    return errbuf_set(err, errlen, comm_nccl_errno(result), "%s failed: %s", call, text);
}
