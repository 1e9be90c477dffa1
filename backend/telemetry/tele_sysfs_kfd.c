/* The KFD (compute) view of the amdgpu cards: topology nodes matched to PCI addresses, the VRAM
 * each compute process holds, and the LLVM target names the KFD derives from GC IP versions. */
#include "backend/telemetry/tele_prov.h"
#include "backend/telemetry/tele_sysfs_internal.h"

#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TELE_SYSFS_KFD_NODES "class/kfd/kfd/topology/nodes"
#define TELE_SYSFS_KFD_PROC  "class/kfd/kfd/proc"

static bool tele_sysfs_kfd_digits(const char *s) {
    if (!*s)
        return false;
    for (; *s; s++)
        if (!isdigit((unsigned char)*s))
            return false;
    return true;
}

/* The value of one "key value" line of a topology node's properties file. */
static bool tele_sysfs_kfd_prop(const char *text, const char *key, uint64_t *out) {
    size_t klen = strlen(key);
    for (const char *line = text; *line;) {
        size_t len = strcspn(line, "\n");
        if (len > klen && strncmp(line, key, klen) == 0 && line[klen] == ' ') {
            char *end;
            *out = strtoull(line + klen + 1, &end, 10);
            return end != line + klen + 1;
        }
        line += len + (line[len] == '\n');
    }
    return false;
}

/* location_id is the PCI routing id, bus << 8 | device << 3 | function. */
static bool tele_sysfs_kfd_node_pci(const char *text, char pci[16], uint32_t *target) {
    uint64_t loc, domain, gfx;
    if (!tele_sysfs_kfd_prop(text, "location_id", &loc) || loc > 0xffff)
        return false;
    if (!tele_sysfs_kfd_prop(text, "domain", &domain) || domain > 0xffff)
        domain = 0;
    *target = tele_sysfs_kfd_prop(text, "gfx_target_version", &gfx) && gfx <= UINT32_MAX
                  ? (uint32_t)gfx
                  : 0;
    snprintf(pci, 16, "%04x:%02x:%02x.%x", (unsigned)domain, (unsigned)(loc >> 8),
             (unsigned)(loc >> 3) & 0x1f, (unsigned)loc & 7);
    return true;
}

/* Node dir/<name>: a GPU node (gpu_id != 0) whose address is one of the cards'. */
static void tele_sysfs_kfd_node(const char *nodes, const char *name, struct tele_sysfs_card *cards,
                                size_t n) {
    char dir[TELE_PATH_MAX], path[TELE_PATH_MAX], text[4096], pci[16];
    uint64_t id;
    uint32_t target;
    if (tele_path(dir, sizeof(dir), nodes, name) < 0 || !tele_sysfs_read_u64(dir, "gpu_id", &id) ||
        id == 0 || id > UINT32_MAX || tele_path(path, sizeof(path), dir, "properties") < 0 ||
        tele_read_text(path, text, sizeof(text)) < 0 ||
        !tele_sysfs_kfd_node_pci(text, pci, &target))
        return;
    for (size_t i = 0; i < n; i++)
        if (strcmp(cards[i].pci, pci) == 0) {
            cards[i].kfd_gpu_id = (uint32_t)id;
            cards[i].kfd_target = target;
        }
}

void tele_sysfs_kfd_map(const char *sys, struct tele_sysfs_card *cards, size_t n) {
    char nodes[TELE_PATH_MAX];
    if (tele_path(nodes, sizeof(nodes), sys, TELE_SYSFS_KFD_NODES) < 0)
        return;
    DIR *d = opendir(nodes);
    if (!d)
        return; /* no KFD: no compute view, nothing to map */
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        if (tele_sysfs_kfd_digits(e->d_name))
            tele_sysfs_kfd_node(nodes, e->d_name, cards, n);
    closedir(d);
}

/* Add proc/<pid>/vram_<gpu_id> to sums[i] for every mapped card. A process that exits
 * meanwhile takes its files with it: a failed read is simply not counted. */
static void tele_sysfs_kfd_pid(const char *procs, const char *pid,
                               const struct tele_sysfs_card *cards, size_t n, uint64_t *sums) {
    char dir[TELE_PATH_MAX], name[32];
    if (tele_path(dir, sizeof(dir), procs, pid) < 0)
        return;
    for (size_t i = 0; i < n; i++) {
        uint64_t bytes;
        if (!cards[i].kfd_gpu_id)
            continue;
        snprintf(name, sizeof(name), "vram_%u", (unsigned)cards[i].kfd_gpu_id);
        if (tele_sysfs_read_u64(dir, name, &bytes))
            sums[i] += bytes;
    }
}

void tele_sysfs_kfd_vram(const char *sys, const struct tele_sysfs_card *cards, size_t n,
                         struct tele_gpu *out) {
    char procs[TELE_PATH_MAX];
    uint64_t sums[TELE_MAX_GPUS] = {0};
    if (n > TELE_MAX_GPUS || tele_path(procs, sizeof(procs), sys, TELE_SYSFS_KFD_PROC) < 0)
        return;
    DIR *d = opendir(procs);
    if (!d)
        return;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        if (tele_sysfs_kfd_digits(e->d_name))
            tele_sysfs_kfd_pid(procs, e->d_name, cards, n, sums);
    closedir(d);
    for (size_t i = 0; i < n; i++)
        if (cards[i].kfd_gpu_id)
            tele_set(&out[i], TELE_F_KFD_VRAM, (double)sums[i]);
}

void tele_sysfs_kfd_arch_from_target(uint32_t target, char *out, size_t cap) {
    /* LLVM spells minor and stepping as one hex digit each: 9.0.10 is gfx90a. */
    unsigned major = target / 10000, minor = target / 100 % 100, step = target % 100;
    if (major == 0 || minor > 15 || step > 15) {
        out[0] = '\0'; /* no name LLVM could have */
        return;
    }
    snprintf(out, cap, "gfx%u%x%x", major, minor, step);
}

/* GC IP versions whose compiler target differs from the version itself, as kgd2kfd_probe()
 * in drivers/gpu/drm/amd/amdkfd/kfd_device.c assigns them. */
static const struct {
    uint8_t major, minor, rev;
    uint32_t target;
} tele_sysfs_kfd_gc[] = {
    {9, 0, 1, 90000},   {9, 1, 0, 90002},   {9, 2, 1, 90004},    {9, 2, 2, 90002},
    {9, 3, 0, 90012},   {9, 4, 0, 90006},   {9, 4, 1, 90008},    {9, 4, 2, 90010},
    {9, 4, 3, 90402},   {9, 4, 4, 90402},   {10, 1, 10, 100100}, {10, 1, 2, 100101},
    {10, 1, 1, 100102}, {10, 1, 3, 100103}, {10, 1, 4, 100103},  {10, 3, 2, 100301},
    {10, 3, 1, 100303}, {10, 3, 4, 100302}, {10, 3, 5, 100304},  {10, 3, 3, 100305},
    {10, 3, 6, 100306}, {10, 3, 7, 100306}, {11, 0, 1, 110003},  {11, 0, 4, 110003},
    {11, 0, 3, 110001},
};

void tele_sysfs_kfd_arch_from_gc(unsigned major, unsigned minor, unsigned rev, char *out,
                                 size_t cap) {
    if (major > 99 || minor > 99 || rev > 99) {
        out[0] = '\0';
        return;
    }
    uint32_t target = major * 10000 + minor * 100 + rev; /* the rule for every other chip */
    for (size_t i = 0; i < sizeof(tele_sysfs_kfd_gc) / sizeof(tele_sysfs_kfd_gc[0]); i++)
        if (tele_sysfs_kfd_gc[i].major == major && tele_sysfs_kfd_gc[i].minor == minor &&
            tele_sysfs_kfd_gc[i].rev == rev)
            target = tele_sysfs_kfd_gc[i].target;
    tele_sysfs_kfd_arch_from_target(target, out, cap);
}
