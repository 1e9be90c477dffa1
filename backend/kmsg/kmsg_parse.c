/* Kernel-log input into messages: /dev/kmsg records and dmesg/journalctl text lines. */
#include "backend/kmsg/kmsg_parse.h"

#include <errno.h>
#include <string.h>

static bool kmsg_parse_digit(char c) {
    return c >= '0' && c <= '9';
}

static bool kmsg_parse_alpha(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* Unsigned decimal at *p (advanced past it); false when there is none or it overflows. */
static bool kmsg_parse_u64(const char **p, const char *end, uint64_t *out) {
    const char *s = *p;
    uint64_t v = 0;
    if (s >= end || !kmsg_parse_digit(*s))
        return false;
    for (; s < end && kmsg_parse_digit(*s); s++) {
        if (v > (UINT64_MAX - 9) / 10)
            return false;
        v = v * 10 + (uint64_t)(*s - '0');
    }
    *p = s;
    *out = v;
    return true;
}

/* The DEVICE= dictionary entry among the record's " KEY=VALUE" lines. */
static void kmsg_parse_dict(const char *p, const char *end, struct kmsg_line *out) {
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *eol = nl ? nl : end;
        if (eol - p > 8 && memcmp(p, " DEVICE=", 8) == 0) {
            size_t n = (size_t)(eol - p - 8);
            n = n < sizeof(out->device) - 1 ? n : sizeof(out->device) - 1;
            memcpy(out->device, p + 8, n);
            out->device[n] = '\0';
        }
        p = nl ? nl + 1 : end;
    }
}

int kmsg_parse_record(const char *buf, size_t n, struct kmsg_line *out) {
    memset(out, 0, sizeof(*out));
    out->prio = -1;
    out->text = buf;
    out->len = n;
    const char *p = buf, *end = buf + n;
    const char *semi = memchr(buf, ';', n);
    uint64_t prio = 0, seq = 0, ts_us = 0;
    if (!semi || !kmsg_parse_u64(&p, semi, &prio) || p >= semi || *p++ != ',' ||
        !kmsg_parse_u64(&p, semi, &seq) || p >= semi || *p++ != ',' ||
        !kmsg_parse_u64(&p, semi, &ts_us) || p >= semi || *p++ != ',')
        return -EINVAL;
    out->prio = (int)(prio & 7);
    out->seq = seq;
    out->has_seq = true;
    out->ts_ns = ts_us * 1000ull;
    out->has_ts = ts_us <= UINT64_MAX / 1000ull;
    out->cont = *p == 'c';
    const char *msg = semi + 1;
    const char *nl = memchr(msg, '\n', (size_t)(end - msg));
    out->text = msg;
    out->len = (size_t)((nl ? nl : end) - msg);
    if (nl)
        kmsg_parse_dict(nl + 1, end, out);
    return 0;
}

/* "<3>" (dmesg -r): the syslog priority. */
static bool kmsg_parse_raw_prio(const char **p, const char *end, struct kmsg_line *out) {
    const char *s = *p + 1;
    uint64_t v = 0;
    if (**p != '<' || !kmsg_parse_u64(&s, end, &v) || s >= end || *s != '>')
        return false;
    out->prio = (int)(v & 7);
    *p = s + 1;
    return true;
}

/* "[  123.456789]": the kernel's monotonic stamp. */
static bool kmsg_parse_stamp(const char **p, const char *end, struct kmsg_line *out) {
    const char *s = *p + 1;
    uint64_t sec = 0, frac = 0;
    while (s < end && *s == ' ')
        s++;
    if (!kmsg_parse_u64(&s, end, &sec) || s >= end || *s != '.')
        return false;
    const char *f = ++s;
    if (!kmsg_parse_u64(&s, end, &frac) || s >= end || *s != ']' || s - f > 9 ||
        sec > UINT64_MAX / 1000000000ull - 1)
        return false;
    for (long k = (long)(s - f); k < 9; k++)
        frac *= 10;
    out->ts_ns = sec * 1000000000ull + frac;
    out->has_ts = true;
    *p = s + 1;
    return true;
}

/* "[Sun Feb 23 16:24:18 2025]" (dmesg -T). */
static bool kmsg_parse_ctime(const char **p, const char *end) {
    const char *s = *p;
    if (end - s < 26 || !kmsg_parse_alpha(s[1]) || !kmsg_parse_alpha(s[3]) || s[4] != ' ' ||
        !kmsg_parse_alpha(s[5]) || s[8] != ' ')
        return false;
    const char *close = memchr(s, ']', (size_t)(end - s) < 40 ? (size_t)(end - s) : 40);
    if (!close)
        return false;
    *p = close + 1;
    return true;
}

/* "2025-01-21T04:41:44,283302+00:00" (dmesg --time-format iso, journalctl -o short-iso). */
static bool kmsg_parse_iso(const char **p, const char *end) {
    const char *s = *p;
    if (end - s < 19 || !kmsg_parse_digit(s[0]) || !kmsg_parse_digit(s[3]) || s[4] != '-' ||
        s[7] != '-' || s[10] != 'T' || s[13] != ':')
        return false;
    while (s < end && *s != ' ')
        s++;
    *p = s;
    return true;
}

/* "Nov 24 14:52:39" (syslog and journalctl's short format), the month as the locale writes it
 * ("Okt", "kvě", "4月", "déc."): a word of letters (or bytes of a UTF-8 character), digits and
 * dots with at least one letter, the day (padded with a space below 10), the time. The day and
 * the time are checked first: most lines that are tried here are not dates. */
static bool kmsg_parse_syslog_date(const char **p, const char *end) {
    const char *word = *p;
    size_t room = (size_t)(end - word);
    const char *sp = memchr(word, ' ', room < 13 ? room : 13);
    if (!sp || sp == word || end - sp < 10)
        return false;
    const char *s = sp + 1;
    if (*s == ' ') /* "Nov  5": the day padded */
        s++;
    const char *day = s;
    while (s < end && kmsg_parse_digit(*s) && s - day < 2)
        s++;
    if (s == day || end - s < 9 || s[0] != ' ')
        return false;
    const char *t = s + 1;
    for (int k = 0; k < 8; k++)
        if (k == 2 || k == 5 ? t[k] != ':' : !kmsg_parse_digit(t[k]))
            return false;
    bool letter = false;
    for (const char *c = word; c < sp; c++) {
        if (kmsg_parse_alpha(*c) || (unsigned char)*c >= 0x80)
            letter = true;
        else if (!kmsg_parse_digit(*c) && *c != '.')
            return false;
    }
    if (!letter)
        return false;
    *p = t + 8;
    return true;
}

/* "kern  :err   : " (dmesg -x): the level gives the priority. */
static bool kmsg_parse_facility(const char **p, const char *end, struct kmsg_line *out) {
    static const char *const levels[] = {"emerg", "alert",  "crit", "err",
                                         "warn",  "notice", "info", "debug"};
    const char *s = *p;
    while (s < end && kmsg_parse_alpha(*s))
        s++;
    if (s == *p || s - *p > 8)
        return false;
    while (s < end && *s == ' ')
        s++;
    if (s >= end || *s != ':')
        return false;
    const char *lv = ++s;
    while (s < end && kmsg_parse_alpha(*s))
        s++;
    size_t lvn = (size_t)(s - lv);
    while (s < end && *s == ' ')
        s++;
    if (lvn == 0 || s >= end || *s != ':')
        return false;
    for (int k = 0; k < 8; k++)
        if (strlen(levels[k]) == lvn && memcmp(levels[k], lv, lvn) == 0)
            out->prio = k;
    *p = s + 1;
    return true;
}

/* "[2026-04-22T21:27:51.291882381Z]:" (Talos): an ISO time in brackets, then a colon. */
static bool kmsg_parse_bracket_iso(const char **p, const char *end) {
    const char *s = *p + 1;
    if (end - *p < 21 || **p != '[' || !kmsg_parse_iso(&s, end))
        return false;
    const char *close = memchr(*p, ']', (size_t)(end - *p) < 48 ? (size_t)(end - *p) : 48);
    if (!close)
        return false;
    *p = close + 1 < end && close[1] == ':' ? close + 2 : close + 1;
    return true;
}

/* "HOST: kern:    info: " (talosctl dmesg): a host word ending in ':', the "kern" facility and
 * a level padded on the left. */
static bool kmsg_parse_host_facility(const char **p, const char *end, struct kmsg_line *out) {
    static const char *const levels[] = {"emerg", "alert",  "crit", "err",
                                         "warn",  "notice", "info", "debug"};
    const char *s = *p;
    while (s < end && *s != ' ' && *s != ':')
        s++;
    if (s == *p || end - s < 7 || memcmp(s, ": kern:", 7) != 0)
        return false;
    s += 7;
    while (s < end && *s == ' ')
        s++;
    const char *lv = s;
    while (s < end && kmsg_parse_alpha(*s))
        s++;
    size_t lvn = (size_t)(s - lv);
    if (lvn == 0 || s >= end || *s != ':')
        return false;
    for (int k = 0; k < 8; k++)
        if (strlen(levels[k]) == lvn && memcmp(levels[k], lv, lvn) == 0)
            out->prio = k;
    if (lvn == 7 && memcmp(lv, "warning", 7) == 0) /* Talos spells the level out */
        out->prio = 4;
    *p = s + 1;
    return true;
}

/* "HOST kernel: " after a date (journalctl, syslog files): a word, then "kernel:". */
static bool kmsg_parse_host_kernel(const char **p, const char *end) {
    const char *s = *p;
    while (s < end && *s != ' ')
        s++;
    if (end - s >= 9 && memcmp(s, " kernel: ", 9) == 0) {
        *p = s + 9;
        return true;
    }
    if (end - *p >= 8 && memcmp(*p, "kernel: ", 8) == 0) {
        *p += 8;
        return true;
    }
    return false;
}

static const char *kmsg_parse_skip_spaces(const char *p, const char *end) {
    while (p < end && *p == ' ')
        p++;
    return p;
}

void kmsg_parse_text(const char *buf, size_t n, struct kmsg_line *out) {
    memset(out, 0, sizeof(*out));
    out->prio = -1;
    const char *p = buf, *end = buf + n;
    while (end > p && (end[-1] == '\r' || end[-1] == '\n'))
        end--;
    /* prefixes come in a few orders ("<3>[ 1.2] ", "Nov 24 ... host kernel: [ 1.2] "): peel
     * them off until none is left */
    for (int round = 0; round < 6; round++) {
        const char *s = kmsg_parse_skip_spaces(p, end);
        bool date = false;
        if (s >= end)
            break;
        if (*s == '<' && kmsg_parse_raw_prio(&s, end, out)) {
        } else if (*s == '[' && (kmsg_parse_stamp(&s, end, out) || kmsg_parse_ctime(&s, end) ||
                                 kmsg_parse_bracket_iso(&s, end))) {
            date = true;
        } else if (kmsg_parse_iso(&s, end) || kmsg_parse_syslog_date(&s, end)) {
            date = true;
        } else if (!kmsg_parse_facility(&s, end, out) && !kmsg_parse_host_facility(&s, end, out) &&
                   !kmsg_parse_host_kernel(&s, end)) {
            break;
        }
        s = kmsg_parse_skip_spaces(s, end);
        if (date)
            kmsg_parse_host_kernel(&s, end);
        p = s;
    }
    out->text = p;
    out->len = (size_t)(end - p);
}
