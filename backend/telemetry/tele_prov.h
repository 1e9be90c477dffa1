/* The telemetry provider interface: a const ops struct per source (sysfs, debugfs, fdinfo,
 * libdrm, rocm-smi, NVML), registered in tele_prov_table[], plus the helpers they share. */
#ifndef RINGSIDE_BACKEND_TELEMETRY_TELE_PROV_H
#define RINGSIDE_BACKEND_TELEMETRY_TELE_PROV_H

#include "backend/core/ev.h"
#include "backend/telemetry/tele.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* What a provider gets at open; valid until its close. */
struct tele_ctx {
    const struct tele_roots *roots;
    pid_t self_pid; /* this process, to mark it in process lists */
    /* Deliver an event (a reset, a VM fault, an Xid, a stalled ring) to the events panel, from
     * any thread the provider owns. pci may be "" when unknown. Never NULL. */
    void (*emit)(const struct tele_ctx *ctx, enum ev_severity sev, const char *pci,
                 const char *text);
    void *emit_arg; /* the service's */
};

struct tele_prov_ops {
    const char *name; /* "sysfs": stable, shown in probe output and as a field's source */
    uint32_t caps;    /* TELE_CAP() bits it can ever fill */
    /* Called once, on the thread that creates the service. Return 0 with *state set (owned by
     * the provider), or a negative errno with reason filled ("no amdgpu device under
     * /sys/class/drm", "permission denied: /sys/kernel/debug needs root"); the provider is then
     * shown as unavailable and never sampled. A provider may start its own background thread
     * here (a pid index, an event wait) and must stop it in close. */
    int (*open)(const struct tele_ctx *ctx, void **state, char *reason, size_t reasonlen);
    /* Called on the telemetry thread every interval. Fill out[0..cap) with one record per GPU it
     * sees (tele_gpu_init'd by the provider, keyed by PCI address; fields set with tele_set) and
     * set *n. Must not block: no file that sleeps in the driver (amdgpu pcie_bw), no waking a
     * runtime-suspended device. 0, or a negative errno with reason (shown as an error; the
     * records it did fill are still merged). */
    int (*sample)(void *state, struct tele_gpu *out, size_t cap, size_t *n, char *reason,
                  size_t reasonlen);
    /* Stop any thread, free state. Called once after a successful open. */
    void (*close)(void *state);
};

/* The registry, in merge priority order: the first provider to set a field wins. */
extern const struct tele_prov_ops *const tele_prov_table[];
extern const size_t tele_prov_count;

/* Providers not built into this binary (NULL-terminated): shown as unavailable, with what
 * building them needs. */
struct tele_prov_absent {
    const char *name, *needs;
};
extern const struct tele_prov_absent tele_prov_absent[];

/* The providers (each file defines one). */
extern const struct tele_prov_ops tele_prov_sysfs_ops;
extern const struct tele_prov_ops tele_prov_libdrm_ops;
extern const struct tele_prov_ops tele_prov_rsmi_ops;
extern const struct tele_prov_ops tele_prov_debugfs_ops;
extern const struct tele_prov_ops tele_prov_fdinfo_ops;
extern const struct tele_prov_ops tele_prov_nvml_ops;

/* Set field f valid with value v (the merge stamps the provider). */
static inline void tele_set(struct tele_gpu *g, enum tele_field f, double v) {
    g->f[f] = v;
    g->src[f] = 1;
}

/* ---- helpers for providers that read files (tele_file.c) ---- */

/* root + "/" + rel (rel may start with '/'). -ENAMETOOLONG when it does not fit. */
int tele_path(char *out, size_t cap, const char *root, const char *rel);

/* Read a small text file without blocking (O_NONBLOCK, one read of at most cap-1 bytes),
 * NUL-terminated, trailing newline kept. Returns bytes read or a negative errno. */
ssize_t tele_read_text(const char *path, char *buf, size_t cap);

/* The same for a binary file (no NUL). */
ssize_t tele_read_bin(const char *path, void *buf, size_t cap);

/* A file holding one unsigned integer (decimal, or 0x hex), surrounding space allowed.
 * 0, -errno when unreadable, -EINVAL when it is not a number. */
int tele_read_u64(const char *path, uint64_t *out);

/* The first line of a file, without its newline. 0 or a negative errno. */
int tele_read_line(const char *path, char *out, size_t cap);

/* "0000:03:00.0" in canonical lower case into out (16 bytes); false when s is not a PCI
 * address (a missing domain is taken as 0000). */
bool tele_pci_norm(const char *s, char out[16]);

/* The value of KEY=value in a uevent file's text, into out; false when absent. */
bool tele_uevent_get(const char *text, const char *key, char *out, size_t cap);

/* PCI_SLOT_NAME of a uevent text, normalised (tele_pci_norm); false when absent or bad. */
bool tele_uevent_pci(const char *text, char pci[16]);

/* power/runtime_status text: "active", or asleep for "suspended" and the transitions into and
 * out of it (a read then would wait for, or force, the resume); unknown otherwise
 * ("unsupported": no runtime PM, the device stays on). */
enum tele_power tele_power_parse(const char *status);

/* The runtime-PM state of the device directory dev (its power/runtime_status), or of the PCI
 * device pci under the sysfs root sys (SYS/bus/pci/devices/PCI). Unknown when unreadable. */
enum tele_power tele_power_read(const char *dev);
enum tele_power tele_pci_power(const char *sys, const char *pci);

/* A human reason for errno rc on path: "permission denied: PATH (needs root)" etc. */
void tele_reason_errno(char *reason, size_t cap, int rc, const char *path);

#endif
