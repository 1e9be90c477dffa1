/* ringside doctor: the environment rows (versions, GPUs and their kernel archs, device-node
 * permissions, kernel log and debugfs), judged for e->uid / e->groups from stat() under e->root;
 * nothing here calls access() or looks at the real process's identity. */
#include "tui/doctor/doctor.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define DOCTOR_ENV  "environment"
#define DOCTOR_PERM "permissions"

bool doctor_arch_listed(const char *list, const char *arch) {
    size_t n = strlen(arch);
    if (!list || n == 0)
        return false;
    for (const char *p = list; *p;) {
        p += strspn(p, " ;,");
        size_t len = strcspn(p, " ;,");
        if (len == n && strncmp(p, arch, n) == 0)
            return true;
        p += len;
    }
    return false;
}

static bool doctor_env_stat(const struct doctor_env *e, const char *path, struct stat *st) {
    char full[1024];
    snprintf(full, sizeof(full), "%s%s", e->root, path);
    return stat(full, st) == 0;
}

static bool doctor_env_in_group(const struct doctor_env *e, gid_t gid) {
    for (size_t i = 0; i < e->n_groups; i++)
        if (e->groups[i] == gid)
            return true;
    return false;
}

/* The rwx bits (4/2/1) that st's mode grants the identity: owner, else group, else other. */
static unsigned doctor_env_perm(const struct doctor_env *e, const struct stat *st) {
    if (e->uid == 0)
        return 7;
    if (st->st_uid == e->uid)
        return (st->st_mode >> 6) & 7;
    if (doctor_env_in_group(e, st->st_gid))
        return (st->st_mode >> 3) & 7;
    return st->st_mode & 7;
}

/* Look a group up in root/etc/group by gid (name non-NULL: by name, gid out). */
static bool doctor_env_group(const struct doctor_env *e, const char *name, gid_t *gid, char *out,
                             size_t n) {
    char full[1024], line[1024];
    snprintf(full, sizeof(full), "%s/etc/group", e->root);
    FILE *f = fopen(full, "r");
    if (!f)
        return false;
    bool found = false;
    while (!found && fgets(line, sizeof(line), f)) {
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2)
            continue;
        *c1 = '\0';
        gid_t g = (gid_t)strtoul(c2 + 1, NULL, 10);
        found = name ? strcmp(line, name) == 0 : g == *gid;
        if (found) {
            *gid = g;
            if (out)
                snprintf(out, n, "%.*s", (int)n - 1, line);
        }
    }
    fclose(f);
    return found;
}

static void doctor_env_group_name(const struct doctor_env *e, gid_t gid, char *out, size_t n) {
    if (!doctor_env_group(e, NULL, &gid, out, n))
        snprintf(out, n, "%u", (unsigned)gid);
}

static size_t doctor_env_count(const struct doctor_env *e, bool amd) {
    size_t c = 0;
    for (size_t i = 0; i < e->n_gpus; i++)
        c += amd ? e->gpus[i].amd : e->gpus[i].nvidia;
    return c;
}

static const char *doctor_env_user(const struct doctor_env *e) {
    return e->user && e->user[0] ? e->user : "$USER";
}

/* ---- versions ---- */

static void doctor_env_driver(const struct doctor_env *e, struct doctor_report *r, const char *name,
                              const char *ver, bool have_gpu, const char *mod, const char *grep) {
    if (ver[0]) {
        doctor_add(r, DOCTOR_ENV, name, DOCTOR_OK, "%s", ver);
        return;
    }
    struct doctor_row *row =
        doctor_add(r, DOCTOR_ENV, name, have_gpu ? DOCTOR_FAIL : DOCTOR_SKIP, "not loaded");
    if (have_gpu)
        doctor_remedy(row, "modprobe %s; check dmesg | grep %s", mod, grep);
    else
        doctor_remedy(row, "no %s GPU", strcmp(mod, "amdgpu") == 0 ? "AMD" : "NVIDIA");
    (void)e;
}

/* PyTorch: its version and build (CUDA, HIP or CPU only) where it is, then whether its kernels'
 * archs include every GPU's. */
static void doctor_env_torch(const struct doctor_env *e, const struct doctor_facts *f,
                             struct doctor_report *r) {
    if (!f->torch[0]) {
        doctor_remedy(doctor_add(r, DOCTOR_ENV, "PyTorch", DOCTOR_SKIP, "not found"),
                      "no torch-*.dist-info nor torch-*.egg-info in the Python site directories");
        return;
    }
    char build[64];
    if (!f->torch_build)
        snprintf(build, sizeof(build), "build not known");
    else if (f->torch_hip[0])
        snprintf(build, sizeof(build), "HIP %s", f->torch_hip);
    else if (f->torch_cuda[0])
        snprintf(build, sizeof(build), "CUDA %s", f->torch_cuda);
    else
        snprintf(build, sizeof(build), "CPU only");
    doctor_add(r, DOCTOR_ENV, "PyTorch", DOCTOR_OK, "%s (%s) at %.*s", f->torch, build, 160,
               f->torch_path);

    struct doctor_row *row;
    bool gpu_build = f->torch_hip[0] || f->torch_cuda[0];
    if (!f->torch_build) {
        doctor_remedy(doctor_add(r, DOCTOR_ENV, "PyTorch archs", DOCTOR_SKIP, "not known"),
                      "no torch/version.py beside %.*s", 200, f->torch_path);
        return;
    }
    if (!gpu_build) {
        row = doctor_add(r, DOCTOR_ENV, "PyTorch archs", e->n_gpus ? DOCTOR_WARN : DOCTOR_OK,
                         "none: a CPU-only build");
        if (e->n_gpus)
            doctor_remedy(row, "this PyTorch runs nothing on the GPUs: install a CUDA or ROCm "
                               "build of it (https://pytorch.org/get-started/locally/)");
        return;
    }
    if (!f->torch_archs[0]) {
        doctor_remedy(doctor_add(r, DOCTOR_ENV, "PyTorch archs", DOCTOR_SKIP, "not known"),
                      "not found without running Python (%s); python3 -c 'import torch; "
                      "print(torch.cuda.get_arch_list())' lists them",
                      f->torch_hip[0] ? "no torch/lib/rocblas/library"
                                      : "no .nv_fatbin in torch/lib/libtorch_cuda.so");
        return;
    }
    char miss[160] = "";
    for (size_t i = 0; i < e->n_gpus; i++) {
        const struct doctor_gpu *g = &e->gpus[i];
        if (!g->arch[0] || doctor_torch_runs_on(f->torch_archs, g->arch))
            continue;
        size_t u = strlen(miss);
        snprintf(miss + u, sizeof(miss) - u, "%sgpu %zu (%.31s)", u ? ", " : "", i, g->arch);
    }
    if (!miss[0]) {
        doctor_add(r, DOCTOR_ENV, "PyTorch archs", DOCTOR_OK, "%.*s%s", 200, f->torch_archs,
                   e->n_gpus ? "; every GPU's arch is included" : "");
        return;
    }
    row = doctor_add(r, DOCTOR_ENV, "PyTorch archs", DOCTOR_WARN, "%.*s; not for %.*s", 120,
                     f->torch_archs, 120, miss);
    doctor_remedy(row,
                  "PyTorch %s has no kernels for %.*s: it fails there with %s; install a build of "
                  "it whose archs include them (https://pytorch.org/get-started/locally/)",
                  f->torch, 160, miss,
                  f->torch_hip[0] ? "'HIP error: invalid device function'"
                                  : "'no kernel image is available for execution on the device'");
}

static void doctor_env_versions(const struct doctor_env *e, const struct doctor_facts *f,
                                struct doctor_report *r) {
    struct doctor_row *row;
    if (f->kernel[0])
        doctor_add(r, DOCTOR_ENV, "kernel", DOCTOR_OK, "%s", f->kernel);
    else
        doctor_remedy(doctor_add(r, DOCTOR_ENV, "kernel", DOCTOR_SKIP, "unknown"),
                      "/proc/sys/kernel/osrelease is unreadable");
    bool amd = doctor_env_count(e, true) > 0, nv = doctor_env_count(e, false) > 0;
    doctor_env_driver(e, r, "amdgpu driver", f->amdgpu, amd, "amdgpu", "amdgpu");
    doctor_env_driver(e, r, "nvidia driver", f->nvidia, nv, "nvidia", "-i nvrm");

    const char *backends = e->backends && e->backends[0] ? e->backends : "cpu";
    if (e->hip_runtime && e->hip_runtime[0])
        doctor_add(r, DOCTOR_ENV, "GPU runtime", DOCTOR_OK, "%.*s (backends: %.*s)", 120,
                   e->hip_runtime, 120, backends);
    else if (e->n_gpus == 0)
        doctor_remedy(doctor_add(r, DOCTOR_ENV, "GPU runtime", DOCTOR_SKIP, "none (backends: %.*s)",
                                 120, backends),
                      "no GPU found");
    else if (strstr(backends, "hip") || strstr(backends, "cuda")) {
        row = doctor_add(r, DOCTOR_ENV, "GPU runtime", DOCTOR_WARN, "not found (backends: %.*s)",
                         120, backends);
        doctor_remedy(row, "the GPU backend is compiled in but its runtime did not start: check "
                           "the device permissions below and that ROCm/CUDA libraries are "
                           "installed (ldconfig -p | grep -E 'amdhip64|cudart')");
    } else {
        row = doctor_add(r, DOCTOR_ENV, "GPU runtime", DOCTOR_WARN, "none");
        doctor_remedy(row,
                      "this build has no GPU backend (compiled: %.*s); rebuild with "
                      "-DRINGSIDE_HIP=AMD or NVIDIA",
                      120, backends);
    }

    if (f->rocm[0])
        doctor_add(r, DOCTOR_ENV, "ROCm", DOCTOR_OK, "%s at %s", f->rocm, f->rocm_path);
    else if (amd)
        doctor_remedy(doctor_add(r, DOCTOR_ENV, "ROCm", DOCTOR_WARN, "not found"),
                      "no /opt/rocm/.info/version nor /opt/rocm-X.Y.Z: install ROCm "
                      "(https://rocm.docs.amd.com) for HIP programs and PyTorch on AMD");
    else
        doctor_remedy(doctor_add(r, DOCTOR_ENV, "ROCm", DOCTOR_SKIP, "not found"), "no AMD GPU");

    doctor_env_torch(e, f, r);
}

/* ---- GPUs and kernel archs ---- */

/* "gfx1100" -> "11.0.0" for RDNA cards (gfx10xx..gfx12xx) whose family has a built arch
 * ("gfx1030" for a gfx1031): the HSA_OVERRIDE_GFX_VERSION that would load those kernels. */
static bool doctor_env_override_for(const char *arch, const char *built, char *out, size_t n) {
    if (strncmp(arch, "gfx1", 4) != 0 || strlen(arch) != 7 || arch[4] < '0' || arch[4] > '2')
        return false;
    char family[8];
    snprintf(family, sizeof(family), "%.6s0", arch); /* gfx1031 -> gfx1030 */
    if (!doctor_arch_listed(built, family))
        return false;
    snprintf(out, n, "%c%c.%c.0", arch[3], arch[4], arch[5]);
    return true;
}

/* The oldest HIP toolchain that builds code for arch, for the rebuild advice: RDNA3 (gfx11xx)
 * needs the device libraries of ROCm 5.5 (Debian 12's hipcc 5.2 cannot; Debian 13's 5.7.1 can,
 * scripts/amd13.sh builds there), MI300 (gfx940-942) ROCm 5.7, RDNA4 (gfx12xx) ROCm 6.4. "" when
 * any toolchain ringside builds with will do. */
static const char *doctor_env_arch_toolchain(const char *arch) {
    if (strncmp(arch, "gfx11", 5) == 0)
        return "; gfx11xx needs hipcc from ROCm 5.5 or later (Debian 13's 5.7.1; not Debian 12's "
               "5.2)";
    if (strncmp(arch, "gfx94", 5) == 0)
        return "; gfx94x needs hipcc from ROCm 5.7 or later";
    if (strncmp(arch, "gfx12", 5) == 0)
        return "; gfx12xx needs hipcc from ROCm 6.4 or later";
    return "";
}

static void doctor_env_archs(const struct doctor_env *e, struct doctor_report *r) {
    const char *built = e->built_archs ? e->built_archs : "";
    if (e->n_gpus == 0) {
        doctor_remedy(doctor_add(r, "gpus", "gpus", DOCTOR_SKIP, "no GPU found"),
                      "no AMD or NVIDIA GPU was detected; the checks below that need one are "
                      "skipped");
        return;
    }
    for (size_t i = 0; i < e->n_gpus; i++) {
        const struct doctor_gpu *g = &e->gpus[i];
        char name[32];
        snprintf(name, sizeof(name), "gpu %zu", i);
        doctor_add(r, "gpus", name, DOCTOR_OK, "%s (%s) at %s", g->name,
                   g->arch[0] ? g->arch : "unknown arch", g->pci);
    }
    if (!built[0]) {
        doctor_remedy(doctor_add(r, "gpus", "kernel archs", DOCTOR_SKIP, "none built"),
                      "this build has no GPU kernels");
        return;
    }
    /* Missing archs per vendor, each once; the rebuild list = built + missing. */
    char miss[256] = "", amd_list[256], nv_list[256] = "", override[16] = "";
    const char *toolchain = "";
    snprintf(amd_list, sizeof(amd_list), "%.*s", 200, built);
    for (char *p = amd_list; *p; p++)
        *p = *p == ',' ? ';' : *p;
    for (const char *p = built; *p;) {
        p += strspn(p, " ;,");
        size_t len = strcspn(p, " ;,");
        if (len > 3 && strncmp(p, "sm_", 3) == 0) {
            size_t u = strlen(nv_list);
            snprintf(nv_list + u, sizeof(nv_list) - u, "%s%.*s", u ? ";" : "", (int)len - 3, p + 3);
        }
        p += len;
    }
    bool amd_miss = false, nv_miss = false, unknown = false;
    for (size_t i = 0; i < e->n_gpus; i++) {
        const struct doctor_gpu *g = &e->gpus[i];
        if (!g->arch[0]) {
            unknown = true;
            continue;
        }
        if (doctor_arch_listed(built, g->arch) || doctor_arch_listed(miss, g->arch))
            continue;
        size_t u = strlen(miss);
        snprintf(miss + u, sizeof(miss) - u, "%s%.*s", u ? "," : "", 31, g->arch);
        if (g->nvidia && strncmp(g->arch, "sm_", 3) == 0) {
            nv_miss = true;
            u = strlen(nv_list);
            snprintf(nv_list + u, sizeof(nv_list) - u, "%s%.*s", u ? ";" : "", 28, g->arch + 3);
        } else if (g->amd) {
            amd_miss = true;
            if (!strstr(amd_list, "gfx")) /* an NVIDIA-only build: start the AMD list afresh */
                amd_list[0] = '\0';
            u = strlen(amd_list);
            snprintf(amd_list + u, sizeof(amd_list) - u, "%s%.*s", u ? ";" : "", 31, g->arch);
            if (!override[0])
                doctor_env_override_for(g->arch, built, override, sizeof(override));
            if (!toolchain[0])
                toolchain = doctor_env_arch_toolchain(g->arch);
        }
    }
    if (!miss[0]) {
        struct doctor_row *row =
            doctor_add(r, "gpus", "kernel archs", unknown ? DOCTOR_WARN : DOCTOR_OK,
                       "built for %.*s; every GPU's arch is included", 160, built);
        if (unknown)
            doctor_remedy(row, "a GPU's arch is unknown, so its kernels could not be checked");
        return;
    }
    struct doctor_row *row = doctor_add(r, "gpus", "kernel archs", DOCTOR_FAIL,
                                        "built for %.*s; missing %.*s", 100, built, 100, miss);
    if (amd_miss && override[0])
        doctor_remedy(row,
                      "rebuild: cmake -DRINGSIDE_HIP=AMD -DRINGSIDE_HIP_ARCHS=\"%.*s\"%s; "
                      "workaround (warn: unsupported): HSA_OVERRIDE_GFX_VERSION=%s loads kernels "
                      "built for a sibling arch",
                      200, amd_list, toolchain, override);
    else if (amd_miss)
        doctor_remedy(row, "rebuild: cmake -DRINGSIDE_HIP=AMD -DRINGSIDE_HIP_ARCHS=\"%.*s\"%s", 200,
                      amd_list, toolchain);
    else if (nv_miss)
        doctor_remedy(row,
                      "rebuild: cmake -DRINGSIDE_HIP=NVIDIA -DCMAKE_CUDA_ARCHITECTURES=\"%.*s\"",
                      200, nv_list);
    else
        doctor_remedy(row, "the GPU's vendor does not match this build's archs");
}

/* ---- permissions ---- */

static void doctor_env_mode(const struct stat *st, char *out, size_t n) {
    snprintf(out, n, "%04o", (unsigned)(st->st_mode & 07777));
}

/* A device node the identity must open read-write (/dev/kfd, /dev/dri/renderD128). */
static void doctor_env_node(const struct doctor_env *e, struct doctor_report *r, const char *path,
                            bool need) {
    struct stat st;
    if (!doctor_env_stat(e, path, &st)) {
        struct doctor_row *row =
            doctor_add(r, DOCTOR_PERM, path, need ? DOCTOR_FAIL : DOCTOR_SKIP, "missing");
        doctor_remedy(row, need ? "the amdgpu driver did not create it: modprobe amdgpu; check "
                                  "dmesg | grep -i -E 'amdgpu|kfd'"
                                : "no AMD GPU");
        return;
    }
    char grp[64], mode[8];
    doctor_env_group_name(e, st.st_gid, grp, sizeof(grp));
    doctor_env_mode(&st, mode, sizeof(mode));
    unsigned p = doctor_env_perm(e, &st);
    if ((p & 6) == 6) {
        doctor_add(r, DOCTOR_PERM, path, DOCTOR_OK, "read-write (mode %s, group %s)", mode, grp);
        return;
    }
    struct doctor_row *row = doctor_add(r, DOCTOR_PERM, path, DOCTOR_FAIL,
                                        "%s cannot open it read-write (mode %s, group %s)",
                                        doctor_env_user(e), mode, grp);
    if (((st.st_mode >> 3) & 6) == 6)
        doctor_remedy(row, "sudo usermod -aG %s %s, then log out and in", grp, doctor_env_user(e));
    else
        doctor_remedy(row,
                      "its group %s has no read-write access: a udev rule such as "
                      "SUBSYSTEM==\"kfd\", GROUP=\"render\", MODE=\"0660\" in "
                      "/etc/udev/rules.d/70-amdgpu.rules, then sudo udevadm trigger",
                      grp);
}

static int doctor_env_strcmp(const void *a, const void *b) {
    return strcmp((const char *)a, (const char *)b);
}

static void doctor_env_render_nodes(const struct doctor_env *e, struct doctor_report *r,
                                    bool need) {
    char full[1024], names[16][32];
    size_t n = 0;
    snprintf(full, sizeof(full), "%s/dev/dri", e->root);
    DIR *d = opendir(full);
    for (struct dirent *de; d && n < 16 && (de = readdir(d)) != NULL;)
        if (strncmp(de->d_name, "renderD", 7) == 0)
            snprintf(names[n++], sizeof(names[0]), "%.31s", de->d_name);
    if (d)
        closedir(d);
    if (n == 0) {
        doctor_env_node(e, r, "/dev/dri/renderD128", need);
        return;
    }
    qsort(names, n, sizeof(names[0]), doctor_env_strcmp);
    for (size_t i = 0; i < n; i++) {
        char path[48];
        snprintf(path, sizeof(path), "/dev/dri/%.31s", names[i]);
        doctor_env_node(e, r, path, need);
    }
}

static void doctor_env_groups(const struct doctor_env *e, struct doctor_report *r) {
    static const char *const want[] = {"render", "video"};
    char have[64] = "", lack[64] = "";
    for (size_t i = 0; i < 2; i++) {
        gid_t gid;
        if (!doctor_env_group(e, want[i], &gid, NULL, 0))
            continue; /* a system without that group does not need it */
        char *dst = doctor_env_in_group(e, gid) ? have : lack;
        size_t u = strlen(dst);
        snprintf(dst + u, sizeof(have) - u, "%s%s", u ? "," : "", want[i]);
    }
    if (!have[0] && !lack[0]) {
        doctor_remedy(doctor_add(r, DOCTOR_PERM, "groups", DOCTOR_SKIP, "no render or video group"),
                      "/etc/group has neither group");
        return;
    }
    if (!lack[0]) {
        doctor_add(r, DOCTOR_PERM, "groups", DOCTOR_OK, "%s is in %s", doctor_env_user(e), have);
        return;
    }
    struct doctor_row *row = doctor_add(r, DOCTOR_PERM, "groups", DOCTOR_WARN, "%s is not in %s",
                                        doctor_env_user(e), lack);
    doctor_remedy(row, "sudo usermod -aG %s %s, then log out and in", lack, doctor_env_user(e));
}

static void doctor_env_kmsg(const struct doctor_env *e, struct doctor_report *r) {
    static const char fix[] = "kernel-log watcher off: sudo setcap cap_syslog+ep $(which "
                              "ringside), or sysctl kernel.dmesg_restrict=0";
    struct stat st;
    if (!doctor_env_stat(e, "/dev/kmsg", &st)) {
        doctor_remedy(doctor_add(r, DOCTOR_PERM, "/dev/kmsg", DOCTOR_WARN, "missing"), fix);
        return;
    }
    char line[16] = "";
    char full[1024];
    snprintf(full, sizeof(full), "%s/proc/sys/kernel/dmesg_restrict", e->root);
    FILE *f = fopen(full, "r");
    if (f) {
        if (!fgets(line, sizeof(line), f))
            line[0] = '\0';
        fclose(f);
    }
    bool restricted = atoi(line) == 1 && e->uid != 0;
    char mode[8];
    doctor_env_mode(&st, mode, sizeof(mode));
    if (!(doctor_env_perm(e, &st) & 4))
        doctor_remedy(doctor_add(r, DOCTOR_PERM, "/dev/kmsg", DOCTOR_WARN,
                                 "not readable by %s (mode %s)%s", doctor_env_user(e), mode,
                                 restricted ? "; kernel.dmesg_restrict=1" : ""),
                      fix);
    else if (restricted)
        doctor_remedy(doctor_add(r, DOCTOR_PERM, "/dev/kmsg", DOCTOR_WARN,
                                 "kernel.dmesg_restrict=1: only root or CAP_SYSLOG may read it"),
                      fix);
    else
        doctor_add(r, DOCTOR_PERM, "/dev/kmsg", DOCTOR_OK, "readable (mode %s)", mode);
}

static void doctor_env_debugfs(const struct doctor_env *e, struct doctor_report *r) {
    static const char why[] =
        "root only: the driver's VRAM fragmentation (drm_buddy) and fences are not shown";
    struct stat dbg, dri;
    if (!doctor_env_stat(e, "/sys/kernel/debug", &dbg)) {
        doctor_remedy(doctor_add(r, DOCTOR_PERM, "debugfs", DOCTOR_SKIP, "not mounted"),
                      "mount -t debugfs none /sys/kernel/debug (as root) to show the driver's "
                      "VRAM fragmentation (drm_buddy) and fences");
        return;
    }
    bool open_dbg = doctor_env_perm(e, &dbg) & 1; /* may look inside */
    if (open_dbg && !doctor_env_stat(e, "/sys/kernel/debug/dri", &dri)) {
        doctor_remedy(
            doctor_add(r, DOCTOR_PERM, "debugfs", DOCTOR_SKIP, "no /sys/kernel/debug/dri"),
            "no DRM driver exposes debugfs files here (no GPU driver loaded)");
        return;
    }
    bool ok = open_dbg && (doctor_env_perm(e, &dri) & 5) == 5;
    if (ok)
        doctor_add(r, DOCTOR_PERM, "debugfs", DOCTOR_OK, "/sys/kernel/debug/dri readable");
    else
        doctor_remedy(doctor_add(r, DOCTOR_PERM, "debugfs", DOCTOR_WARN,
                                 "/sys/kernel/debug/dri not readable by %s", doctor_env_user(e)),
                      why);
}

static void doctor_env_permissions(const struct doctor_env *e, const struct doctor_facts *f,
                                   struct doctor_report *r) {
    struct stat st;
    bool amd_gpu = doctor_env_count(e, true) > 0;
    bool amd = amd_gpu || f->amdgpu[0] || doctor_env_stat(e, "/dev/kfd", &st);
    if (amd) {
        doctor_env_node(e, r, "/dev/kfd", amd_gpu);
        doctor_env_render_nodes(e, r, amd_gpu);
        doctor_env_groups(e, r);
    } else {
        doctor_remedy(doctor_add(r, DOCTOR_PERM, "/dev/kfd", DOCTOR_SKIP, "missing"), "no AMD GPU");
    }
    doctor_env_kmsg(e, r);
    doctor_env_debugfs(e, r);
}

void doctor_check_env(const struct doctor_env *e, struct doctor_report *r) {
    struct doctor_facts f;
    doctor_facts_read(e, &f);
    doctor_env_versions(e, &f, r);
    doctor_env_archs(e, r);
    doctor_env_permissions(e, &f, r);
    doctor_check_vars(e, r);
}
