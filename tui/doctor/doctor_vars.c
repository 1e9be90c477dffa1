/* ringside doctor: the environment variables that change how the GPU runtimes and PyTorch
 * behave, one row each: "not set", or the value with what it does and whether it is sane for
 * the GPUs present. Read only through doctor_getenv. */
#include "backend/memory/mem_conf.h"
#include "tui/doctor/doctor.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DOCTOR_VARS "variables"

/* A variable's verdict: what its value does, and a status with its remedy. */
struct doctor_var_verdict {
    enum doctor_status st;
    char what[200];
    char remedy[400];
};

#define DOCTOR_VAR_SAY(field, ...) snprintf(v->field, sizeof(v->field), __VA_ARGS__)

static size_t doctor_vars_count(const struct doctor_env *e, bool amd) {
    size_t c = 0;
    for (size_t i = 0; i < e->n_gpus; i++)
        c += amd ? e->gpus[i].amd : e->gpus[i].nvidia;
    return c;
}

/* s is a non-empty run of digits. */
static bool doctor_vars_digits(const char *s, size_t n) {
    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isdigit((unsigned char)s[i]))
            return false;
    return true;
}

/* An integer in [lo, hi] spelled with digits only. */
static bool doctor_vars_int(const char *s, long lo, long hi, long *out) {
    if (!doctor_vars_digits(s, strlen(s)) || strlen(s) > 9)
        return false;
    *out = strtol(s, NULL, 10);
    return *out >= lo && *out <= hi;
}

/* HIP_VISIBLE_DEVICES, ROCR_VISIBLE_DEVICES, CUDA_VISIBLE_DEVICES: a comma list of indices
 * below the vendor's GPU count, or UUIDs ("GPU-...", "MIG-..."). */
static void doctor_vars_visible(const struct doctor_env *e, const char *name, const char *val,
                                struct doctor_var_verdict *v) {
    bool cuda = strncmp(name, "CUDA", 4) == 0, rocr = strncmp(name, "ROCR", 4) == 0;
    size_t amd = doctor_vars_count(e, true), nv = doctor_vars_count(e, false);
    size_t count = cuda ? nv : rocr ? amd : (amd ? amd : nv);
    const char *vendor = cuda ? "NVIDIA " : rocr || amd ? "AMD " : "";
    DOCTOR_VAR_SAY(what, "%s programs see only these GPUs, renumbered from 0",
                   cuda   ? "CUDA"
                   : rocr ? "ROCm"
                          : "HIP");
    if (val[0] == '\0' || strcmp(val, "-1") == 0) {
        v->st = DOCTOR_WARN;
        DOCTOR_VAR_SAY(what, "hides every GPU");
        DOCTOR_VAR_SAY(remedy, "unset %s, or list the GPUs to use: %s=0", name, name);
        return;
    }
    for (const char *p = val; *p;) {
        size_t len = strcspn(p, ",");
        bool uuid = len > 4 && (strncmp(p, "GPU-", 4) == 0 || strncmp(p, "MIG-", 4) == 0);
        if (!uuid && !doctor_vars_digits(p, len)) {
            v->st = DOCTOR_WARN;
            DOCTOR_VAR_SAY(remedy,
                           "'%.*s' is neither a GPU index nor a UUID (GPU-...): the runtime stops "
                           "reading the list there; use e.g. %s=0,1",
                           (int)(len > 40 ? 40 : len), p, name);
            return;
        }
        if (!uuid && count > 0) {
            long idx = strtol(p, NULL, 10);
            if (len > 9 || (size_t)idx >= count) {
                v->st = DOCTOR_WARN;
                DOCTOR_VAR_SAY(remedy,
                               "index %.*s but only %zu %sGPU%s: that entry and those after it "
                               "are ignored; the highest index is %zu",
                               (int)(len > 12 ? 12 : len), p, count, vendor, count == 1 ? "" : "s",
                               count - 1);
                return;
            }
        }
        p += len;
        p += *p == ',';
    }
}

/* "10.3.0" -> "gfx1030", "9.0.10" -> "gfx90a"; false unless the value is N.N.N. */
static bool doctor_vars_gfx(const char *val, char *arch, size_t n) {
    unsigned maj, min, step;
    int used = 0;
    if (!isdigit((unsigned char)val[0]) ||
        sscanf(val, "%3u.%3u.%3u%n", &maj, &min, &step, &used) != 3 || val[used] != '\0')
        return false;
    for (const char *p = val; *p; p++)
        if (!isdigit((unsigned char)*p) && *p != '.')
            return false;
    if (min > 15 || step > 15)
        return false;
    snprintf(arch, n, "gfx%u%x%x", maj, min, step);
    return true;
}

/* Archs ROCm supports natively (no override needed) besides those this build has kernels for. */
static const char doctor_vars_rocm_archs[] =
    "gfx908;gfx90a;gfx940;gfx941;gfx942;gfx1030;gfx1100;gfx1101;gfx1102;gfx1200;gfx1201";

static void doctor_vars_override(const struct doctor_env *e, const char *name, const char *val,
                                 struct doctor_var_verdict *v) {
    char arch[24];
    if (!doctor_vars_gfx(val, arch, sizeof(arch))) {
        v->st = DOCTOR_FAIL;
        DOCTOR_VAR_SAY(what, "not a gfx version (the form is N.N.N)");
        DOCTOR_VAR_SAY(remedy,
                       "unset %s, or use the form major.minor.stepping: %s=10.3.0 runs gfx1030 "
                       "kernels",
                       name, name);
        return;
    }
    DOCTOR_VAR_SAY(what, "the runtime treats every AMD GPU as %s and loads %s kernels on it", arch,
                   arch);
    for (size_t i = 0; i < e->n_gpus; i++) {
        const struct doctor_gpu *g = &e->gpus[i];
        if (!g->amd || !g->arch[0] || strcmp(g->arch, arch) == 0)
            continue;
        if (doctor_arch_listed(e->built_archs, g->arch) ||
            doctor_arch_listed(doctor_vars_rocm_archs, g->arch)) {
            v->st = DOCTOR_WARN;
            DOCTOR_VAR_SAY(remedy,
                           "unset %s: gpu %zu (%.31s) is supported natively, and the override "
                           "makes it run kernels built for %s",
                           name, i, g->arch, arch);
            return;
        }
    }
}

static void doctor_vars_bool(const char *name, const char *val, const char *if0, const char *if1,
                             struct doctor_var_verdict *v) {
    if (strcmp(val, "0") == 0 || strcmp(val, "1") == 0) {
        DOCTOR_VAR_SAY(what, "%s", val[0] == '1' ? if1 : if0);
        return;
    }
    v->st = DOCTOR_WARN;
    DOCTOR_VAR_SAY(what, "not 0 or 1");
    DOCTOR_VAR_SAY(remedy, "set %s=0 or %s=1 (or unset it)", name, name);
}

static void doctor_vars_sdma(const struct doctor_env *e, const char *name, const char *val,
                             struct doctor_var_verdict *v) {
    (void)e;
    doctor_vars_bool(name, val,
                     "copies use blit kernels instead of the SDMA engines (a workaround for SDMA "
                     "hangs; transfers are slower)",
                     "copies use the SDMA engines (the default)", v);
}

static void doctor_vars_hipblaslt(const struct doctor_env *e, const char *name, const char *val,
                                  struct doctor_var_verdict *v) {
    (void)e;
    doctor_vars_bool(name, val, "PyTorch's ROCm matmuls use rocBLAS",
                     "PyTorch's ROCm matmuls prefer hipBLASLt over rocBLAS", v);
}

/* PyTorch's allocator settings: mem_conf_parse's keys, plus backend:native|cudaMallocAsync. */
static void doctor_vars_alloc(const struct doctor_env *e, const char *name, const char *val,
                              struct doctor_var_verdict *v) {
    (void)e;
    DOCTOR_VAR_SAY(what, "PyTorch's caching-allocator settings (%s builds)",
                   strstr(name, "HIP") ? "ROCm" : "CUDA");
    char rest[512] = "", err[256] = "";
    for (const char *p = val; *p;) {
        size_t len = strcspn(p, ",");
        const char *q = p;
        while (q < p + len && isspace((unsigned char)*q))
            q++;
        if (strncmp(q, "backend", 7) == 0 && (q[7] == ':' || isspace((unsigned char)q[7]))) {
            const char *b = strchr(q, ':');
            b = b && b < p + len ? b + 1 : p + len;
            while (b < p + len && isspace((unsigned char)*b))
                b++;
            size_t bl = (size_t)(p + len - b);
            while (bl > 0 && isspace((unsigned char)b[bl - 1]))
                bl--;
            if (!((bl == 6 && strncmp(b, "native", 6) == 0) ||
                  (bl == 14 && strncmp(b, "cudaMallocAsync", 14) == 0))) {
                snprintf(err, sizeof(err), "backend '%.*s' (known: native, cudaMallocAsync)",
                         (int)(bl > 40 ? 40 : bl), b);
                break;
            }
        } else {
            size_t u = strlen(rest);
            snprintf(rest + u, sizeof(rest) - u, "%s%.*s", u ? "," : "", (int)len, p);
        }
        p += len;
        p += *p == ',';
    }
    struct mem_conf c;
    mem_conf_default(&c);
    if (!err[0] && mem_conf_parse(rest, &c, err, sizeof(err)) == 0)
        return;
    v->st = DOCTOR_FAIL;
    DOCTOR_VAR_SAY(remedy, "%.*s; PyTorch refuses it at the first allocation: fix it or unset %s",
                   200, err, name);
}

static void doctor_vars_serialize(const struct doctor_env *e, const char *name, const char *val,
                                  struct doctor_var_verdict *v) {
    (void)e;
    static const char *const what[] = {
        "kernels launch asynchronously (the default)", "waits for the GPU before each kernel",
        "waits for each kernel to finish", "waits before and after each kernel"};
    long n;
    if (!doctor_vars_int(val, 0, 3, &n)) {
        v->st = DOCTOR_WARN;
        DOCTOR_VAR_SAY(what, "not 0..3");
        DOCTOR_VAR_SAY(remedy, "unset %s (0..3: 1 before, 2 after, 3 both)", name);
        return;
    }
    DOCTOR_VAR_SAY(what, "%s", what[n]);
    if (n > 0) {
        v->st = DOCTOR_WARN;
        DOCTOR_VAR_SAY(remedy,
                       "a debugging aid that slows every launch: unset %s outside debugging", name);
    }
}

static void doctor_vars_alloc_pct(const struct doctor_env *e, const char *name, const char *val,
                                  struct doctor_var_verdict *v) {
    (void)e;
    long n;
    if (doctor_vars_int(val, 1, 100, &n)) {
        DOCTOR_VAR_SAY(what, "one allocation may take up to %ld%% of a GPU's memory", n);
        return;
    }
    v->st = DOCTOR_WARN;
    DOCTOR_VAR_SAY(what, "not a percentage 1..100");
    DOCTOR_VAR_SAY(remedy, "set %s to 1..100 (or unset it)", name);
}

struct doctor_var {
    const char *name;
    void (*check)(const struct doctor_env *e, const char *name, const char *val,
                  struct doctor_var_verdict *v);
};

static const struct doctor_var doctor_vars[] = {
    {"HIP_VISIBLE_DEVICES", doctor_vars_visible},
    {"CUDA_VISIBLE_DEVICES", doctor_vars_visible},
    {"ROCR_VISIBLE_DEVICES", doctor_vars_visible},
    {"HSA_OVERRIDE_GFX_VERSION", doctor_vars_override},
    {"HSA_ENABLE_SDMA", doctor_vars_sdma},
    {"PYTORCH_HIP_ALLOC_CONF", doctor_vars_alloc},
    {"PYTORCH_CUDA_ALLOC_CONF", doctor_vars_alloc},
    {"TORCH_BLAS_PREFER_HIPBLASLT", doctor_vars_hipblaslt},
    {"AMD_SERIALIZE_KERNEL", doctor_vars_serialize},
    {"GPU_MAX_ALLOC_PERCENT", doctor_vars_alloc_pct},
};

void doctor_check_vars(const struct doctor_env *e, struct doctor_report *r) {
    for (size_t i = 0; i < sizeof(doctor_vars) / sizeof(doctor_vars[0]); i++) {
        const char *name = doctor_vars[i].name, *val = doctor_getenv(e, name);
        if (!val) {
            doctor_add(r, DOCTOR_VARS, name, DOCTOR_OK, "not set");
            continue;
        }
        struct doctor_var_verdict v = {.st = DOCTOR_OK};
        doctor_vars[i].check(e, name, val, &v);
        size_t len = strlen(val);
        struct doctor_row *row = doctor_add(r, DOCTOR_VARS, name, v.st, "=%.*s%s: %s", 60, val,
                                            len > 60 ? "..." : "", v.what);
        if (v.remedy[0])
            doctor_remedy(row, "%s", v.remedy);
    }
}
