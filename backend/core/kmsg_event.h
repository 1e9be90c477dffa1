/* The kernel-log watcher's vocabulary: a parsed log line, and a classified driver event (one
 * or several lines grouped) with the fields extracted from it. Plain values, copied by value
 * across threads (an event travels inside struct ev). */
#ifndef RINGSIDE_BACKEND_CORE_KMSG_EVENT_H
#define RINGSIDE_BACKEND_CORE_KMSG_EVENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What went wrong, by the part of the stack that reported it. NONE: not a failure.
 * DRIVER_OTHER: a GPU driver's line no rule names that speaks of failure (the last layer).
 * Each with its name (the JSON lines, the metrics' label, the rules), the label the dashboard's
 * list gives it, and its letter on the timeline's kernel row (one a category, none shared). */
#define KMSG_CATEGORIES(X)                                                                         \
    X(NONE, "none", "driver", " ")                                                                 \
    X(RING_TIMEOUT, "ring_timeout", "ring timeout", "T")                                           \
    X(MES, "mes", "MES", "M")                                                                      \
    X(GPU_RESET, "gpu_reset", "GPU reset", "R")                                                    \
    X(PAGE_FAULT, "page_fault", "page fault", "P")                                                 \
    X(SQ_INTR, "sq_intr", "sq_intr", "S")                                                          \
    X(KFD, "kfd", "KFD", "K")                                                                      \
    X(XID, "xid", "Xid", "X")                                                                      \
    X(FATAL_OTHER, "fatal_other", "fatal", "!")                                                    \
    X(DRIVER_OTHER, "driver_other", "driver other", "D")

enum kmsg_category {
#define X(id, name, label, letter) KMSG_CAT_##id,
    KMSG_CATEGORIES(X)
#undef X
        KMSG_CAT_COUNT
};

/* Who printed it: the amdgpu driver, NVIDIA's (NVRM), amdkfd, the DRM core, or the HIP/ROCm
 * (or CUDA) user-space runtime on a process's stderr. */
#define KMSG_VENDORS(X)                                                                            \
    X(NONE, "")                                                                                    \
    X(AMDGPU, "amdgpu")                                                                            \
    X(NVIDIA, "nvidia")                                                                            \
    X(KFD, "kfd")                                                                                  \
    X(DRM, "drm")                                                                                  \
    X(HIP, "hip")

enum kmsg_vendor {
#define X(id, name) KMSG_VENDOR_##id,
    KMSG_VENDORS(X)
#undef X
        KMSG_VENDOR_COUNT
};

/* Where a line came from, and the name the JSON lines give it: /dev/kmsg; --kmsg-file (dmesg
 * / journalctl text) or `kmsg classify` input; the session log (what the runtime wrote to our
 * stderr). */
#define KMSG_SOURCES(X)                                                                            \
    X(KMSG, "kmsg")                                                                                \
    X(FILE, "file")                                                                                \
    X(STDERR, "stderr")

enum kmsg_source {
#define X(id, name) KMSG_SRC_##id,
    KMSG_SOURCES(X)
#undef X
        KMSG_SRC_COUNT
};

/* Fields an event may carry: bit KMSG_HAS_x set only when the field was read. */
#define KMSG_FIELDS(X)                                                                             \
    X(PCI)                                                                                         \
    X(RING)                                                                                        \
    X(SEQ)                                                                                         \
    X(PID)                                                                                         \
    X(PROCESS)                                                                                     \
    X(TID)                                                                                         \
    X(THREAD)                                                                                      \
    X(PASID)                                                                                       \
    X(VMID)                                                                                        \
    X(ADDR)                                                                                        \
    X(CLIENT)                                                                                      \
    X(XID)                                                                                         \
    X(NODE)                                                                                        \
    X(TS)

enum kmsg_field_bit {
#define X(id) KMSG_BIT_##id,
    KMSG_FIELDS(X)
#undef X
        KMSG_BIT_COUNT
};
#define KMSG_HAS(id) (1u << KMSG_BIT_##id)

#define KMSG_MSG_BYTES  176
#define KMSG_NAME_BYTES 24

/* A classified event: one log line, or a group (a ring timeout and its "Process information"
 * line; a page fault and its address, status and client lines) folded into its first line. */
struct kmsg_event {
    uint64_t ts_ns;                /* the first line's kernel timestamp (KMSG_HAS_TS): printk ns */
    uint64_t addr;                 /* faulting GPU virtual address (ADDR) */
    uint64_t seq_signaled;         /* ring timeout: last fence signalled (SEQ) */
    uint64_t seq_emitted;          /* ... and last emitted (SEQ) */
    uint32_t has;                  /* KMSG_HAS_* */
    uint32_t line;                 /* 1-based input line of the first line; 0 when unknown */
    uint32_t lines;                /* input lines folded into this event (>= 1) */
    int32_t pid, tid;              /* PID, TID (> 0 when set) */
    uint32_t pasid;                /* PASID */
    uint32_t node;                 /* HIP runtime "GPU node-N" (NODE) */
    uint16_t vmid;                 /* VMID */
    uint16_t xid;                  /* NVIDIA Xid number (XID) */
    uint8_t category;              /* enum kmsg_category */
    uint8_t severity;              /* enum ev_severity: info, warning, error */
    uint8_t vendor;                /* enum kmsg_vendor */
    uint8_t source;                /* enum kmsg_source */
    char pci[16];                  /* "0000:03:00.0" (PCI) */
    char ring[KMSG_NAME_BYTES];    /* "gfx_0.0.0", "gfx", "sdma0" (RING) */
    char process[KMSG_NAME_BYTES]; /* PROCESS */
    char thread[KMSG_NAME_BYTES];  /* THREAD */
    char client[32];               /* faulty client: "TCP", "CPC", "TC0" (CLIENT) */
    char message[KMSG_MSG_BYTES];  /* the first line's message, timestamp prefixes removed */
};

/* One log line split into its parts. Pointers point into the caller's buffer. */
struct kmsg_line {
    const char *text; /* the message, without the record header or timestamp prefixes */
    size_t len;
    uint64_t ts_ns; /* kernel (printk) timestamp, valid when has_ts */
    uint64_t seq;   /* /dev/kmsg sequence number, valid when has_seq */
    int prio;       /* syslog level 0 (emerg) .. 7 (debug), or -1 when unknown */
    bool has_ts, has_seq;
    bool cont;       /* a /dev/kmsg fragment flagged 'c' (continues the previous record) */
    char device[24]; /* /dev/kmsg DEVICE= dictionary value ("+pci:0000:03:00.0"), or "" */
};

#endif
