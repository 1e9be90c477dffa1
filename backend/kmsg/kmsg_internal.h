/* The classifier's parts: the keyword scan, the rule table (data) and the template matcher. */
#ifndef RINGSIDE_BACKEND_KMSG_KMSG_INTERNAL_H
#define RINGSIDE_BACKEND_KMSG_KMSG_INTERNAL_H

#include "backend/kmsg/kmsg.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Substrings a rule can require. One pass over a line finds which of them occur, so a line is
 * tried only against the rules whose keywords it holds (most lines: none at all). */
#define KMSG_KEYWORDS(X)                                                                           \
    X(AMDGPU, "amdgpu")                                                                            \
    X(DRM, "drm")                                                                                  \
    X(KFD, "kfd")                                                                                  \
    X(RADEON, "radeon")                                                                            \
    X(NVRM, "NVRM")                                                                                \
    X(NVIDIA, "nvidia")                                                                            \
    X(TIMEOUT, "timeout")                                                                          \
    X(RING, "ring ")                                                                               \
    X(MES, "MES")                                                                                  \
    X(LEGACY, "legacy queue")                                                                      \
    X(RESET, "reset")                                                                              \
    X(RECOVERY_L, "recovery")                                                                      \
    X(VRAM_LOST, "VRAM is lost")                                                                   \
    X(COREDUMP, "coredump")                                                                        \
    X(WEDGED, "wedged")                                                                            \
    X(PAGE_FAULT, "page fault")                                                                    \
    X(GPU_FAULT, "GPU fault detected")                                                             \
    X(PROCESS, "Process ")                                                                         \
    X(PROCESS_L, "process ")                                                                       \
    X(IN_PAGE, "in page starting")                                                                 \
    X(PROT_FAULT, "PROTECTION_FAULT")                                                              \
    X(UTCL2, "UTCL2 client ID")                                                                    \
    X(FAULT_BITS, "_FAULTS: ")                                                                     \
    X(FAULT_ERR, "_ERROR: ")                                                                       \
    X(RW, "RW: ")                                                                                  \
    X(VM_FAULT, "VM fault (")                                                                      \
    X(SQ_INTR, "sq_intr")                                                                          \
    X(QUEUE, "queue")                                                                              \
    X(EVICT, "vict")                                                                               \
    X(QUIESCE, "quiesce")                                                                          \
    X(QCM, "qcm fence")                                                                            \
    X(WAVE, "wave fronts")                                                                         \
    X(RUNLIST, "Runlist")                                                                          \
    X(PASID, "PASID")                                                                              \
    X(PREEMPT, "reemption")                                                                        \
    X(XID, "Xid")                                                                                  \
    X(FALLEN, "fallen off the bus")                                                                \
    X(RMINIT, "RmInitAdapter")                                                                     \
    X(MEM_ACCESS, "Memory access fault by GPU")                                                    \
    X(HSA_STATUS, "HSA_STATUS_ERROR")                                                              \
    X(NO_BINARY, "hipErrorNoBinaryForGpu")                                                         \
    X(NO_IMAGE, "no kernel image is available")                                                    \
    X(INVALID_FN, "invalid device function")                                                       \
    X(HIPBLAS, "HIPBLAS_STATUS_")                                                                  \
    X(HIPBLAS_L, "hipblasStatus")                                                                  \
    X(HIPBLASLT, "hipBLASLt")                                                                      \
    X(ROCBLAS, "rocBLAS error")                                                                    \
    X(CUBLAS, "CUBLAS_STATUS_")                                                                    \
    X(HIP_ERROR, "HIP error")                                                                      \
    X(ERROR_MARK, "*ERROR*")                                                                       \
    X(TEST_FAILED, "test failed")                                                                  \
    X(SMU, "SMU")                                                                                  \
    X(SMC, "SMC ")                                                                                 \
    X(FATAL, "Fatal")                                                                              \
    X(FENCE, "Fence fallback")                                                                     \
    X(LOCKUP, "lockup")                                                                            \
    X(AVFS, "AVFS")                                                                                \
    X(MISMATCH, "mismatch")                                                                        \
    X(SUCCEEDED, "succeeded")                                                                      \
    X(FAILED, "failed")                                                                            \
    X(FAILED_C, "Failed")

enum kmsg_keyword {
#define X(id, text) KMSG_KW_##id,
    KMSG_KEYWORDS(X)
#undef X
        KMSG_KW_COUNT
};
_Static_assert(KMSG_KW_COUNT <= 64, "one bit per keyword");
#define KMSG_KW(id) (1ull << KMSG_KW_##id)

/* Bits of the keywords that occur in text. */
uint64_t kmsg_keywords_scan(const char *text, size_t len);

/* Groups: an event whose following lines add to it. */
enum kmsg_group {
    KMSG_G_NONE,
    KMSG_G_TIMEOUT, /* ring timeout: then "Process information: ..." */
    KMSG_G_FAULT,   /* gmc v9+ page fault: address, status, client, fault bits, process */
    KMSG_G_FAULT8,  /* gmc v7/v8 "GPU fault detected": VM_CONTEXT1_* and "VM fault (...)" */
    KMSG_G_NVGPU,   /* NVRM's "The NVIDIA GPU ..." record: a failure only if a later line says */
    KMSG_G_LOCKUP,  /* radeon "ring N stalled ...": then "GPU lockup (... on ring N)" */
    KMSG_G_NVAPI,   /* NVRM's "API mismatch" record, printed over four or five NVRM lines */
};

enum kmsg_rule_flags {
    KMSG_R_CONT = 1 << 0,  /* only continues an open group of a kind in `groups` */
    KMSG_R_CLOSE = 1 << 1, /* ... and closes it */
    KMSG_R_RET = 1 << 2,   /* severity from %{ret}: info when 0, else error */
    KMSG_R_XID = 1 << 3,   /* severity from the Xid number */
    KMSG_R_EXTRA = 1 << 4, /* only adds fields to an event of its category another rule made */
    KMSG_R_RING = 1 << 5,  /* a continuation naming a ring continues only that ring's group */
};

struct kmsg_rule {
    uint64_t need;    /* keyword bits that must all occur */
    const char *tmpl; /* literal text with %{field} captures (see kmsg_match) */
    uint8_t category; /* enum kmsg_category */
    uint8_t severity; /* enum ev_severity */
    uint8_t vendor;   /* enum kmsg_vendor; NONE: decided from the line */
    uint8_t group;    /* head: the group it opens; continuation: the groups it continues (bits);
                       * a continuation with a category gives the group that category */
    uint8_t flags;    /* enum kmsg_rule_flags */
};

/* The rule table, most specific first; the first rule that matches wins. */
extern const struct kmsg_rule kmsg_rules[];
extern const size_t kmsg_rules_count;

/* Match tmpl against text: its first literal is searched for, the rest must follow. Captures
 * (%{ring}, %{pid}, %{addr}, ... and %{*} to skip) take the text up to the next literal, or
 * to the end; each is parsed into e (its KMSG_HAS bit set when it parses; an unparsable
 * value is left unset, not a mismatch). ret receives %{ret}. True on a match. */
bool kmsg_match(const char *tmpl, const char *text, size_t len, struct kmsg_event *e, long *ret);

/* Whether a message was printed by a GPU driver (amdgpu, amdkfd, DRM and FreeBSD's drm-kmod,
 * NVRM and NVIDIA's other modules), judged by how it starts. */
bool kmsg_vocab_driver_line(const char *text, size_t len);

/* The severity (enum ev_severity) of the strongest failure word or phrase in text ("failed",
 * "timed out", "not ready", "fatal", ...: whole words, any case), or -1 when it has none. */
int kmsg_vocab_failure(const char *text, size_t len);

/* Whether text is a line healthy systems print although it uses failure words. */
bool kmsg_benign_match(const char *text, size_t len);

/* The first PCI address ("0000:03:00.0", or NVRM's "0000:3b:00") in text, normalised into
 * out[16]; false when there is none. */
bool kmsg_find_pci(const char *text, size_t len, char *out);

/* Copy at most cap-1 bytes of s into out, NUL-terminated, with control characters and invalid
 * UTF-8 replaced by '?' and no multi-byte character cut in half. */
void kmsg_copy_clean(char *out, size_t cap, const char *s, size_t n);

#endif
