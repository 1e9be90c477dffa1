/* The classifier's last layer: whether a line comes from a GPU driver, and whether it speaks of
 * failure. A driver line no rule names that uses the vocabulary below becomes a driver_other
 * event (unless kmsg_benign knows it), so a failure phrased in a way no rule foresaw is still
 * seen, and counted, and a rule can be written where the count grows. */
#include "backend/core/ev.h"
#include "backend/kmsg/kmsg_internal.h"

#include <pthread.h>
#include <stddef.h>
#include <string.h>

/* How GPU drivers' lines start (after blanks): amdgpu's dev_* and pr_* forms, amdkfd, radeon's
 * dev_* form ("radeon 0000:01:00.0: ", not user space's "radeonsi: "), DRM's "[drm]"/"[drm:func]"
 * and FreeBSD drm-kmod's "drmn0:"/"[drm ERROR :func]", NVIDIA's NVRM, nvidia, nvidia-modeset,
 * nvidia-drm, nvidia-nvlink and nvidia-nvswitchN (SXid) modules. */
static const char *const kmsg_vocab_prefixes[] = {
    "amdgpu", "amdkfd", "kfd ", "kfd:", "radeon ", "[drm", "drm:", "drmn", "NVRM", "nvidia",
};

bool kmsg_vocab_driver_line(const char *text, size_t len) {
    while (len && (*text == ' ' || *text == '\t'))
        text++, len--;
    for (size_t i = 0; i < sizeof(kmsg_vocab_prefixes) / sizeof(kmsg_vocab_prefixes[0]); i++) {
        size_t n = strlen(kmsg_vocab_prefixes[i]);
        if (len >= n && memcmp(text, kmsg_vocab_prefixes[i], n) == 0)
            return true;
    }
    return false;
}

/* Failure words and phrases, lower case, matched case-insensitively as whole words. Words for
 * a device that stopped working are errors; the rest warnings. Left out on purpose: "invalid",
 * "bad", "unsupported", "not supported", "not available", "missing" (boot chatter on healthy
 * systems: optional firmware, features a board lacks) and "reset" (the rules name resets). */
static const struct kmsg_vocab_word {
    const char *text;
    uint8_t severity; /* enum ev_severity */
} kmsg_vocab_words[] = {
    {"failed", SEV_WARNING},       {"failure", SEV_WARNING},    {"fail", SEV_WARNING},
    {"fails", SEV_WARNING},        {"failing", SEV_WARNING},    {"error", SEV_WARNING},
    {"errors", SEV_WARNING},       {"timeout", SEV_WARNING},    {"timeouts", SEV_WARNING},
    {"timed out", SEV_WARNING},    {"timedout", SEV_WARNING},   {"time out", SEV_WARNING},
    {"assert", SEV_WARNING},       {"assertion", SEV_WARNING},  {"not ready", SEV_WARNING},
    {"no response", SEV_WARNING},  {"could not", SEV_WARNING},  {"couldn't", SEV_WARNING},
    {"cannot", SEV_WARNING},       {"can't", SEV_WARNING},      {"unable", SEV_WARNING},
    {"lost", SEV_WARNING},         {"stuck", SEV_WARNING},      {"corrupt", SEV_WARNING},
    {"corrupted", SEV_WARNING},    {"corruption", SEV_WARNING}, {"mismatch", SEV_WARNING},
    {"abort", SEV_WARNING},        {"aborted", SEV_WARNING},    {"aborting", SEV_WARNING},
    {"fault", SEV_WARNING},        {"faulted", SEV_WARNING},    {"exception", SEV_WARNING},
    {"not responding", SEV_ERROR}, {"unresponsive", SEV_ERROR}, {"unrecoverable", SEV_ERROR},
    {"uncorrectable", SEV_ERROR},  {"fatal", SEV_ERROR},        {"hang", SEV_ERROR},
    {"hangs", SEV_ERROR},          {"hung", SEV_ERROR},         {"hanged", SEV_ERROR},
    {"wedged", SEV_ERROR},         {"panic", SEV_ERROR},
};

#define KMSG_VOCAB_COUNT (sizeof(kmsg_vocab_words) / sizeof(kmsg_vocab_words[0]))
_Static_assert(KMSG_VOCAB_COUNT <= 64, "one bit per word");

static bool kmsg_vocab_wordch(unsigned char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

static unsigned char kmsg_vocab_lower(unsigned char c) {
    return c >= 'A' && c <= 'Z' ? (unsigned char)(c - 'A' + 'a') : c;
}

/* Whether word w (lower case) is at s[0..n) case-insensitively and ends a word there. */
static bool kmsg_vocab_at(const char *w, const unsigned char *s, size_t n) {
    size_t k = 0;
    for (; w[k]; k++)
        if (k >= n || kmsg_vocab_lower(s[k]) != (unsigned char)w[k])
            return false;
    return k == n || !kmsg_vocab_wordch(s[k]);
}

/* Per pair of lower-case letters: the words that start with them (bit k: kmsg_vocab_words[k]).
 * Most words of a driver line start with a pair no failure word does. Built once. */
static uint64_t kmsg_vocab_first[26 * 26];

static void kmsg_vocab_init(void) {
    for (size_t k = 0; k < KMSG_VOCAB_COUNT; k++) {
        const char *t = kmsg_vocab_words[k].text;
        kmsg_vocab_first[(t[0] - 'a') * 26 + (t[1] - 'a')] |= 1ull << k;
    }
}

/* The candidates for a word starting at s[0], s[1] (any case). */
static uint64_t kmsg_vocab_candidates(const unsigned char *s, size_t n) {
    if (n < 2)
        return 0;
    unsigned a = kmsg_vocab_lower(s[0]), b = kmsg_vocab_lower(s[1]);
    if (a < 'a' || a > 'z' || b < 'a' || b > 'z')
        return 0;
    return kmsg_vocab_first[(a - 'a') * 26 + (b - 'a')];
}

int kmsg_vocab_failure(const char *text, size_t len) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, kmsg_vocab_init);
    const unsigned char *u = (const unsigned char *)text;
    int sev = -1;
    bool in_word = false;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = u[i];
        bool start = !in_word;
        in_word = kmsg_vocab_wordch(c);
        if (!start || !in_word)
            continue; /* only the first character of a word */
        uint64_t cand = kmsg_vocab_candidates(u + i, len - i);
        while (cand) {
            unsigned k = (unsigned)__builtin_ctzll(cand);
            cand &= cand - 1;
            const struct kmsg_vocab_word *w = &kmsg_vocab_words[k];
            if (w->severity > sev && kmsg_vocab_at(w->text, u + i, len - i))
                sev = w->severity;
        }
        if (sev == SEV_ERROR)
            break;
    }
    return sev;
}
