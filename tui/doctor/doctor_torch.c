/* ringside doctor: which build the PyTorch found is (torch/version.py's CUDA and HIP versions)
 * and the GPU archs its kernels are built for, read from its files; no Python is run. */
#include "tui/doctor/doctor.h"

#include <ctype.h>
#include <dirent.h>
#include <elf.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A version.py line "key = 'value'" (or "key: Optional[str] = 'value'", as 2.x writes it):
 * true when it is key's, value into out ("" for None or anything not quoted). */
static bool doctor_torch_pyvar(const char *line, const char *key, char *out, size_t n) {
    size_t kl = strlen(key);
    if (strncmp(line, key, kl) != 0 || !line[kl] || !strchr(" \t:=", line[kl]))
        return false;
    const char *v = strchr(line + kl, '=');
    if (!v)
        return false;
    v += 1 + strspn(v + 1, " \t");
    out[0] = '\0';
    const char *end = (*v == '\'' || *v == '"') ? strchr(v + 1, *v) : NULL;
    if (end)
        snprintf(out, n, "%.*s", (int)(end - v - 1), v + 1);
    return true;
}

/* n bytes at off, all of them. */
static bool doctor_torch_pread(int fd, void *buf, size_t n, uint64_t off) {
    return off <= (uint64_t)INT64_MAX && pread(fd, buf, n, (off_t)off) == (ssize_t)n;
}

#define DOCTOR_FATBIN_MAGIC 0xBA55ED50u
#define DOCTOR_ARCH_MAX     1024 /* archs are sm numbers: 50, 90, 120 */

/* Per arch, how many fatbins have a cubin (PTX) of it, and the last fatbin counted. */
struct doctor_torch_archs {
    unsigned sass[DOCTOR_ARCH_MAX], ptx[DOCTOR_ARCH_MAX];
    unsigned sass_at[DOCTOR_ARCH_MAX], ptx_at[DOCTOR_ARCH_MAX];
    unsigned blobs; /* fatbins with an entry of either */
};

/* Fatbin number blob's entries (size bytes at off): each a header (kind: 1 PTX, 2 a cubin; its
 * header size at 4, its payload's at 8, the arch at 28) and its payload. */
static void doctor_torch_entries(int fd, uint64_t off, uint64_t size, unsigned blob,
                                 struct doctor_torch_archs *a) {
    uint64_t pos = 0;
    bool any = false;
    for (unsigned k = 0; k < 4096 && size - pos >= 32; k++) {
        uint8_t h[32];
        uint16_t kind;
        uint32_t hsize, arch;
        uint64_t psize;
        if (!doctor_torch_pread(fd, h, sizeof(h), off + pos))
            break;
        memcpy(&kind, h, 2);
        memcpy(&hsize, h + 4, 4);
        memcpy(&psize, h + 8, 8);
        memcpy(&arch, h + 28, 4);
        if (hsize < 32 || hsize > size - pos || psize > size - pos - hsize)
            break;
        if (arch < DOCTOR_ARCH_MAX && (kind == 1 || kind == 2)) {
            unsigned *at = kind == 2 ? a->sass_at : a->ptx_at;
            if (at[arch] != blob + 1) { /* each fatbin counted once an arch */
                at[arch] = blob + 1;
                (kind == 2 ? a->sass : a->ptx)[arch]++;
            }
            any = true;
        }
        pos += hsize + psize;
    }
    a->blobs += any;
}

/* The fatbins of a .nv_fatbin section (size bytes at off), one after another (magic, version,
 * header size, the entries' size), maybe padded to 8 bytes: a few thousand small reads of a
 * library of hundreds of megabytes (libtorch_cuda.so of 2.11: 444 fatbins, 2789 entries). */
static void doctor_torch_fatbins(int fd, uint64_t off, uint64_t size,
                                 struct doctor_torch_archs *a) {
    uint64_t pos = 0;
    unsigned blobs = 0, gaps = 0;
    while (size - pos >= 16 && gaps < 64 && blobs < 65536) {
        uint8_t h[16];
        uint32_t magic;
        uint16_t hsize;
        uint64_t fsize;
        if (!doctor_torch_pread(fd, h, sizeof(h), off + pos))
            return;
        memcpy(&magic, h, 4);
        memcpy(&hsize, h + 6, 2);
        memcpy(&fsize, h + 8, 8);
        if (magic != DOCTOR_FATBIN_MAGIC) { /* padding: the next 8-byte boundary */
            pos = (pos + 8) & ~(uint64_t)7;
            gaps++;
            continue;
        }
        gaps = 0;
        if (hsize < 16 || hsize > size - pos || fsize > size - pos - hsize)
            return;
        doctor_torch_entries(fd, off + pos + hsize, fsize, blobs++, a);
        pos += hsize + fsize;
    }
}

/* The archs of the CUDA kernels in an ELF shared library's .nv_fatbin section. */
static void doctor_torch_elf(const char *file, struct doctor_torch_archs *a) {
    int fd = open(file, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM); /* headers far apart: no read-ahead */
    Elf64_Ehdr eh;
    Elf64_Shdr strs;
    if (!doctor_torch_pread(fd, &eh, sizeof(eh), 0) || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
        eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB ||
        eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shstrndx >= eh.e_shnum ||
        !doctor_torch_pread(fd, &strs, sizeof(strs),
                            eh.e_shoff + (uint64_t)eh.e_shstrndx * sizeof(strs))) {
        close(fd);
        return;
    }
    static const char want[] = ".nv_fatbin";
    for (unsigned i = 0; i < eh.e_shnum; i++) {
        Elf64_Shdr sh;
        char name[sizeof(want)];
        if (!doctor_torch_pread(fd, &sh, sizeof(sh), eh.e_shoff + (uint64_t)i * sizeof(sh)))
            break;
        if (sh.sh_name >= strs.sh_size || strs.sh_size - sh.sh_name < sizeof(name) ||
            !doctor_torch_pread(fd, name, sizeof(name), strs.sh_offset + sh.sh_name) ||
            memcmp(name, want, sizeof(want)) != 0 || sh.sh_type == SHT_NOBITS)
            continue;
        doctor_torch_fatbins(fd, sh.sh_offset, sh.sh_size, a);
        break;
    }
    close(fd);
}

/* "gfx" and its lower-case letters and digits at p ("gfx90a" of "..._gfx90a-xnack-.hsaco"),
 * when it stands alone on its left; its length, else 0. */
static size_t doctor_torch_gfx_at(const char *name, const char *p) {
    if (p > name && isalnum((unsigned char)p[-1]))
        return 0;
    size_t n = 3;
    while (isdigit((unsigned char)p[n]) || (p[n] >= 'a' && p[n] <= 'z'))
        n++;
    return n >= 6 && n <= 12 && isdigit((unsigned char)p[3]) ? n : 0;
}

/* gfx names sort by length, then as text: gfx900 gfx906 gfx90a gfx1030 gfx1100. */
static int doctor_torch_gfx_cmp(const void *x, const void *y) {
    const char *a = x, *b = y;
    size_t la = strlen(a), lb = strlen(b);
    return la != lb ? (la < lb ? -1 : 1) : strcmp(a, b);
}

/* The gfx names in the file names of root+dir, space-separated into out. */
static void doctor_torch_gfx_dir(const struct doctor_env *e, const char *dir, char *out, size_t n) {
    char full[1024], seen[32][16];
    size_t k = 0;
    snprintf(full, sizeof(full), "%s%s", e->root, dir);
    DIR *d = opendir(full);
    if (!d)
        return;
    for (struct dirent *de; (de = readdir(d)) != NULL && k < 32;)
        for (const char *p = strstr(de->d_name, "gfx"); p && k < 32; p = strstr(p + 3, "gfx")) {
            size_t len = doctor_torch_gfx_at(de->d_name, p);
            bool dup = len == 0;
            for (size_t j = 0; j < k && !dup; j++)
                dup = strlen(seen[j]) == len && strncmp(seen[j], p, len) == 0;
            if (!dup)
                snprintf(seen[k++], sizeof(seen[0]), "%.*s", (int)len, p);
        }
    closedir(d);
    qsort(seen, k, sizeof(seen[0]), doctor_torch_gfx_cmp);
    for (size_t j = 0; j < k; j++) { /* whole names only, space-separated */
        size_t u = strlen(out), l = strlen(seen[j]);
        if (u + (u ? 1 : 0) + l + 1 > n)
            break;
        if (u)
            out[u++] = ' ';
        memcpy(out + u, seen[j], l + 1);
    }
}

void doctor_torch_build(const struct doctor_env *e, struct doctor_facts *f) {
    char site[256], path[1024], line[512];
    snprintf(site, sizeof(site), "%s", f->torch_path);
    char *slash = strrchr(site, '/');
    if (!slash)
        return;
    *slash = '\0';
    snprintf(path, sizeof(path), "%s%s/torch/version.py", e->root, site);
    FILE *v = fopen(path, "r");
    if (!v)
        return;
    f->torch_build = true;
    while (fgets(line, sizeof(line), v)) {
        char val[64];
        if (doctor_torch_pyvar(line, "cuda", val, sizeof(val)))
            snprintf(f->torch_cuda, sizeof(f->torch_cuda), "%.15s", val);
        else if (doctor_torch_pyvar(line, "hip", val, sizeof(val)))
            snprintf(f->torch_hip, sizeof(f->torch_hip), "%.31s", val);
    }
    fclose(v);

    if (f->torch_hip[0]) {
        snprintf(path, sizeof(path), "%s/torch/lib/rocblas/library", site);
        doctor_torch_gfx_dir(e, path, f->torch_archs, sizeof(f->torch_archs));
        return;
    }
    if (!f->torch_cuda[0])
        return;
    static const char *const libs[] = {"libtorch_cuda.so", "libtorch_cuda_cu.so"};
    struct doctor_torch_archs *a = calloc(1, sizeof(*a));
    if (!a)
        return;
    for (size_t i = 0; i < 2 && !a->blobs; i++) {
        snprintf(path, sizeof(path), "%s%s/torch/lib/%s", e->root, site, libs[i]);
        doctor_torch_elf(path, a);
    }
    /* The archs of most of its fatbins: TORCH_CUDA_ARCH_LIST, as torch.cuda.get_arch_list()
     * says (a few kernels are built for more: 2.11's for sm_89, sm_103 and sm_121 besides);
     * the cubins, then the PTX. */
    for (int pass = 0; pass < 2; pass++)
        for (unsigned k = 0; k < DOCTOR_ARCH_MAX; k++) {
            unsigned in = (pass ? a->ptx : a->sass)[k];
            if (in == 0 || in * 2 < a->blobs)
                continue;
            size_t u = strlen(f->torch_archs);
            snprintf(f->torch_archs + u, sizeof(f->torch_archs) - u, "%s%s_%u", u ? " " : "",
                     pass ? "compute" : "sm", k);
        }
    free(a);
}

bool doctor_torch_runs_on(const char *archs, const char *arch) {
    size_t alen = strcspn(arch, ":"); /* gfx90a:sramecc+:xnack- -> gfx90a */
    unsigned gpu = 0;
    bool nv = sscanf(arch, "sm_%u", &gpu) == 1;
    for (const char *p = archs; *p;) {
        p += strspn(p, " ");
        size_t len = strcspn(p, " ");
        unsigned k = 0;
        if (nv && sscanf(p, "sm_%u", &k) == 1 && k / 10 == gpu / 10 && k <= gpu)
            return true;
        if (nv && sscanf(p, "compute_%u", &k) == 1 && k <= gpu)
            return true;
        if (!nv && len == alen && strncmp(p, arch, len) == 0)
            return true;
        p += len;
    }
    return false;
}
