/* IANA time zones from compiled zone files (TZif, RFC 8536): the transitions, their offsets,
 * and the POSIX rule the file's footer gives for times past the last transition. */
#include "backend/data/data_tz.h"

#include "backend/core/errbuf.h"
#include "backend/data/data_series.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DATA_TZ_FILE_MAX (1u << 20) /* zone files are a few kilobytes */
#define DATA_TZ_DAY      86400

/* A POSIX rule's "Mm.w.d/time": day d (0 Sunday) of week w (5: the last) of month m, at time
 * seconds of local time. */
struct data_tz_when {
    int month, week, wday;
    int32_t secs;
};

struct data_tz {
    size_t n_times, n_types;
    int64_t *times; /* transition instants, UTC, ascending */
    uint8_t *idx;   /* the type each one starts */
    int32_t *utoff; /* each type's offset, east positive */
    bool rule;      /* the footer's rule applies after the last transition */
    bool rule_dst;  /* ... and it has daylight saving */
    int32_t std_off, dst_off;
    struct data_tz_when start, end;
};

static uint32_t data_tz_be32(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int64_t data_tz_be64(const uint8_t *p) {
    return (int64_t)((uint64_t)data_tz_be32(p) << 32 | data_tz_be32(p + 4));
}

/* ---- the footer: a POSIX TZ string such as "CST6CDT,M3.2.0,M11.1.0" ---- */

static const char *data_tz_name(const char *s) {
    if (*s == '<') {
        const char *e = strchr(s, '>');
        return e ? e + 1 : NULL;
    }
    const char *p = s;
    while ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z'))
        p++;
    return p - s >= 3 ? p : NULL;
}

/* [+-]h[h][:mm[:ss]] into *secs (as written: POSIX offsets are positive west of Greenwich). */
static const char *data_tz_hms(const char *s, int32_t *secs) {
    int sign = 1, part[3] = {0, 0, 0};
    if (*s == '+' || *s == '-')
        sign = *s++ == '-' ? -1 : 1;
    for (int k = 0; k < 3; k++) {
        if (k > 0 && *s != ':')
            break;
        s += k > 0;
        if (*s < '0' || *s > '9')
            return NULL;
        int v = 0;
        for (int n = 0; n < 3 && *s >= '0' && *s <= '9'; n++)
            v = v * 10 + (*s++ - '0');
        part[k] = v;
    }
    *secs = sign * (part[0] * 3600 + part[1] * 60 + part[2]);
    return s;
}

/* "Mm.w.d[/time]"; other forms (Jn, n) are not read. */
static const char *data_tz_when(const char *s, struct data_tz_when *w) {
    if (*s++ != 'M')
        return NULL;
    char *e;
    w->month = (int)strtol(s, &e, 10);
    if (e == s || *e != '.')
        return NULL;
    s = e + 1;
    w->week = (int)strtol(s, &e, 10);
    if (e == s || *e != '.')
        return NULL;
    s = e + 1;
    w->wday = (int)strtol(s, &e, 10);
    if (e == s || w->month < 1 || w->month > 12 || w->week < 1 || w->week > 5 || w->wday < 0 ||
        w->wday > 6)
        return NULL;
    s = e;
    w->secs = 7200;
    if (*s == '/')
        s = data_tz_hms(s + 1, &w->secs);
    return s;
}

/* Parse the footer into tz's rule; a footer ringside cannot read leaves the last transition's
 * offset in force after it (zone files list transitions to 2037 at least). */
static void data_tz_footer(struct data_tz *tz, const char *s) {
    int32_t off, doff;
    const char *p = data_tz_name(s);
    if (!p || !(p = data_tz_hms(p, &off)))
        return;
    tz->std_off = -off;
    if (*p == '\0') {
        tz->rule = true;
        return;
    }
    if (!(p = data_tz_name(p)))
        return;
    tz->dst_off = tz->std_off + 3600;
    if (*p != ',' && *p != '\0') {
        if (!(p = data_tz_hms(p, &doff)))
            return;
        tz->dst_off = -doff;
    }
    if (*p++ != ',' || !(p = data_tz_when(p, &tz->start)) || *p++ != ',' ||
        !(p = data_tz_when(p, &tz->end)) || *p != '\0')
        return;
    tz->rule = tz->rule_dst = true;
}

/* Local seconds of rule day w in year y. */
static int64_t data_tz_rule_local(int y, const struct data_tz_when *w) {
    int len = data_days_in_month(y, w->month);
    int64_t day1 = data_days_from_civil(y, w->month, 1);
    int wd1 = (int)(((day1 + 4) % 7 + 7) % 7); /* 1970-01-01 was a Thursday */
    int d = 1 + (w->wday - wd1 + 7) % 7 + (w->week - 1) * 7;
    while (d > len)
        d -= 7;
    return (day1 + d - 1) * DATA_TZ_DAY + w->secs;
}

static int32_t data_tz_rule_offset(const struct data_tz *tz, int64_t t) {
    if (!tz->rule_dst)
        return tz->std_off;
    int y, m, d;
    int64_t day = data_floor_div(t + tz->std_off, DATA_TZ_DAY);
    data_civil_from_days(day, &y, &m, &d);
    int64_t on = data_tz_rule_local(y, &tz->start) - tz->std_off;
    int64_t off = data_tz_rule_local(y, &tz->end) - tz->dst_off;
    bool dst = on < off ? t >= on && t < off : !(t >= off && t < on);
    return dst ? tz->dst_off : tz->std_off;
}

int32_t data_tz_offset(const struct data_tz *tz, int64_t utc_s) {
    if (tz->n_times == 0 || utc_s < tz->times[0])
        return tz->n_times == 0 && tz->rule ? data_tz_rule_offset(tz, utc_s) : tz->utoff[0];
    size_t lo = 0, hi = tz->n_times; /* the last transition at or before utc_s: lo */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (tz->times[mid] <= utc_s)
            lo = mid;
        else
            hi = mid;
    }
    if (lo + 1 == tz->n_times && tz->rule)
        return data_tz_rule_offset(tz, utc_s);
    return tz->utoff[tz->idx[lo]];
}

int data_tz_to_utc(const struct data_tz *tz, int64_t local_s, int64_t after_utc_s, int64_t *utc_s) {
    int64_t best = 0, late = 0;
    bool found = false, any = false;
    size_t n = tz->n_types + 2;
    for (size_t k = 0; k < n; k++) { /* every offset the zone ever had, and the rule's */
        int32_t off = k < tz->n_types ? tz->utoff[k] : k == tz->n_types ? tz->std_off : tz->dst_off;
        int64_t t = local_s - off;
        if (data_tz_offset(tz, t) != off)
            continue;
        late = !any || t > late ? t : late;
        any = true;
        if (t > after_utc_s && (!found || t < best)) {
            best = t;
            found = true;
        }
    }
    if (!any)
        return -ERANGE;
    *utc_s = found ? best : late;
    return 0;
}

/* ---- the zone file ---- */

/* The counts of a TZif header at p (44 bytes): isut, isstd, leap, time, type, char. */
static void data_tz_counts(const uint8_t *p, uint32_t c[6]) {
    for (int k = 0; k < 6; k++)
        c[k] = data_tz_be32(p + 20 + 4 * k);
}

static size_t data_tz_block(const uint32_t c[6], size_t tsize) {
    return c[3] * tsize + c[3] + c[4] * 6 + c[5] + c[2] * (tsize + 4) + c[1] + c[0];
}

static int data_tz_parse(struct data_tz *tz, const uint8_t *b, size_t len) {
    uint32_t c[6];
    if (len < 44 || memcmp(b, "TZif", 4) != 0)
        return -EINVAL;
    data_tz_counts(b, c);
    size_t tsize = 4, at = 44, v1 = data_tz_block(c, 4);
    if (c[3] > 100000 || c[4] == 0 || c[4] > 256 || c[5] > 100000 || c[2] > 100000 || 44 + v1 > len)
        return -EINVAL;
    const char *footer = NULL;
    if (b[4] >= '2') { /* the 64-bit block after the 32-bit one, then the footer */
        const uint8_t *h = b + 44 + v1;
        if (44 + v1 + 44 > len || memcmp(h, "TZif", 4) != 0)
            return -EINVAL;
        data_tz_counts(h, c);
        if (c[3] > 100000 || c[4] == 0 || c[4] > 256 || c[5] > 100000 || c[2] > 100000)
            return -EINVAL;
        tsize = 8;
        at = 44 + v1 + 44;
        size_t end = at + data_tz_block(c, 8);
        if (end > len)
            return -EINVAL;
        if (end + 1 < len && b[end] == '\n')
            footer = (const char *)b + end + 1;
    }
    tz->n_times = c[3];
    tz->n_types = c[4];
    tz->times = malloc((tz->n_times ? tz->n_times : 1) * sizeof(int64_t));
    tz->idx = malloc(tz->n_times ? tz->n_times : 1);
    tz->utoff = malloc(tz->n_types * sizeof(int32_t));
    if (!tz->times || !tz->idx || !tz->utoff)
        return -ENOMEM;
    const uint8_t *p = b + at;
    for (size_t i = 0; i < tz->n_times; i++, p += tsize)
        tz->times[i] = tsize == 8 ? data_tz_be64(p) : (int32_t)data_tz_be32(p);
    for (size_t i = 0; i < tz->n_times; i++) {
        tz->idx[i] = *p++;
        if (tz->idx[i] >= tz->n_types)
            return -EINVAL;
    }
    for (size_t i = 0; i < tz->n_types; i++, p += 6)
        tz->utoff[i] = (int32_t)data_tz_be32(p);
    for (size_t i = 1; i < tz->n_times; i++)
        if (tz->times[i] <= tz->times[i - 1])
            return -EINVAL;
    if (footer) {
        char rule[128];
        size_t n = 0;
        while (footer + n < (const char *)b + len && footer[n] != '\n' && n + 1 < sizeof(rule))
            n++;
        memcpy(rule, footer, n);
        rule[n] = '\0';
        tz->std_off = tz->dst_off = tz->utoff[0];
        data_tz_footer(tz, rule);
    }
    if (!tz->rule)
        tz->std_off = tz->dst_off = tz->utoff[0];
    return 0;
}

void data_tz_close(struct data_tz *tz) {
    if (!tz)
        return;
    free(tz->times);
    free(tz->idx);
    free(tz->utoff);
    free(tz);
}

/* UTC itself, without a zone file (a machine without tzdata still reads --tz UTC). */
static int data_tz_utc(struct data_tz **out) {
    struct data_tz *tz = calloc(1, sizeof(*tz));
    if (!tz || !(tz->utoff = calloc(1, sizeof(*tz->utoff)))) {
        free(tz);
        return -ENOMEM;
    }
    tz->n_types = 1;
    *out = tz;
    return 0;
}

int data_tz_open(const char *name, struct data_tz **out, char *err, size_t errlen) {
    *out = NULL;
    if (!name[0] || name[0] == '/' || strstr(name, ".."))
        return errbuf_set(err, errlen, -EINVAL,
                          "--tz %s: not a zone name (an IANA name such as America/Chicago)", name);
    if (strcmp(name, "UTC") == 0 || strcmp(name, "Etc/UTC") == 0)
        return data_tz_utc(out) == 0
                   ? 0
                   : errbuf_set(err, errlen, -ENOMEM, "--tz %s: out of memory", name);
    const char *dir = getenv("TZDIR");
    dir = dir && dir[0] ? dir : "/usr/share/zoneinfo";
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f)
        return errbuf_set(err, errlen, -ENOENT,
                          "--tz %s: no such zone (looked for %s; the tzdata package installs "
                          "the zone files)",
                          name, path);
    uint8_t *buf = malloc(DATA_TZ_FILE_MAX);
    size_t len = buf ? fread(buf, 1, DATA_TZ_FILE_MAX, f) : 0;
    fclose(f);
    struct data_tz *tz = calloc(1, sizeof(*tz));
    int rc = buf && tz ? data_tz_parse(tz, buf, len) : -ENOMEM;
    free(buf);
    if (rc != 0) {
        data_tz_close(tz);
        if (rc == -ENOMEM)
            return errbuf_set(err, errlen, rc, "--tz %s: out of memory", name);
        return errbuf_set(err, errlen, rc, "--tz %s: %s is not a zone file", name, path);
    }
    *out = tz;
    return 0;
}
