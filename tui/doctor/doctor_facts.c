/* ringside doctor: versions found on the machine (kernel, drivers, ROCm, PyTorch), read from
 * files under the environment's root; nothing is run. (PyTorch's build: doctor_torch.c.) */
#include "tui/doctor/doctor.h"

#include <ctype.h>
#include <dirent.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The first line of root+path into buf (trailing blanks cut); false when unreadable. */
static bool doctor_read_line(const struct doctor_env *e, const char *path, char *buf, size_t n) {
    char full[1024];
    snprintf(full, sizeof(full), "%s%s", e->root, path);
    FILE *f = fopen(full, "r");
    if (!f)
        return false;
    bool ok = fgets(buf, (int)n, f) != NULL;
    fclose(f);
    if (!ok)
        return false;
    size_t len = strlen(buf);
    while (len > 0 && isspace((unsigned char)buf[len - 1]))
        buf[--len] = '\0';
    return len > 0;
}

const char *doctor_getenv(const struct doctor_env *e, const char *name) {
    size_t n = strlen(name);
    for (char *const *v = e->envp; v && *v; v++)
        if (strncmp(*v, name, n) == 0 && (*v)[n] == '=')
            return *v + n + 1;
    return NULL;
}

/* The next numeric component of *s (0 when there is none), advancing *s past it and its dot;
 * *s becomes NULL at the end or at a suffix. */
static long doctor_version_next(const char **s) {
    if (!*s || !isdigit((unsigned char)**s)) {
        *s = NULL;
        return 0;
    }
    char *end;
    long v = strtol(*s, &end, 10);
    *s = *end == '.' && isdigit((unsigned char)end[1]) ? end + 1 : NULL;
    return v;
}

int doctor_version_cmp(const char *a, const char *b) {
    while (a || b) {
        long va = doctor_version_next(&a), vb = doctor_version_next(&b);
        if (va != vb)
            return va < vb ? -1 : 1;
    }
    return 0;
}

/* "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 ..." or "... Open
 * Kernel Module for x86_64  580.82.07  Release Build ..." -> the first word after "Kernel
 * Module" that is a dotted number. */
static void doctor_nvidia_version(const char *line, char *out, size_t n) {
    const char *k = strstr(line, "Kernel Module");
    const char *p = k ? k + strlen("Kernel Module") : "";
    while (*p) {
        p += strspn(p, " \t");
        size_t len = strcspn(p, " \t");
        if (len > 0 && isdigit((unsigned char)*p) && memchr(p, '.', len)) {
            snprintf(out, n, "%.*s", (int)len, p);
            return;
        }
        p += len;
    }
}

/* The newest "<prefix>X.Y.Z" entry of root+dir: its version into ver, the path into path. */
static void doctor_newest(const struct doctor_env *e, const char *dir, const char *prefix,
                          const char *suffix, char *ver, size_t vn, char *path, size_t pn) {
    char full[1024];
    snprintf(full, sizeof(full), "%s%s", e->root, dir);
    DIR *d = opendir(full);
    if (!d)
        return;
    size_t pl = strlen(prefix);
    for (struct dirent *de; (de = readdir(d)) != NULL;) {
        if (strncmp(de->d_name, prefix, pl) != 0 || !isdigit((unsigned char)de->d_name[pl]))
            continue;
        const char *v = de->d_name + pl;
        size_t len = strlen(v);
        if (suffix && (len < strlen(suffix) || strcmp(v + len - strlen(suffix), suffix) != 0))
            continue;
        if (suffix)
            len -= strlen(suffix);
        char cand[64];
        snprintf(cand, sizeof(cand), "%.*s", (int)(len < sizeof(cand) ? len : sizeof(cand) - 1), v);
        if (ver[0] && doctor_version_cmp(cand, ver) <= 0)
            continue;
        snprintf(ver, vn, "%.*s", (int)vn - 1, cand);
        snprintf(path, pn, "%.*s/%.*s", (int)pn / 2, dir, (int)pn / 2 - 2, de->d_name);
    }
    closedir(d);
}

/* ROCm: /opt/rocm/.info/version, else the newest /opt/rocm-X.Y.Z with its own. */
static void doctor_rocm(const struct doctor_env *e, struct doctor_facts *f) {
    char line[64];
    if (doctor_read_line(e, "/opt/rocm/.info/version", line, sizeof(line))) {
        snprintf(f->rocm, sizeof(f->rocm), "%.31s", line);
        snprintf(f->rocm_path, sizeof(f->rocm_path), "/opt/rocm");
        return;
    }
    char ver[32] = "", path[64] = "";
    doctor_newest(e, "/opt", "rocm-", NULL, ver, sizeof(ver), path, sizeof(path));
    if (!ver[0])
        return;
    char info[128];
    snprintf(info, sizeof(info), "%s/.info/version", path);
    snprintf(f->rocm, sizeof(f->rocm), "%.31s",
             doctor_read_line(e, info, line, sizeof(line)) ? line : ver);
    snprintf(f->rocm_path, sizeof(f->rocm_path), "%.63s", path);
}

/* The newest torch-X.Y.Z dist-info (pip's) or egg-info (setup.py's, as Debian's
 * python3-torch: a directory or a file, "torch-1.13.0a0+gitunknown.egg-info", maybe with a
 * "-py3.11" tag) under lib (in python3.N/site-packages or dist-packages, or Debian's
 * python3/dist-packages), if newer than what f holds. */
static void doctor_torch_in(const struct doctor_env *e, const char *lib, struct doctor_facts *f) {
    static const char *const subs[] = {"site-packages", "dist-packages"};
    static const char *const kinds[] = {".dist-info", ".egg-info"};
    char full[1024];
    snprintf(full, sizeof(full), "%s%s", e->root, lib);
    DIR *d = opendir(full);
    if (!d)
        return;
    for (struct dirent *de; (de = readdir(d)) != NULL;) {
        if (strncmp(de->d_name, "python3", 7) != 0)
            continue;
        for (size_t s = 0; s < 2; s++)
            for (size_t k = 0; k < 2; k++) {
                char dir[1024];
                snprintf(dir, sizeof(dir), "%.600s/%.200s/%s", lib, de->d_name, subs[s]);
                char ver[32] = "", path[256] = "";
                doctor_newest(e, dir, "torch-", kinds[k], ver, sizeof(ver), path, sizeof(path));
                char *tag = strstr(ver, "-py");
                if (tag)
                    *tag = '\0';
                if (ver[0] && (!f->torch[0] || doctor_version_cmp(ver, f->torch) > 0)) {
                    snprintf(f->torch, sizeof(f->torch), "%s", ver);
                    snprintf(f->torch_path, sizeof(f->torch_path), "%s", path);
                }
            }
    }
    closedir(d);
}

/* prefix/lib (a virtual environment or an install prefix). */
static void doctor_torch_under(const struct doctor_env *e, const char *prefix,
                               struct doctor_facts *f) {
    char lib[600];
    snprintf(lib, sizeof(lib), "%s/lib", prefix);
    doctor_torch_in(e, lib, f);
}

/* PyTorch in the usual places: $VIRTUAL_ENV, /usr, /usr/local, ~/.local, /opt/conda. */
static void doctor_torch(const struct doctor_env *e, struct doctor_facts *f) {
    const char *venv = doctor_getenv(e, "VIRTUAL_ENV"), *home = doctor_getenv(e, "HOME");
    if (venv)
        doctor_torch_under(e, venv, f);
    doctor_torch_under(e, "/usr", f);
    doctor_torch_under(e, "/usr/local", f);
    doctor_torch_under(e, "/opt/conda", f);
    if (home) {
        char local[512];
        snprintf(local, sizeof(local), "%.400s/.local", home);
        doctor_torch_under(e, local, f);
    }
}

/* The site directories beside each PATH entry's bin (a virtual environment on the PATH, a
 * conda prefix), where PyTorch is often installed without VIRTUAL_ENV set. */
static void doctor_torch_path(const struct doctor_env *e, struct doctor_facts *f) {
    const char *path = doctor_getenv(e, "PATH");
    for (const char *p = path; p && *p;) {
        size_t len = strcspn(p, ":");
        if (len > 4 && len < 400 && strncmp(p + len - 4, "/bin", 4) == 0) {
            char prefix[512];
            snprintf(prefix, sizeof(prefix), "%.*s", (int)len - 4, p);
            doctor_torch_under(e, prefix, f);
        }
        p += len + (p[len] == ':');
    }
}

void doctor_facts_read(const struct doctor_env *e, struct doctor_facts *f) {
    memset(f, 0, sizeof(*f));
    char line[256];
    if (doctor_read_line(e, "/proc/sys/kernel/osrelease", line, sizeof(line)))
        snprintf(f->kernel, sizeof(f->kernel), "%.63s", line);
    if (doctor_read_line(e, "/sys/module/amdgpu/version", line, sizeof(line)))
        snprintf(f->amdgpu, sizeof(f->amdgpu), "%.31s", line);
    else {
        char dir[1024];
        snprintf(dir, sizeof(dir), "%s/sys/module/amdgpu", e->root);
        if (access(dir, F_OK) == 0)
            snprintf(f->amdgpu, sizeof(f->amdgpu), "in-tree");
    }
    if (doctor_read_line(e, "/proc/driver/nvidia/version", line, sizeof(line)))
        doctor_nvidia_version(line, f->nvidia, sizeof(f->nvidia));
    doctor_rocm(e, f);
    doctor_torch(e, f);
    doctor_torch_path(e, f);
    if (f->torch[0])
        doctor_torch_build(e, f);
}

void doctor_env_self(struct doctor_env *e) {
    extern char **environ;
    static gid_t groups[64];
    static char user[64];
    memset(e, 0, sizeof(*e));
    e->root = "";
    e->envp = environ;
    e->uid = getuid();
    int n = getgroups((int)(sizeof(groups) / sizeof(groups[0])) - 1, groups);
    n = n < 0 ? 0 : n;
    groups[n++] = getgid();
    e->groups = groups;
    e->n_groups = (size_t)n;
    struct passwd *pw = getpwuid(e->uid);
    snprintf(user, sizeof(user), "%s", pw ? pw->pw_name : "this user");
    e->user = user;
    e->built_archs = e->hip_runtime = "";
    e->backends = "";
}
