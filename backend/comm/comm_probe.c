/* Asking a communication library what it is, without forming a group: which file the loader
 * found, its version, and whether the NCCL communicator could use it (for ringside doctor). */
#define _GNU_SOURCE /* dladdr */
#include "backend/comm/comm_nccl_internal.h"
#include "backend/core/errbuf.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

/* How to get the library, by its family. */
static const char *comm_probe_install(const char *name) {
    if (strstr(name, "rccl"))
        return "install RCCL: apt install rccl from ROCm's repository (Debian: librccl1), or "
               "give --comm-lib PATH";
    return "install NCCL: apt install libnccl2 from NVIDIA's CUDA repository, or give "
           "--comm-lib PATH (PyTorch's wheels ship one: site-packages/nvidia/nccl/lib)";
}

/* The file the library was loaded from, found through one of its entry points. */
static void comm_probe_path(const struct comm_nccl *s, char *out, size_t n) {
    void *sym;
    Dl_info info;
    memcpy(&sym, &s->fn.get_version, sizeof(sym));
    if (dladdr(sym, &info) != 0 && info.dli_fname)
        snprintf(out, n, "%s", info.dli_fname);
}

int comm_lib_probe(const char *lib, struct comm_lib_info *out, char *err, size_t errlen) {
    struct comm_nccl s;
    memset(&s, 0, sizeof(s));
    memset(out, 0, sizeof(*out));
    snprintf(out->name, sizeof(out->name), "%s", lib ? lib : COMM_NCCL_DEFAULT_LIB);
    snprintf(out->install, sizeof(out->install), "%s", comm_probe_install(out->name));
    int rc = comm_nccl_load(&s, out->name, err, errlen);
    if (rc != 0)
        return rc;
    comm_probe_path(&s, out->path, sizeof(out->path));
    int code = 0, r = s.fn.get_version(&code);
    if (r != COMM_NCCL_SUCCESS)
        rc = comm_nccl_err(&s, "ncclGetVersion", r, err, errlen);
    if (rc == 0) {
        out->version_code = code;
        comm_nccl_version_text(&s, code, out->version, sizeof(out->version));
        if (code < COMM_NCCL_MIN_VERSION)
            rc = errbuf_set(err, errlen, -ENOTSUP,
                            "%s is too old: need 2.14 or newer (non-blocking communicators)",
                            out->version);
    }
    dlclose(s.lib); /* loaded RTLD_NODELETE: it stays mapped */
    return rc;
}
