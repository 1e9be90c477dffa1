/* One JSON string escape and one number format, for the writers built on snprintf and those
 * built on json-c alike. */
#include "backend/core/json_out.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The text of byte c inside a JSON string into esc (room for 7); its length. */
static size_t json_out_escape_byte(unsigned char c, char *esc) {
    if (c == '"' || c == '\\') {
        esc[0] = '\\';
        esc[1] = (char)c;
        return 2;
    }
    if (c < 0x20 || c == 0x7f) {
        static const char hex[] = "0123456789abcdef";
        memcpy(esc, "\\u00", 4);
        esc[4] = hex[c >> 4];
        esc[5] = hex[c & 15];
        return 6;
    }
    esc[0] = (char)c;
    return 1;
}

/* A cut at w must not leave the start of a UTF-8 sequence behind: back off to its lead byte
 * when the next byte continues it. Escapes are ASCII, so the bytes >= 0x80 in buf are s's. */
static size_t json_out_escape_cut(const char *buf, size_t w, unsigned char next) {
    if ((next & 0xc0) != 0x80)
        return w;
    while (w > 0 && ((unsigned char)buf[w - 1] & 0xc0) == 0x80)
        w--;
    return w > 0 && (unsigned char)buf[w - 1] >= 0xc0 ? w - 1 : w;
}

size_t json_out_escape(char *buf, size_t cap, const char *s) {
    size_t len = 0, w = 0;
    bool cut = cap == 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        char esc[8];
        size_t n = json_out_escape_byte(*p, esc);
        if (!cut && w + n < cap) {
            memcpy(buf + w, esc, n);
            w += n;
        } else if (!cut) {
            cut = true;
            w = json_out_escape_cut(buf, w, *p);
        }
        len += n;
    }
    if (cap > 0)
        buf[w] = '\0';
    return len;
}

int json_out_num(char *buf, size_t cap, double v, enum json_out_whole whole) {
    if (!isfinite(v))
        return snprintf(buf, cap, "null");
    if (fabs(v) < 1e15 && v == trunc(v)) /* 30.0, not 3e+01 */
        return snprintf(buf, cap, whole == JSON_OUT_INT ? "%.0f" : "%.1f", v);
    /* The fewest significant digits that read back: 17 always do, and a precision that reads
     * back makes every larger one read back too (printf rounds correctly), so a binary search
     * over 1..17 finds it in at most five tries rather than up to seventeen (events carry
     * doubles: this is on the recording's path). */
    char t[320]; /* room for any %g, so no compiler can doubt the precision fits */
    int lo = 1, hi = 17;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        snprintf(t, sizeof(t), "%.*g", mid, v);
        if (strtod(t, NULL) == v)
            hi = mid;
        else
            lo = mid + 1;
    }
    return snprintf(buf, cap, "%.*g", lo, v);
}

json_object *json_out_double(double v) {
    char t[JSON_OUT_NUM_MAX];
    if (!isfinite(v))
        return NULL;
    json_out_num(t, sizeof(t), v, JSON_OUT_POINT);
    return json_object_new_double_s(v, t);
}

void json_out_put_str(json_object *j, const char *key, const char *s) {
    json_object_object_add(j, key, s && s[0] ? json_object_new_string(s) : NULL);
}

void json_out_put_int(json_object *j, const char *key, int64_t v) {
    json_object_object_add(j, key, json_object_new_int64(v));
}

void json_out_put_num(json_object *j, const char *key, double v) {
    json_object_object_add(j, key, json_out_double(v));
}

void json_out_put_bool(json_object *j, const char *key, bool v) {
    json_object_object_add(j, key, json_object_new_boolean(v));
}
