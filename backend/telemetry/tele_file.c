/* File helpers for the providers that read sysfs, debugfs and /proc: root-relative paths,
 * non-blocking small reads, numbers, PCI addresses and human reasons for errors. */
#include "backend/telemetry/tele_prov.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int tele_path(char *out, size_t cap, const char *root, const char *rel) {
    while (*rel == '/')
        rel++;
    size_t rl = strlen(root);
    while (rl > 0 && root[rl - 1] == '/')
        rl--; /* "/" becomes "", so the result is "/proc", not "//proc" */
    int n = snprintf(out, cap, "%.*s/%s", (int)rl, root, rel);
    return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : 0;
}

/* sysfs and debugfs files are read in one go: the kernel formats the whole text at the first
 * read, so a second read could see a newer value torn against the first. */
ssize_t tele_read_bin(const char *path, void *buf, size_t cap) {
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return -errno;
    size_t got = 0;
    while (got < cap) {
        ssize_t r = read(fd, (char *)buf + got, cap - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int e = errno;
            close(fd);
            return e == EAGAIN ? -EAGAIN : -e;
        }
        if (r == 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    return (ssize_t)got;
}

ssize_t tele_read_text(const char *path, char *buf, size_t cap) {
    if (cap == 0)
        return -EINVAL;
    ssize_t n = tele_read_bin(path, buf, cap - 1);
    buf[n < 0 ? 0 : n] = '\0';
    return n;
}

int tele_read_u64(const char *path, uint64_t *out) {
    char buf[64];
    ssize_t n = tele_read_text(path, buf, sizeof(buf));
    if (n < 0)
        return (int)n;
    const char *p = buf;
    while (isspace((unsigned char)*p))
        p++;
    if (!isdigit((unsigned char)*p))
        return -EINVAL;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(p, &end, 0);
    if (errno || end == p)
        return -EINVAL;
    while (isspace((unsigned char)*end))
        end++;
    if (*end)
        return -EINVAL;
    *out = (uint64_t)v;
    return 0;
}

int tele_read_line(const char *path, char *out, size_t cap) {
    ssize_t n = tele_read_text(path, out, cap);
    if (n < 0)
        return (int)n;
    out[strcspn(out, "\n")] = '\0';
    return 0;
}

bool tele_pci_norm(const char *s, char out[16]) {
    unsigned dom = 0, bus, dev, fn;
    int end = -1;
    /* only hex digits and separators: %x alone would take "0x" prefixes */
    if (!s[0] || strspn(s, "0123456789abcdefABCDEF:.") != strlen(s))
        return false;
    if (sscanf(s, "%x:%x:%x.%x%n", &dom, &bus, &dev, &fn, &end) != 4 || s[end] != '\0') {
        dom = 0;
        end = -1;
        if (sscanf(s, "%x:%x.%x%n", &bus, &dev, &fn, &end) != 3 || s[end] != '\0')
            return false;
    }
    if (dom > 0xffff || bus > 0xff || dev > 0x1f || fn > 7)
        return false;
    snprintf(out, 16, "%04x:%02x:%02x.%x", dom, bus, dev, fn);
    return true;
}

bool tele_uevent_get(const char *text, const char *key, char *out, size_t cap) {
    size_t klen = strlen(key);
    for (const char *line = text; *line;) {
        size_t len = strcspn(line, "\n");
        if (len > klen && strncmp(line, key, klen) == 0 && line[klen] == '=') {
            snprintf(out, cap, "%.*s", (int)(len - klen - 1), line + klen + 1);
            return true;
        }
        line += len + (line[len] == '\n');
    }
    return false;
}

bool tele_uevent_pci(const char *text, char pci[16]) {
    char slot[32];
    return tele_uevent_get(text, "PCI_SLOT_NAME", slot, sizeof(slot)) && tele_pci_norm(slot, pci);
}

enum tele_power tele_power_parse(const char *status) {
    if (strcmp(status, "active") == 0)
        return TELE_POWER_ACTIVE;
    if (strcmp(status, "suspended") == 0 || strcmp(status, "suspending") == 0 ||
        strcmp(status, "resuming") == 0)
        return TELE_POWER_SUSPENDED;
    return TELE_POWER_UNKNOWN;
}

enum tele_power tele_power_read(const char *dev) {
    char path[TELE_PATH_MAX], status[32];
    if (tele_path(path, sizeof(path), dev, "power/runtime_status") < 0 ||
        tele_read_line(path, status, sizeof(status)) < 0)
        return TELE_POWER_UNKNOWN;
    return tele_power_parse(status);
}

enum tele_power tele_pci_power(const char *sys, const char *pci) {
    char rel[64], dev[TELE_PATH_MAX];
    snprintf(rel, sizeof(rel), "bus/pci/devices/%.16s", pci);
    if (tele_path(dev, sizeof(dev), sys, rel) < 0)
        return TELE_POWER_UNKNOWN;
    return tele_power_read(dev);
}

void tele_reason_errno(char *reason, size_t cap, int rc, const char *path) {
    int e = rc < 0 ? -rc : rc;
    if (e == EACCES || e == EPERM)
        snprintf(reason, cap, "permission denied: %s (needs root)", path);
    else if (e == ENOENT)
        snprintf(reason, cap, "not found: %s", path);
    else
        snprintf(reason, cap, "%s: %s", path, strerror(e));
}
