/* Kernel-log classifier throughput on one thread: a 2M-line corpus of ordinary kernel chatter
 * with 10% GPU-driver lines from the fixtures, and a flood of GPU lines only, each against
 * `grep -c -E` over the same lines in a file (what users did by hand). Usage:
 *   bench_kmsg [FIXTURE_DIR] [--lines N]     FIXTURE_DIR: tests/fixtures/kmsg */
#include "backend/kmsg/kmsg_classify.h"
#include "backend/kmsg/kmsg_parse.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef RS_FIXTURES
#define RS_FIXTURES "tests/fixtures"
#endif

#define BENCH_KMSG_RUNS 5
#define BENCH_KMSG_GREP "amdgpu|NVRM|kfd|drm|Xid|sq_intr|HSA_STATUS|HIPBLAS|Memory access fault"
#define BENCH_KMSG_GOAL 1e6 /* lines/s on one core, mixed corpus */

extern char **environ;

/* Lines stored back to back, each ending in '\n'; line i is text[off[i] .. off[i+1] - 1). */
struct bench_kmsg_lines {
    char *text;
    size_t len, cap;
    size_t *off;
    size_t n, n_cap;
};

static void *bench_kmsg_grow(void *p, size_t *cap, size_t need, size_t size) {
    if (need <= *cap)
        return p;
    size_t c = *cap ? *cap : 1024;
    while (c < need)
        c *= 2;
    void *q = realloc(p, c * size);
    if (!q) {
        fprintf(stderr, "bench_kmsg: out of memory\n");
        exit(1);
    }
    *cap = c;
    return q;
}

static void bench_kmsg_add(struct bench_kmsg_lines *b, const char *s, size_t n) {
    b->text = bench_kmsg_grow(b->text, &b->cap, b->len + n + 1, 1);
    b->off = bench_kmsg_grow(b->off, &b->n_cap, b->n + 2, sizeof(*b->off));
    if (b->n == 0)
        b->off[0] = 0;
    memcpy(b->text + b->len, s, n);
    b->len += n;
    b->text[b->len++] = '\n';
    b->off[++b->n] = b->len;
}

static void bench_kmsg_free(struct bench_kmsg_lines *b) {
    free(b->text);
    free(b->off);
    memset(b, 0, sizeof(*b));
}

static const char *bench_kmsg_line(const struct bench_kmsg_lines *b, size_t i, size_t *n) {
    *n = b->off[i + 1] - b->off[i] - 1;
    return b->text + b->off[i];
}

/* The log lines of one fixture (not its "# " notes, not empty lines). */
static void bench_kmsg_load_file(struct bench_kmsg_lines *gpu, const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) {
        perror(path);
        exit(2);
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, f)) >= 0) {
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
            n--;
        if (n > 0 && line[0] != '#')
            bench_kmsg_add(gpu, line, (size_t)n);
    }
    free(line);
    fclose(f);
}

static bool bench_kmsg_is_log(const char *name) {
    size_t n = strlen(name);
    return n > 4 && strcmp(name + n - 4, ".log") == 0;
}

/* Every DIR/SUB/NAME.log, in name order; returns the number of files. */
static int bench_kmsg_load(struct bench_kmsg_lines *gpu, const char *dir) {
    struct dirent **subs;
    int ns = scandir(dir, &subs, NULL, alphasort);
    if (ns < 0) {
        perror(dir);
        exit(2);
    }
    int files = 0;
    char path[4096];
    for (int i = 0; i < ns; i++) {
        struct stat st;
        snprintf(path, sizeof(path), "%s/%s", dir, subs[i]->d_name);
        struct dirent **logs;
        int nl = subs[i]->d_name[0] != '.' && stat(path, &st) == 0 && S_ISDIR(st.st_mode)
                     ? scandir(path, &logs, NULL, alphasort)
                     : -1;
        for (int k = 0; k < nl; k++) {
            if (bench_kmsg_is_log(logs[k]->d_name)) {
                char file[4096 + 256];
                snprintf(file, sizeof(file), "%s/%s", path, logs[k]->d_name);
                bench_kmsg_load_file(gpu, file);
                files++;
            }
            free(logs[k]);
        }
        if (nl >= 0)
            free(logs);
        free(subs[i]);
    }
    free(subs);
    return files;
}

static uint64_t bench_kmsg_rand(uint64_t *s) {
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

/* One line of ordinary (non-GPU) kernel chatter, template k, without the stamp. */
static int bench_kmsg_chatter(char *buf, size_t cap, unsigned k, uint64_t r) {
    unsigned a = (unsigned)(r & 0xffff), b = (unsigned)((r >> 16) & 0xffff);
    unsigned c = (unsigned)((r >> 32) & 0xfffffff);
    switch (k % 22) {
    case 0:
        return snprintf(buf, cap, "usb 1-%u: new high-speed USB device number %u using xhci_hcd",
                        1 + a % 4, 2 + b % 60);
    case 1:
        return snprintf(buf, cap,
                        "EXT4-fs (nvme0n1p2): mounted filesystem %08x-1b2c-4d5e-8f90-a1b2c3d4e5f6 "
                        "r/w with ordered data mode. Quota mode: none.",
                        c);
    case 2:
        return snprintf(buf, cap, "IPv6: ADDRCONF(NETDEV_CHANGE): eth%u: link becomes ready",
                        a % 2);
    case 3:
        return snprintf(buf, cap,
                        "audit: type=1400 audit(1700%06u.%03u:%u): apparmor=\"STATUS\" "
                        "operation=\"profile_replace\" profile=\"unconfined\" "
                        "name=\"snap-update-ns.firefox\" pid=%u comm=\"apparmor_parser\"",
                        c % 1000000, a % 1000, 100 + b, 1000 + a);
    case 4:
        return snprintf(buf, cap,
                        "e1000e 0000:00:1f.6 eno1: NIC Link is Up 1000 Mbps Full Duplex, Flow "
                        "Control: Rx/Tx");
    case 5:
        return snprintf(buf, cap, "nvme nvme0: %u/0/0 default/read/poll queues", 1 + a % 32);
    case 6:
        return snprintf(buf, cap,
                        "input: Logitech USB Receiver as /devices/pci0000:00/0000:00:14.0/usb1/"
                        "1-%u/1-%u:1.0/0003:046D:C52B.%04X/input/input%u",
                        1 + a % 4, 1 + a % 4, b % 0x100, 10 + b % 40);
    case 7:
        return snprintf(buf, cap,
                        "[UFW BLOCK] IN=eth0 OUT= MAC=52:54:00:12:34:56:52:54:00:65:43:21:08:00 "
                        "SRC=10.0.%u.%u DST=10.0.0.1 LEN=60 TOS=0x00 PREC=0x00 TTL=64 ID=%u DF "
                        "PROTO=TCP SPT=%u DPT=22 WINDOW=64240 RES=0x00 SYN URGP=0",
                        a % 256, b % 256, c % 65536, 1024 + a);
    case 8:
        return snprintf(buf, cap, "br-3f2a1c0e9d8b: port %u(veth%07x) entered forwarding state",
                        1 + a % 8, c);
    case 9:
        return snprintf(buf, cap,
                        "TCP: request_sock_TCP: Possible SYN flooding on port %u. Sending "
                        "cookies.  Check SNMP counters.",
                        8000 + a % 1000);
    case 10:
        return snprintf(buf, cap,
                        "perf: interrupt took too long (%u > %u), lowering "
                        "kernel.perf_event_max_sample_rate to %u",
                        2500 + a % 3000, 2500 + a % 2000, 40000 + b);
    case 11:
        return snprintf(buf, cap, "xhci_hcd 0000:00:14.0: xHCI Host Controller");
    case 12:
        return snprintf(buf, cap, "usb-storage 2-%u:1.0: USB Mass Storage device detected",
                        1 + a % 4);
    case 13:
        return snprintf(buf, cap, "sd %u:0:0:0: [sdb] %u 512-byte logical blocks: (%u GB/%u GiB)",
                        4 + a % 4, c * 16, c / 131072 + 1, c / 140737 + 1);
    case 14:
        return snprintf(buf, cap,
                        "CPU%u: Core temperature above threshold, cpu clock throttled (total "
                        "events = %u)",
                        a % 64, b);
    case 15:
        return snprintf(buf, cap, "docker0: port %u(veth%07x) entered blocking state", 1 + a % 8,
                        c);
    case 16:
        return snprintf(buf, cap, "kauditd_printk_skb: %u callbacks suppressed", 1 + a % 40);
    case 17:
        return snprintf(buf, cap,
                        "Out of memory: Killed process %u (python3) total-vm:%ukB, "
                        "anon-rss:%ukB, file-rss:0kB, shmem-rss:0kB, UID:1000 pgtables:%ukB "
                        "oom_score_adj:0",
                        1000 + a, c, c / 2, b);
    case 18:
        return snprintf(buf, cap, "zram0: detected capacity change from 0 to %u", c * 8);
    case 19:
        return snprintf(buf, cap,
                        "wlp2s0: authenticate with 3c:84:6a:%02x:%02x:%02x (local "
                        "address=f4:8c:50:11:22:33)",
                        a % 256, b % 256, c % 256);
    case 20:
        return snprintf(buf, cap,
                        "systemd-journald[%u]: Data hash table of /var/log/journal/"
                        "%08x/system.journal has a fill level at 75.0 (%u of %u items), "
                        "suggesting rotation.",
                        300 + a % 400, c, 8000 + b, 10000 + b);
    default:
        return snprintf(buf, cap,
                        "EXT4-fs (sda1): re-mounted %08x-9abc-4def-8012-3456789abcde. "
                        "Quota mode: none.",
                        c);
    }
}

/* n lines: GPU lines from the fixtures (cycled) every `gpu_every` lines (1: all of them), dmesg
 * chatter with increasing stamps otherwise. */
static void bench_kmsg_build(struct bench_kmsg_lines *out, const struct bench_kmsg_lines *gpu,
                             size_t n, size_t gpu_every) {
    uint64_t rng = 0x243f6a8885a308d3ull;
    uint64_t us = 5000000;
    size_t next_gpu = 0;
    unsigned tmpl = 0;
    for (size_t i = 0; i < n; i++) {
        if (i % gpu_every == gpu_every - 1) {
            size_t len;
            const char *s = bench_kmsg_line(gpu, next_gpu, &len);
            bench_kmsg_add(out, s, len);
            next_gpu = (next_gpu + 1) % gpu->n;
            continue;
        }
        uint64_t r = bench_kmsg_rand(&rng);
        us += 1 + r % 5000;
        char line[512];
        int k = snprintf(line, sizeof(line), "[%5u.%06u] ", (unsigned)(us / 1000000),
                         (unsigned)(us % 1000000));
        k += bench_kmsg_chatter(line + k, sizeof(line) - (size_t)k, tmpl + (unsigned)(r >> 59),
                                bench_kmsg_rand(&rng));
        tmpl++;
        size_t len = strnlen(line, sizeof(line)); /* what fitted */
        bench_kmsg_add(out, line, (size_t)k < len ? (size_t)k : len);
    }
}

static double bench_kmsg_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* The measured work: parse and classify every line, as the watcher does. */
static uint64_t bench_kmsg_classify(const struct bench_kmsg_lines *b) {
    struct kmsg_classifier cls;
    kmsg_classifier_init(&cls, KMSG_SRC_FILE, false);
    struct kmsg_event out[2];
    uint64_t events = 0;
    for (size_t i = 0; i < b->n; i++) {
        size_t n;
        const char *s = bench_kmsg_line(b, i, &n);
        struct kmsg_line l;
        kmsg_parse_text(s, n, &l);
        events += (uint64_t)kmsg_classifier_feed(&cls, &l, (uint32_t)(i + 1), out);
    }
    events += (uint64_t)kmsg_classifier_flush(&cls, &out[0]);
    return events;
}

/* `LC_ALL=C grep -c -E PATTERN path`: wall seconds, and its count in *matched; < 0 when grep
 * could not run. */
static double bench_kmsg_grep(const char *path, long *matched) {
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addclose(&fa, fds[0]);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    posix_spawn_file_actions_addclose(&fa, fds[1]);
    char *args[] = {(char *)"grep",          (char *)"-c", (char *)"-E",
                    (char *)BENCH_KMSG_GREP, (char *)path, NULL};
    pid_t pid;
    double t0 = bench_kmsg_now();
    int rc = posix_spawnp(&pid, "grep", &fa, NULL, args, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    int status = 0;
    if (rc == 0)
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
    double t = bench_kmsg_now() - t0;
    char out[64] = "";
    ssize_t got = read(fds[0], out, sizeof(out) - 1);
    close(fds[0]);
    if (rc != 0 || !WIFEXITED(status) || WEXITSTATUS(status) > 1 || got <= 0)
        return -1;
    out[got] = '\0';
    *matched = strtol(out, NULL, 10);
    return t;
}

/* Best of BENCH_KMSG_RUNS for the classifier and for grep over the same lines; the classifier's
 * lines per second. */
static double bench_kmsg_case(const char *name, const struct bench_kmsg_lines *b) {
    double best = 1e30;
    uint64_t events = 0;
    for (int r = 0; r < BENCH_KMSG_RUNS; r++) {
        double t0 = bench_kmsg_now();
        events = bench_kmsg_classify(b);
        double t = bench_kmsg_now() - t0;
        best = t < best ? t : best;
    }
    double rate = (double)b->n / best;

    const char *tmpdir = getenv("TMPDIR");
    char path[4096];
    snprintf(path, sizeof(path), "%s/bench_kmsg.XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp");
    int fd = mkstemp(path);
    double grep_best = -1;
    long matched = -1;
    if (fd >= 0) {
        size_t done = 0;
        while (done < b->len) {
            ssize_t w = write(fd, b->text + done, b->len - done);
            if (w <= 0)
                break;
            done += (size_t)w;
        }
        close(fd);
        for (int r = 0; done == b->len && r < BENCH_KMSG_RUNS; r++) {
            double t = bench_kmsg_grep(path, &matched);
            if (t < 0) {
                grep_best = -1;
                break;
            }
            grep_best = grep_best < 0 || t < grep_best ? t : grep_best;
        }
        unlink(path);
    }
    char ref[128] = "grep -E n/a";
    if (grep_best > 0) {
        double grep_rate = (double)b->n / grep_best;
        snprintf(ref, sizeof(ref), "grep -E %.2f M lines/s, ratio %.2fx", grep_rate / 1e6,
                 rate / grep_rate);
    }
    printf("bench_kmsg: %s %zu lines %.2f s %.2f M lines/s (%s) events %llu (grep matched "
           "%ld lines)\n",
           name, b->n, best, rate / 1e6, ref, (unsigned long long)events, matched);
    fflush(stdout);
    return rate;
}

int main(int argc, char **argv) {
    const char *dir = RS_FIXTURES "/kmsg";
    size_t n = 2000000;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--lines") == 0 && i + 1 < argc) {
            char *end;
            long long v = strtoll(argv[++i], &end, 10);
            if (*end || v < 10) {
                fprintf(stderr, "bench_kmsg: --lines takes a number >= 10\n");
                return 2;
            }
            n = (size_t)v;
        } else if (argv[i][0] == '-') {
            fprintf(stderr, "usage: bench_kmsg [FIXTURE_DIR] [--lines N]\n");
            return 2;
        } else {
            dir = argv[i];
        }
    }
    setenv("LC_ALL", "C", 1); /* for grep */
    struct bench_kmsg_lines gpu = {0};
    int files = bench_kmsg_load(&gpu, dir);
    if (gpu.n == 0) {
        fprintf(stderr, "bench_kmsg: no log lines in %s/*/*.log\n", dir);
        return 2;
    }
    printf("bench_kmsg: %zu GPU lines from %d fixtures in %s; one thread, best of %d\n", gpu.n,
           files, dir, BENCH_KMSG_RUNS);

    struct bench_kmsg_lines corpus = {0};
    bench_kmsg_build(&corpus, &gpu, n, 10);
    double mixed = bench_kmsg_case("mixed", &corpus);
    bench_kmsg_free(&corpus);

    bench_kmsg_build(&corpus, &gpu, n, 1);
    bench_kmsg_case("gpu-only", &corpus);
    bench_kmsg_free(&corpus);
    bench_kmsg_free(&gpu);

    printf("bench_kmsg: goal >= %.0f M lines/s on one core: %s\n", BENCH_KMSG_GOAL / 1e6,
           mixed >= BENCH_KMSG_GOAL ? "PASS" : "FAIL");
    return 0;
}
